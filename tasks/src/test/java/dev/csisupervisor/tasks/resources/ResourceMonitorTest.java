package dev.csisupervisor.tasks.resources;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Sampling, history and limits over fixture /proc files and a fake ticker; then a real child. */
class ResourceMonitorTest {
  private static final long SECOND = 1_000_000_000L;
  private static final Clock CLOCK = Clock.fixed(Instant.parse("2026-01-01T00:00:00Z"),
      ZoneOffset.UTC);

  @TempDir Path proc;
  private final AtomicLong now = new AtomicLong(5 * SECOND);
  private final List<Long> children = new ArrayList<>();
  private final List<ResourceMonitor.Breach> breaches = new ArrayList<>();

  private ResourceMonitor monitor(int history) {
    return new ResourceMonitor(new ProcReader(proc, 100, 4096), pid -> List.copyOf(children),
        now::get, CLOCK, history);
  }

  /** Writes pid's counters: cpu ticks (utime only) and RSS in KiB; start time fixed by pid. */
  private void counters(long pid, long ticks, long rssKib) throws IOException {
    ProcReaderTest.fixture(proc, pid, pid + " (plugin) S 1 1 1 0 -1 0 0 0 0 0 " + ticks
        + " 0 0 0 20 0 1 0 " + (1000 + pid) + " 0 1 0\n", "VmRSS:\t" + rssKib + " kB\n");
  }

  private void tick(long nanos) {
    now.addAndGet(nanos);
  }

  @Test
  void firstSample_isTheAverageSinceTheProcessStarted() throws Exception {
    ResourceMonitor m = monitor(10);
    m.track("p", () -> 100, ResourceLimits.NONE, (id, b) -> breaches.add(b));
    // Started at tick 1100 (11 s after boot), 31 s after boot now: 20 s old, 500 ticks (5 s).
    counters(100, 500, 2048);
    Files.writeString(proc.resolve("uptime"), "31.00 50.00\n");
    m.sampleAll();
    ResourceSample first = m.latest("p").orElseThrow();
    assertTrue(first.cpuKnown(), "not -1: " + first);
    assertEquals(25.0, first.cpuPercent(), 1e-9);
  }

  @Test
  void cpu_isTicksOverWallTime_firstSampleHasNoneWithoutUptime() throws Exception {
    ResourceMonitor m = monitor(10);
    AtomicLong pid = new AtomicLong(100);
    m.track("p", pid::get, ResourceLimits.NONE, (id, b) -> breaches.add(b));
    counters(100, 1000, 2048);
    m.sampleAll();
    ResourceSample first = m.latest("p").orElseThrow();
    assertFalse(first.cpuKnown(), "no rate from one sample");
    assertEquals(2048L * 1024, first.memoryBytes());
    assertEquals(100, first.pid());
    assertEquals(CLOCK.instant(), first.time());

    counters(100, 1050, 4096); // 50 ticks = 0.5 s of CPU in 1 s
    tick(SECOND);
    m.sampleAll();
    assertEquals(50.0, m.latest("p").orElseThrow().cpuPercent(), 1e-9);
    counters(100, 1250, 4096); // two cores for one second
    tick(SECOND);
    m.sampleAll();
    assertEquals(200.0, m.latest("p").orElseThrow().cpuPercent(), 1e-9);
    assertEquals(3, m.history("p").size());
    assertTrue(m.current().containsKey("p"));
  }

  @Test
  void processTree_isSummed() throws Exception {
    ResourceMonitor m = monitor(10);
    m.track("p", () -> 100, ResourceLimits.NONE, (id, b) -> { });
    children.add(101L);
    counters(100, 0, 1000);
    counters(101, 0, 500);
    m.sampleAll();
    counters(100, 10, 1000);
    counters(101, 30, 500);
    tick(SECOND);
    m.sampleAll();
    ResourceSample s = m.latest("p").orElseThrow();
    assertEquals(1500L * 1024, s.memoryBytes());
    assertEquals(40.0, s.cpuPercent(), 1e-9);
    // A child that exits takes its ticks along: never a negative rate.
    children.clear();
    tick(SECOND);
    m.sampleAll();
    assertEquals(0.0, m.latest("p").orElseThrow().cpuPercent(), 1e-9);
  }

  @Test
  void history_isBounded_oldestDropped() throws Exception {
    ResourceMonitor m = monitor(3);
    m.track("p", () -> 100, ResourceLimits.NONE, (id, b) -> { });
    for (int i = 1; i <= 5; i++) {
      counters(100, 0, i);
      m.sampleAll();
      tick(SECOND);
    }
    List<ResourceSample> h = m.history("p");
    assertEquals(3, h.size());
    assertEquals(List.of(3L * 1024, 4L * 1024, 5L * 1024),
        h.stream().map(ResourceSample::memoryBytes).toList());
  }

