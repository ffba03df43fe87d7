package dev.csisupervisor.mockplugin;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/** A nanosecond ticker that moves only when told to. */
final class FakeTicker implements LongSupplier {
  // Start far from zero so code that wrongly treats 0 as "unset" or compares raw values shows up.
  private final AtomicLong nanos = new AtomicLong(Long.MAX_VALUE - Duration.ofSeconds(30).toNanos());

  @Override
  public long getAsLong() {
    return nanos.get();
  }

  void advance(Duration d) {
    nanos.addAndGet(d.toNanos());
  }
}
