package dev.csisupervisor.testing;

import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.opentest4j.TestAbortedException;

/**
 * The seed of the project's randomised tests, one for the whole JVM, so that a run can be replayed.
 *
 * <ul>
 *   <li>unset: {@link #DEFAULT}, the same in every run, CI's included;
 *   <li>{@code -Dcsi.test.seed=random}: a fresh seed, drawn once per test JVM;
 *   <li>{@code -Dcsi.test.seed=<n>}: seed {@code n} (a decimal {@code long}), to replay a run.
 * </ul>
 *
 * <p>Maven passes the property on to the test JVMs: {@code ./mvnw test -Dcsi.test.seed=random}. A test that
 * draws from the seed registers {@link OnFailure} ({@code @ExtendWith(TestSeed.OnFailure.class)}): a failure of
 * the test then carries the seed and the flag that replays it. Thread-safe (immutable).
 */
public final class TestSeed {
  /** The system property: unset, {@code random}, or a decimal {@code long}. */
  public static final String PROPERTY = "csi.test.seed";
  /** The seed of a run that sets nothing. */
  public static final long DEFAULT = 1L;

  private static final long VALUE = parse(System.getProperty(PROPERTY));

  private TestSeed() {}

  /** This JVM's seed. */
  public static long value() {
    return VALUE;
  }

  /** The seed and how to replay it, for failure messages and logs. */
  public static String describe() {
    return "seed " + VALUE + " (replay with -D" + PROPERTY + "=" + VALUE + ")";
  }

  static long parse(String property) {
    if (property == null || property.isEmpty()) {
      return DEFAULT;
    }
    if (property.trim().toLowerCase(Locale.ROOT).equals("random")) {
      return ThreadLocalRandom.current().nextLong();
    }
    try {
      return Long.parseLong(property.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(PROPERTY + " must be 'random' or a decimal long, got '" + property + "'", e);
    }
  }

  /**
   * Attaches the seed to every failure of a test (and of its {@code @BeforeEach}/{@code @AfterEach}), as a
   * suppressed exception whose message is {@link #describe()}, and prints it to standard error. Aborted tests
   * (failed assumptions) are passed on untouched.
   */
  public static final class OnFailure implements TestExecutionExceptionHandler,
      LifecycleMethodExecutionExceptionHandler {
    @Override
    public void handleTestExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
      throw withSeed(context.getUniqueId(), failure);
    }

    @Override
    public void handleBeforeEachMethodExecutionException(ExtensionContext context, Throwable failure)
        throws Throwable {
      throw withSeed(context.getUniqueId(), failure);
    }

    @Override
    public void handleAfterEachMethodExecutionException(ExtensionContext context, Throwable failure)
        throws Throwable {
      throw withSeed(context.getUniqueId(), failure);
    }

    static Throwable withSeed(String test, Throwable failure) {
      if (!(failure instanceof TestAbortedException)) {
        String note = test + " failed with " + describe();
        failure.addSuppressed(new SeedNote(note));
        System.err.println(note);
      }
      return failure;
    }
  }

  /** Carries the seed beside a failure; no stack trace of its own. */
  private static final class SeedNote extends Exception {
    private static final long serialVersionUID = 1L;

    SeedNote(String message) {
      super(message, null, false, false);
    }
  }
}
