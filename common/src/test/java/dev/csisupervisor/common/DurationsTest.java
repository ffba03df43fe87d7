package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class DurationsTest {
  @Test
  void wholeUnits_readInTheLargestUnitThatDividesThem() {
    assertEquals("30s", Durations.format(Duration.ofSeconds(30)));
    assertEquals("90s", Durations.format(Duration.ofSeconds(90)));
    assertEquals("2m", Durations.format(Duration.ofMinutes(2)));
    assertEquals("1h", Durations.format(Duration.ofHours(1)));
    assertEquals("24h", Durations.format(Duration.ofDays(1)));
  }

  @Test
  void partsOfASecond_readInMilliseconds() {
    assertEquals("500ms", Durations.format(Duration.ofMillis(500)));
    assertEquals("1500ms", Durations.format(Duration.ofMillis(1500)));
  }

  @Test
  void underAMillisecond_readsInMicroseconds_andZeroInSeconds() {
    assertEquals("250µs", Durations.format(Duration.ofNanos(250_000)));
    assertEquals("0s", Durations.format(Duration.ZERO));
  }
}
