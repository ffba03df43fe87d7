package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BoundsTest {
  @Test
  void valueInRange_isReturned() {
    assertEquals(1, Bounds.atLeast(1, 1, "n"));
    assertEquals(128, Bounds.between(128, 1, 128, "n"));
    assertEquals(Duration.ofNanos(1), Bounds.positive(Duration.ofNanos(1), "d"));
    assertEquals(Duration.ZERO, Bounds.notNegative(Duration.ZERO, "d"));
    assertEquals(5_000_000_000L, Bounds.atLeast(5_000_000_000L, 0L, "n"));
    assertEquals(1L, Bounds.positive(1L, "n"));
    assertEquals(0L, Bounds.notNegative(0L, "n"));
    assertEquals(Duration.ofSeconds(2), Bounds.notBelow(Duration.ofSeconds(2), "max", Duration.ofSeconds(2), "initial"));
  }

  @Test
  void valueOutOfRange_messageNamesFieldRangeAndValue() {
    assertMessage("maxBacklog must be >= 1, got 0", () -> Bounds.atLeast(0, 1, "maxBacklog"));
    assertMessage("batchSize must be 1 to 128, got 129", () -> Bounds.between(129, 1, 128, "batchSize"));
    assertMessage("batchSize must be 1 to 128, got 0", () -> Bounds.between(0, 1, 128, "batchSize"));
    assertMessage("gracePeriod must be positive, got PT0S", () -> Bounds.positive(Duration.ZERO, "gracePeriod"));
    assertMessage("closeTimeout must not be negative, got PT-1S",
        () -> Bounds.notNegative(Duration.ofSeconds(-1), "closeTimeout"));
    assertMessage("revision must be >= 0, got -1", () -> Bounds.atLeast(-1L, 0L, "revision"));
    assertMessage("maxInboundMessageBytes must be positive, got 0", () -> Bounds.positive(0L, "maxInboundMessageBytes"));
    assertMessage("offset must not be negative, got -1", () -> Bounds.notNegative(-1L, "offset"));
    assertMessage("maxBackoff PT1S must be >= initialBackoff PT2S",
        () -> Bounds.notBelow(Duration.ofSeconds(1), "maxBackoff", Duration.ofSeconds(2), "initialBackoff"));
  }

  @Test
  void nullDuration_isNullPointerNamingTheField() {
    assertEquals("d", assertThrows(NullPointerException.class, () -> Bounds.positive(null, "d")).getMessage());
    assertEquals("d", assertThrows(NullPointerException.class, () -> Bounds.notNegative(null, "d")).getMessage());
  }

  private static void assertMessage(String expected, Runnable call) {
    assertEquals(expected, assertThrows(IllegalArgumentException.class, call::run).getMessage());
  }
}
