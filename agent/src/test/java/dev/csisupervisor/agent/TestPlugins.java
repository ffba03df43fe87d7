package dev.csisupervisor.agent;

import dev.csisupervisor.agent.config.ProbeSettings;
import dev.csisupervisor.tasks.process.RestartPolicy;
import java.time.Duration;

/** Settings the in-JVM agent tests give their plugins, so that a test takes seconds, not minutes. */
final class TestPlugins {
  /** How long a test waits for anything that should happen. */
  static final Duration WAIT = Duration.ofSeconds(60);
  /** Probes every 200 ms with a 2 s deadline; backoff 20 ms to 200 ms. */
  static final ProbeSettings FAST = new ProbeSettings(Duration.ofSeconds(30),
      Duration.ofMillis(200), Duration.ofSeconds(2), Duration.ofMillis(20),
      Duration.ofMillis(200));
  /** Three restarts a minute, 100 ms apart. */
  static final RestartPolicy QUICK = new RestartPolicy(3, Duration.ofMinutes(1),
      Duration.ofMillis(100), RestartPolicy.Mode.DELAY);

  private TestPlugins() {}
}
