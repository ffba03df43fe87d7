package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The project's one retry rule, {@link ExponentialBackoff#doubling}. */
class ExponentialBackoffTest {

  @Test
  void doublesToTheCap_withinTwentyPercent_andResets() {
    Backoff b = ExponentialBackoff.doubling(Duration.ofMillis(100), Duration.ofMillis(800), new Random(13));
    long[] base = {100, 200, 400, 800, 800, 800};
    for (long ms : base) {
      long d = b.next().toMillis();
      assertTrue(d >= ms * 0.8 - 1 && d <= Math.min(800, ms * 1.2 + 1), d + " for " + ms + " (never above max)");
    }
    b.reset();
    long d = b.next().toMillis();
    assertTrue(d >= 79 && d <= 121, "back to the initial delay: " + d);
  }

  @Test
  void sameSeed_sameDelays() {
    Backoff a = ExponentialBackoff.doubling(Duration.ofMillis(50), Duration.ofSeconds(1), new Random(7));
    Backoff b = ExponentialBackoff.doubling(Duration.ofMillis(50), Duration.ofSeconds(1), new Random(7));
    for (int i = 0; i < 8; i++) {
      assertEquals(a.next(), b.next());
    }
  }

  @Test
  void badArguments_areNamed() {
    assertEquals("initial must be positive, got PT0S", assertThrows(IllegalArgumentException.class,
        () -> ExponentialBackoff.doubling(Duration.ZERO, Duration.ofSeconds(1), new Random(1))).getMessage());
    assertEquals("max PT1S must be >= initial PT2S", assertThrows(IllegalArgumentException.class,
        () -> ExponentialBackoff.doubling(Duration.ofSeconds(2), Duration.ofSeconds(1), new Random(1))).getMessage());
    // The constructor's own rules, for the presets to come: a factor that grows, a jitter below 1.
    assertThrows(IllegalArgumentException.class, () -> new ExponentialBackoff(
        Duration.ofMillis(1), Duration.ofSeconds(1), 0.5, 0.2, new Random(1)));
    assertThrows(IllegalArgumentException.class, () -> new ExponentialBackoff(
        Duration.ofMillis(1), Duration.ofSeconds(1), 2, 1.0, new Random(1)));
  }
}
