package dev.csisupervisor.tasks.resources;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.common.ByteSizes;
import static java.util.Objects.requireNonNull;

import dev.csisupervisor.tasks.resources.ProcReader.ProcCounters;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Samples the CPU and resident memory of the agent's launched plugins, keeps a bounded history
 * per plugin, and reports a plugin that stays over a limit.
 *
 * <p>One periodic task on the caller's scheduler samples every tracked plugin
 * ({@link #sampleAll}); there is no thread per plugin. A plugin is measured as its process tree:
 * its process and that process's descendants (a wrapper script's children count). CPU is the
 * CPU time used since the previous sample divided by the wall time between them (the first
 * sample of a process: its CPU time over its age, from {@code /proc/uptime}; none if that
 * cannot be read).
 *
 * <p><b>Limits.</b> A plugin is over a limit when a sample exceeds it; when every sample for
 * the limit's grace period has been over, its {@link BreachListener} is called once for that
 * process. A sample under the limit starts the count again.
 *
 * <p>Thread-safe. Listeners run on the sampling thread, outside any lock, and must not block.
 */
public final class ResourceMonitor {
  private static final Logger log = LoggerFactory.getLogger(ResourceMonitor.class);

  /** Which limit was exceeded. */
  public enum Resource {
    MEMORY, CPU;

    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * A plugin stayed over a limit.
   *
   * @param resource which
   * @param value    the latest sample's value (bytes or percent)
   * @param limit    the limit
   * @param over     how long it has been over
   * @param pid      the process
   */
  public record Breach(Resource resource, double value, double limit, Duration over, long pid) {
    /** What happened, for events and logs. */
    public String message() {
      return switch (resource) {
        case MEMORY -> String.format(Locale.ROOT, "memory %s over the limit of %s for %d ms",
            ByteSizes.format((long) value), ByteSizes.format((long) limit), over.toMillis());
        case CPU -> String.format(Locale.ROOT, "CPU %.1f%% over the limit of %.1f%% for %d ms",
            value, limit, over.toMillis());
      };
    }
  }

  /** Called when a plugin stayed over a limit. */
  @FunctionalInterface
  public interface BreachListener {
    void onBreach(String pluginId, Breach breach);
  }

  private final ProcReader reader;
  private final LongFunction<List<Long>> descendants;
  private final LongSupplier nanoTicker;
  private final Clock clock;
  private final int historySize;
  private final Map<String, Tracked> tracked = new ConcurrentHashMap<>();

  /**
   * @param reader      where counters are read
   * @param descendants a process's descendants' pids (for fixtures: none)
   * @param nanoTicker  monotonic time for CPU rates and grace periods
   * @param clock       sample timestamps
   * @param historySize samples kept per plugin
   */
  public ResourceMonitor(ProcReader reader, LongFunction<List<Long>> descendants,
      LongSupplier nanoTicker, Clock clock, int historySize) {
    this.reader = requireNonNull(reader, "reader");
    this.descendants = requireNonNull(descendants, "descendants");
    this.nanoTicker = requireNonNull(nanoTicker, "nanoTicker");
    this.clock = requireNonNull(clock, "clock");
    Bounds.atLeast(historySize, 1, "historySize");
    this.historySize = historySize;
  }

  /** A monitor of this system's processes. */
  public static ResourceMonitor system(Clock clock, int historySize) {
    return new ResourceMonitor(ProcReader.system(), ResourceMonitor::liveDescendants,
        System::nanoTime, clock, historySize);
  }

  private static List<Long> liveDescendants(long pid) {
    return ProcessHandle.of(pid)
        .map(h -> h.descendants().map(ProcessHandle::pid).toList())
        .orElse(List.of());
  }

  /**
   * Samples every tracked plugin every {@code interval} on {@code scheduler}.
   *
   * @return the periodic task; cancel it to stop sampling
   */
  public ScheduledFuture<?> start(ScheduledExecutorService scheduler, Duration interval) {
    long n = interval.toNanos();
    return scheduler.scheduleWithFixedDelay(this::sampleAllQuietly, n, n, TimeUnit.NANOSECONDS);
  }

  /**
   * Starts sampling a plugin. {@code pid} gives its current process, or 0 when it has none
   * (not started, restarting): then no sample is taken. Tracking an id again replaces it but
   * keeps its history.
   */
  public void track(String pluginId, LongSupplier pid, ResourceLimits limits,
      BreachListener listener) {
    requireNonNull(pluginId, "pluginId");
    requireNonNull(pid, "pid");
    requireNonNull(limits, "limits");
    requireNonNull(listener, "listener");
    tracked.compute(pluginId, (id, old) -> {
      Tracked t = new Tracked(pid, limits, listener, historySize);
      if (old != null) {
        synchronized (old) {
          t.history.addAll(old.history);
        }
      }
      return t;
    });
  }

  /** Changes a tracked plugin's limits; its over-limit count starts again. */
  public void setLimits(String pluginId, ResourceLimits limits) {
    requireNonNull(limits, "limits");
    Tracked t = tracked.get(pluginId);
    if (t != null) {
      synchronized (t) {
        t.limits = limits;
        t.memoryOver.clear();
        t.cpuOver.clear();
      }
    }
  }

  /** Stops sampling a plugin and forgets its history. */
  public void untrack(String pluginId) {
    tracked.remove(pluginId);
  }

  private void sampleAllQuietly() {
    try {
      sampleAll();
    } catch (RuntimeException e) {
      log.error("resource sampling failed", e);
    }
  }

  /** Takes one sample of every tracked plugin and calls the listeners of limit breaches. */
  public void sampleAll() {
    for (Map.Entry<String, Tracked> e : tracked.entrySet()) {
      Breach breach;
      try {
        breach = sample(e.getKey(), e.getValue());
      } catch (RuntimeException ex) {
        log.warn("plugin={}: cannot sample its resources: {}", e.getKey(), ex.getMessage());
        continue;
      }
      if (breach != null) {
        try {
          e.getValue().listener.onBreach(e.getKey(), breach);
        } catch (RuntimeException ex) {
          log.error("plugin={}: resource limit listener threw", e.getKey(), ex);
        }
      }
    }
  }

  private Breach sample(String id, Tracked t) {
    long pid = t.pid.getAsLong();
    synchronized (t) {
      if (pid <= 0) {
        t.reset(0);
        return null;
      }
      Optional<ProcCounters> main = reader.read(pid);
      if (main.isEmpty()) {
        t.reset(0);
        return null;
      }
      long ticks = main.get().cpuTicks();
      long rss = main.get().rssBytes();
      for (long child : descendants.apply(pid)) {
        Optional<ProcCounters> c = reader.read(child);
        if (c.isPresent()) {
          ticks += c.get().cpuTicks();
          rss += c.get().rssBytes();
        }
      }
      long now = nanoTicker.getAsLong();
      boolean sameProcess = t.pid0 == pid && t.start0 == main.get().startTicks();
      double cpu = Double.NaN;
      if (sameProcess && now > t.nanos0) {
        // A child that exited takes its ticks with it: never report a negative rate.
        long dt = Math.max(0, ticks - t.ticks0);
        cpu = dt * 1e9 / reader.ticksPerSecond() / (now - t.nanos0) * 100.0;
      } else if (!sameProcess) {
        t.reset(pid);
        t.start0 = main.get().startTicks();
        // No previous sample: the average since the process started (its CPU ticks over its
        // age, both on the kernel's clock), rather than no figure at all.
        var uptime = reader.uptimeSeconds();
        if (uptime.isPresent()) {
          double age = uptime.getAsDouble()
              - (double) main.get().startTicks() / reader.ticksPerSecond();
          if (age > 0) {
            cpu = (double) ticks / reader.ticksPerSecond() / age * 100.0;
          }
        }
      }
      // A first sample's average does not start a limit's grace in the past.
      long previous = sameProcess ? t.nanos0 : now;
      t.ticks0 = ticks;
      t.nanos0 = now;
      ResourceSample s = new ResourceSample(clock.instant(), pid, cpu, rss);
      if (t.history.size() == historySize) {
        t.history.removeFirst();
      }
      t.history.addLast(s);
      return checkLimits(t, s, now, previous);
    }
  }

  /** {@code previous}: when the previous sample was taken (the start of the CPU interval). */
  private Breach checkLimits(Tracked t, ResourceSample s, long now, long previous) {
    ResourceLimits l = t.limits;
    if (!l.any() || t.breachedPid == s.pid()) {
      return null; // no limits, or already reported for this process: its restart is under way
    }
    long graceNanos = l.grace().toNanos();
    Duration memoryOver = t.memoryOver.check(
        l.maxMemoryBytes() > 0 && s.memoryBytes() > l.maxMemoryBytes(), now, now, graceNanos);
    if (memoryOver != null) {
      t.breachedPid = s.pid();
      return new Breach(Resource.MEMORY, s.memoryBytes(), l.maxMemoryBytes(), memoryOver, s.pid());
    }
    if (l.maxCpuPercent() > 0 && s.cpuKnown()) {
      // Over since the previous sample: the rate is measured over that interval.
      Duration cpuOver = t.cpuOver.check(s.cpuPercent() > l.maxCpuPercent(), previous, now,
          graceNanos);
      if (cpuOver != null) {
        t.breachedPid = s.pid();
        return new Breach(Resource.CPU, s.cpuPercent(), l.maxCpuPercent(), cpuOver, s.pid());
      }
    }
    return null;
  }

  /** The latest sample of a plugin, if it has one. */
  public Optional<ResourceSample> latest(String pluginId) {
    Tracked t = tracked.get(pluginId);
    if (t == null) {
      return Optional.empty();
    }
    synchronized (t) {
      return Optional.ofNullable(t.history.peekLast());
    }
  }

  /** A plugin's samples, oldest first (at most the history size). */
  public List<ResourceSample> history(String pluginId) {
    Tracked t = tracked.get(pluginId);
    if (t == null) {
      return List.of();
    }
    synchronized (t) {
      return new ArrayList<>(t.history);
    }
  }

  /**
   * The latest sample of every tracked plugin whose process is running now (a plugin between
   * processes has none).
   */
  public Map<String, ResourceSample> current() {
    Map<String, ResourceSample> out = new LinkedHashMap<>();
    for (Map.Entry<String, Tracked> e : tracked.entrySet()) {
      synchronized (e.getValue()) {
        ResourceSample s = e.getValue().history.peekLast();
        if (s != null && e.getValue().pid0 == s.pid()) {
          out.put(e.getKey(), s);
        }
      }
    }
    return out;
  }


  /** One plugin's sampling state; guarded by its own monitor. */
  private static final class Tracked {
    final LongSupplier pid;
    final BreachListener listener;
    final ArrayDeque<ResourceSample> history;
    ResourceLimits limits;
    long pid0;
    long start0 = -1;
    long ticks0;
    long nanos0;
    final OverLimit memoryOver = new OverLimit();
    final OverLimit cpuOver = new OverLimit();
    long breachedPid;

    Tracked(LongSupplier pid, ResourceLimits limits, BreachListener listener, int historySize) {
      this.pid = pid;
      this.limits = limits;
      this.listener = listener;
      this.history = new ArrayDeque<>(Math.min(historySize, 1024));
    }

    /** A new process (or none): no CPU baseline, no over-limit time. */
    void reset(long pid) {
      pid0 = pid;
      start0 = -1;
      memoryOver.clear();
      cpuOver.clear();
    }
  }

  /** Since when (ticker nanos) one resource has been over its limit; guarded by its Tracked. */
  private static final class OverLimit {
    private long since = -1;

    /**
     * Notes whether the resource is {@code over} its limit at {@code now}; if it has just gone
     * over, it counts as over from {@code from}. Returns how long it has been over once that is at
     * least {@code graceNanos}, else null.
     */
    Duration check(boolean over, long from, long now, long graceNanos) {
      if (!over) {
        since = -1;
        return null;
      }
      if (since < 0) {
        since = from;
      }
      return now - since >= graceNanos ? Duration.ofNanos(now - since) : null;
    }

    void clear() {
      since = -1;
    }
  }
}