  @Test
  void noProcess_noSample_andNewPidStartsAFreshRate() throws Exception {
    ResourceMonitor m = monitor(10);
    AtomicLong pid = new AtomicLong(0);
    m.track("p", pid::get, ResourceLimits.NONE, (id, b) -> { });
    m.sampleAll();
    assertTrue(m.latest("p").isEmpty(), "not started: nothing sampled");
    pid.set(100);
    counters(100, 500, 100);
    m.sampleAll();
    pid.set(200); // restarted: another process
    counters(200, 10, 100);
    tick(SECOND);
    m.sampleAll();
    assertFalse(m.latest("p").orElseThrow().cpuKnown(), "not a rate across two processes");
    pid.set(300); // gone before it could be read
    tick(SECOND);
    m.sampleAll();
    assertFalse(m.current().containsKey("p"), "no current sample without a process");
    assertEquals(2, m.history("p").size(), "the history stays");
    m.untrack("p");
    assertTrue(m.history("p").isEmpty());
  }

  @Test
  void memoryOverLimitForTheGrace_isReportedOncePerProcess() throws Exception {
    ResourceMonitor m = monitor(10);
    AtomicLong pid = new AtomicLong(100);
    m.track("p", pid::get, new ResourceLimits(1024 * 1024, 0, Duration.ofSeconds(2)),
        (id, b) -> breaches.add(b));
    counters(100, 0, 2048); // 2 MiB, over 1 MiB
    m.sampleAll();
    tick(SECOND);
    m.sampleAll();
    assertTrue(breaches.isEmpty(), "over for 1 s of a 2 s grace");
    counters(100, 0, 512); // back under: the count starts again
    tick(SECOND);
    m.sampleAll();
    counters(100, 0, 4096);
    tick(SECOND);
    m.sampleAll();
    tick(SECOND);
    m.sampleAll();
    assertTrue(breaches.isEmpty(), "over for 1 s since it came back");
    tick(SECOND);
    m.sampleAll();
    assertEquals(1, breaches.size());
    ResourceMonitor.Breach b = breaches.get(0);
    assertEquals(ResourceMonitor.Resource.MEMORY, b.resource());
    assertEquals(100, b.pid());
    assertEquals(Duration.ofSeconds(2), b.over());
    assertEquals("memory 4.0 MiB over the limit of 1.0 MiB for 2000 ms", b.message());
    tick(SECOND);
    m.sampleAll();
    assertEquals(1, breaches.size(), "reported once: the restart is under way");
    pid.set(200);
    counters(200, 0, 4096);
    m.sampleAll();
    tick(2 * SECOND);
    m.sampleAll();
    assertEquals(2, breaches.size(), "the new process is watched again");
    assertEquals(200, breaches.get(1).pid());
  }

  @Test
  void cpuOverLimit_countsFromThePreviousSample() throws Exception {
    ResourceMonitor m = monitor(10);
    m.track("p", () -> 100, new ResourceLimits(0, 50, Duration.ofSeconds(2)),
        (id, b) -> breaches.add(b));
    counters(100, 0, 1);
    m.sampleAll();
    counters(100, 90, 1); // 90% over the first second
    tick(SECOND);
    m.sampleAll();
    assertTrue(breaches.isEmpty());
    counters(100, 180, 1);
    tick(SECOND);
    m.sampleAll();
    assertEquals(1, breaches.size(), "busy for 2 s: the whole grace");
    assertEquals(ResourceMonitor.Resource.CPU, breaches.get(0).resource());
    assertEquals("CPU 90.0% over the limit of 50.0% for 2000 ms", breaches.get(0).message());
  }

  @Test
  void zeroGrace_reportsTheFirstSampleOver_andNewLimitsApply() throws Exception {
    ResourceMonitor m = monitor(10);
    m.track("p", () -> 100, ResourceLimits.NONE, (id, b) -> breaches.add(b));
    counters(100, 0, 4096);
    m.sampleAll();
    assertTrue(breaches.isEmpty(), "no limits");
    m.setLimits("p", new ResourceLimits(1024, 0, Duration.ZERO));
    tick(SECOND);
    m.sampleAll();
    assertEquals(1, breaches.size());
  }

  @Test
  void throwingListener_doesNotStopSampling() throws Exception {
    ResourceMonitor m = monitor(10);
    m.track("a", () -> 100, new ResourceLimits(1, 0, Duration.ZERO), (id, b) -> {
      throw new IllegalStateException("boom");
    });
    m.track("b", () -> 200, ResourceLimits.NONE, (id, b) -> { });
    counters(100, 0, 10);
    counters(200, 0, 10);
    m.sampleAll();
    assertTrue(m.latest("b").isPresent());
  }

  @Test
  void realChild_busyLoopIsSampled() throws Exception {
    Process busy = new ProcessBuilder("sh", "-c", "while :; do :; done").start();
    ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor();
    try {
      ResourceMonitor m = ResourceMonitor.system(Clock.systemUTC(), 100);
      m.track("busy", busy::pid, ResourceLimits.NONE, (id, b) -> { });
      ScheduledFuture<?> task = m.start(s, Duration.ofMillis(100));
      await().atMost(Duration.ofSeconds(20)).until(() -> m.latest("busy")
          .filter(ResourceSample::cpuKnown).map(x -> x.cpuPercent() > 30).orElse(false));
      ResourceSample last = m.latest("busy").orElseThrow();
      assertEquals(busy.pid(), last.pid());
      assertTrue(last.memoryBytes() > 0, last.toString());
      task.cancel(false);
    } finally {
      busy.destroyForcibly();
      s.shutdownNow();
    }
  }
}
