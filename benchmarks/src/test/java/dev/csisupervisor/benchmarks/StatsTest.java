package dev.csisupervisor.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The percentile arithmetic every harness result rests on. Benchmarks themselves never run in the build. */
class StatsTest {

  @Test
  void percentiles_areNearestRank_overUnsortedInput() {
    long[] samples = new long[100];
    for (int i = 0; i < 100; i++) {
      samples[i] = 100 - i; // 100, 99, ..., 1
    }
    Stats s = new Stats(samples);
    assertEquals(50, s.p50());
    assertEquals(99, s.p99());
    assertEquals(1, s.min());
    assertEquals(100, s.max());
    assertEquals(100, s.percentile(100));
  }

  @Test
  void countAtLeast_includesEqualSamples() {
    Stats s = new Stats(new long[] {5, 1, 5, 9, 3});
    assertEquals(3, s.countAtLeast(5));
    assertEquals(1, s.countAtLeast(6));
    assertEquals(5, s.countAtLeast(0));
    assertEquals(0, s.countAtLeast(10));
  }

  @Test
  void singleSample_isEveryPercentile() {
    Stats s = new Stats(new long[] {7});
    assertEquals(7, s.p50());
    assertEquals(7, s.p99());
  }

  @Test
  void of_usesOnlyTheFirstCountSamples() {
    Stats s = Stats.of(new long[] {5, 1, 1_000_000}, 2);
    assertEquals(2, s.count());
    assertEquals(5, s.max());
  }

  @Test
  void samplesAreCopied_laterChangesDoNotShow() {
    long[] samples = {3, 1, 2};
    Stats s = new Stats(samples);
    samples[0] = 1_000;
    assertEquals(3, s.max());
  }

  @Test
  void badInput_isRejectedNamingTheField() {
    IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> new Stats(new long[0]));
    assertEquals("nanos must not be empty", empty.getMessage());
    Stats s = new Stats(new long[] {1});
    assertThrows(IllegalArgumentException.class, () -> s.percentile(0));
    assertThrows(IllegalArgumentException.class, () -> s.percentile(100.5));
  }

  @Test
  void formatting_usesMillisAndMicros() {
    assertEquals("1.50", Stats.ms(1_500_000));
    assertEquals("2.5", Stats.us(2_500));
  }
}
