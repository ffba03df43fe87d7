package dev.csisupervisor.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The root pom gives every test of every module a default timeout (surefire's JUnit configuration parameters), so
 * that no test of the suite can hang: this module's tests run with it as every other module's do.
 */
class SuiteTimeoutTest {
  private String timeoutDefault;

  @RegisterExtension
  final BeforeEachCallback readConfiguration = context ->
      timeoutDefault = context.getConfigurationParameter("junit.jupiter.execution.timeout.default").orElse(null);

  @Test
  void everyTest_hasTheSuitesDefaultTimeout() {
    assertEquals("3 m", timeoutDefault == null ? null : timeoutDefault.trim(),
        "junit.jupiter.execution.timeout.default, from the root pom's surefire configuration");
  }
}
