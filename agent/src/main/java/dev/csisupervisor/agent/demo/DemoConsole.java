package dev.csisupervisor.agent.demo;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * What the demo prints, stamped with the seconds since it began, and how it waits for what real
 * processes make true: {@link #await} re-checks its condition whenever {@link #signal} says an
 * event arrived, and at least every 100 ms.
 *
 * <p>Thread-safe. Lines that must not interleave are printed under {@link #lock()}; the demo
 * holds the same lock while it records an event, so an event and its line go together.
 */
final class DemoConsole {
  /** How long each wait may take before the demo reports what did not happen. */
  private static final Duration STEP_TIMEOUT = Duration.ofSeconds(60);

  private final PrintWriter out;
  private final long t0 = System.nanoTime();
  private final Object lock = new Object(); // guards output (and the demo's recorded events)
  private final Object signal = new Object(); // wakes await() on every event
  private long version; // guarded by signal

  DemoConsole(PrintWriter out) {
    this.out = out;
  }

  PrintWriter out() {
    return out;
  }

  /** The lock that keeps lines (and the demo's recorded events) together. */
  Object lock() {
    return lock;
  }

  /** A blank line, then {@code line} stamped. */
  void section(String line) {
    synchronized (lock) {
      out.println();
      out.println(stamp() + line);
      out.flush();
    }
  }

  /**
   * Waits for a condition that real processes make true; re-checked whenever an agent or registry
   * event arrives (and at least every 100 ms).
   *
   * @return false, having printed what it waited for, if it is not true in time
   */
  boolean await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
    while (true) {
      long seen;
      synchronized (signal) {
        seen = version;
      }
      // Evaluated outside every demo lock: it calls into the agent, whose threads call us.
      if (condition.getAsBoolean()) {
        return true;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        synchronized (lock) {
          out.println(stamp() + "demo: timed out after " + STEP_TIMEOUT.toSeconds()
              + "s waiting for: " + what);
        }
        return false;
      }
      synchronized (signal) {
        if (version == seen) {
          signal.wait(Math.max(1, Math.min(100, TimeUnit.NANOSECONDS.toMillis(left))));
        }
      }
    }
  }

  /** An event arrived: conditions being awaited are checked again. */
  void signal() {
    synchronized (signal) {
      version++;
      signal.notifyAll();
    }
  }

  /** {@code [ 12.3s] }: the seconds since the demo began. */
  String stamp() {
    double s = (System.nanoTime() - t0) / 1e9;
    return String.format("[%5.1fs] ", s);
  }
}
