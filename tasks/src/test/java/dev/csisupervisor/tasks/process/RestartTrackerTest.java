package dev.csisupervisor.tasks.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.tasks.process.RestartTracker.Decision;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class RestartTrackerTest {
  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private static RestartPolicy policy(int attempts, RestartPolicy.Mode mode) {
    return new RestartPolicy(attempts, Duration.ofMinutes(1), Duration.ofSeconds(2), mode);
  }

  @Test
  void withinAttempts_restartsAfterDelay() {
    RestartTracker t = new RestartTracker(policy(2, RestartPolicy.Mode.FAIL));
    Decision.Restart first = assertInstanceOf(Decision.Restart.class, t.onExit(T0));
    assertEquals(Duration.ofSeconds(2), first.delay());
    assertEquals(1, first.attempt());
    Decision.Restart second = assertInstanceOf(Decision.Restart.class,
        t.onExit(T0.plusSeconds(5)));
    assertEquals(2, second.attempt());
    assertEquals(2, t.totalRestarts());
  }

  @Test
  void failMode_givesUpWhenAttemptsUsedUp() {
    RestartTracker t = new RestartTracker(policy(2, RestartPolicy.Mode.FAIL));
    t.onExit(T0);
    t.onExit(T0.plusSeconds(5));
    Decision.GiveUp d = assertInstanceOf(Decision.GiveUp.class, t.onExit(T0.plusSeconds(10)));
    assertTrue(d.reason().contains("exceeded 2 restart attempt(s)"), d.reason());
  }

  @Test
  void delayMode_waitsForIntervalEnd_thenCountsAgain() {
    RestartTracker t = new RestartTracker(policy(2, RestartPolicy.Mode.DELAY));
    t.onExit(T0);
    t.onExit(T0.plusSeconds(5));
    Decision.Restart waited = assertInstanceOf(Decision.Restart.class,
        t.onExit(T0.plusSeconds(10)));
    assertEquals(Duration.ofSeconds(50), waited.delay(), "until the minute started at T0 ends");
    assertTrue(waited.waitedForInterval());
    // The restart after the wait opened a new interval with one attempt used.
    Decision.Restart next = assertInstanceOf(Decision.Restart.class,
        t.onExit(T0.plusSeconds(65)));
    assertEquals(2, next.attempt());
    assertEquals(Duration.ofSeconds(2), next.delay());
  }

  @Test
  void exitAfterIntervalEnd_resetsCount() {
    RestartTracker t = new RestartTracker(policy(1, RestartPolicy.Mode.FAIL));
    assertInstanceOf(Decision.Restart.class, t.onExit(T0));
    assertInstanceOf(Decision.Restart.class, t.onExit(T0.plus(Duration.ofMinutes(2))));
    assertInstanceOf(Decision.GiveUp.class, t.onExit(T0.plus(Duration.ofMinutes(2))
        .plusSeconds(1)));
  }

  @Test
  void zeroAttemptsFail_neverRestarts() {
    RestartTracker t = new RestartTracker(new RestartPolicy(0, Duration.ofMinutes(1),
        Duration.ZERO, RestartPolicy.Mode.FAIL));
    assertInstanceOf(Decision.GiveUp.class, t.onExit(T0));
  }
}
