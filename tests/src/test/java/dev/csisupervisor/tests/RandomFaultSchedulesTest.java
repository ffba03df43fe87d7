package dev.csisupervisor.tests;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.testing.TestSeed;
import dev.csisupervisor.tests.FaultSchedule.Ending;
import dev.csisupervisor.tests.FaultSchedule.Fault;
import dev.csisupervisor.tests.FaultSchedule.PluginSpec;
import dev.csisupervisor.tests.FaultSchedule.Step;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * 500 random fault schedules ({@link FaultSchedule}), each a few plugins under real supervision going through a
 * sequence of faults — crash, graceful stop, restart, hung probes, failing probes, not ready, flapping, slow answers,
 * a new version, a non-CSI server on the socket — and ending healthy (possibly with a new version) or down. Twelve
 * schedules run at once on one registry and one supervisor (2-thread scheduler), as plugins of one node would.
 *
 * <p>Between steps the schedule waits until the supervisor has probed the plugin again (or, with nothing listening,
 * has noticed): a supervisor that stops probing a plugin fails the schedule as stuck. After each schedule:
 * <ul>
 *   <li>every plugin that ends healthy is registered for every type of its kind, healthy, with its last version
 *       (fingerprint included), and its hook says REGISTERED and healthy;
 *   <li>every plugin that ends down is unregistered or registered as unhealthy, and its hook says unhealthy;
 *   <li>stop() of every hook returns and leaves nothing registered (within {@link FaultHarness#STOP_HANG_GUARD}:
 *       a guard against a hang, no speed claim; that stop() waits for no call in flight is PluginFaultsTest's);
 *   <li>per key the registry events are REGISTERED, UPDATED..., DEREGISTERED, nothing after; per type the sequence
 *       is gapless and each subscriber's view matches (checked by {@link RegistryView}); once registered, the
 *       hook's health task events alternate and it never asks for a restart.
 * </ul>
 *
 * <p>The master seed is fixed unless {@code -Dcsi.test.seed=random} ({@link TestSeed}); a failure prints it, and
 * {@code -Dcsi.test.seed=N} regenerates the same schedules,
 * {@code -Dfaults.only=I} runs schedule I alone, {@code -Dfaults.schedules=N} and {@code -Dfaults.parallel=N} change
 * how many run and how many at once. (The interleaving with the supervisor's timers is up to the machine.)
 */
@ExtendWith(TestSeed.OnFailure.class)
class RandomFaultSchedulesTest {
  private static final Duration STEP_WAIT = Duration.ofSeconds(10);
  private static final Duration END_WAIT = Duration.ofSeconds(20);

  private final Map<Fault, AtomicLong> stepsRun = new ConcurrentHashMap<>();
  private final AtomicLong maxStopMillis = new AtomicLong();
  private final AtomicLong maxConvergeMillis = new AtomicLong();
  private final AtomicLong unhealthyEvents = new AtomicLong();
  private final AtomicLong registryUpdates = new AtomicLong();

  @Test
  @Timeout(value = 300, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void randomFaultSchedules_endStatesRegistryEventsAndStopHold() throws Exception {
    long seed = TestSeed.value();
    int count = Integer.getInteger("faults.schedules", 500);
    int parallel = Integer.getInteger("faults.parallel", 12);
    Integer only = Integer.getInteger("faults.only");
    System.out.println("fault schedules: master " + TestSeed.describe());

    List<FaultSchedule> schedules = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      if (only == null || only == i) {
        schedules.add(FaultSchedule.generate(seed, i));
      }
    }
    long t0 = System.nanoTime();
    List<String> failures = new CopyOnWriteArrayList<>();
    try (FaultHarness h = new FaultHarness(seed)) {
      ExecutorService pool = Executors.newFixedThreadPool(parallel);
      try {
        List<Future<?>> futures = new ArrayList<>();
        for (FaultSchedule s : schedules) {
          futures.add(pool.submit(() -> {
            if (failures.size() >= 3) {
              return; // enough to go on: do not spend the time budget on a broken build
            }
            try {
              run(h, s);
            } catch (Throwable e) {
              failures.add(s + "\n  failed: " + e + "\n  rerun: -D" + TestSeed.PROPERTY + "=" + seed
                  + " -Dfaults.only=" + s.index());
            }
          }));
        }
        for (Future<?> f : futures) {
          f.get();
        }
      } finally {
        pool.shutdownNow();
        pool.awaitTermination(30, TimeUnit.SECONDS);
      }
      assertEquals(List.of(), failures, failures.size() + " schedule(s) failed, master seed " + seed);
      for (PluginType t : PluginType.values()) {
        assertEquals(List.of(), h.registry.listAll(t), "every schedule stopped its hooks");
      }
      // The views hear of the last changes on their own delivery, after the registry has them.
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> h.viewProblems().isEmpty());
      assertEquals(List.of(), h.viewProblems(), "registry event contract, master seed " + seed);
    }
    long millis = (System.nanoTime() - t0) / 1_000_000;
    if (schedules.size() >= 50) {
      // The faults must have reached the supervisor, not just been scheduled.
      assertTrue(unhealthyEvents.get() >= schedules.size() / 5, "too few unhealthy transitions: " + unhealthyEvents);
      assertTrue(registryUpdates.get() >= schedules.size() / 5, "too few registry updates: " + registryUpdates);
    }
    Map<Fault, Long> steps = new EnumMap<>(Fault.class);
    stepsRun.forEach((f, n) -> steps.put(f, n.get()));
    System.out.printf("fault schedules: %d schedules (%d at once) in %d ms; steps run %s; %d unhealthy task events,"
        + " %d registry updates; slowest stop %d ms, slowest convergence at the end %d ms%n", schedules.size(), parallel,
        millis, steps, unhealthyEvents.get(), registryUpdates.get(), maxStopMillis.get(), maxConvergeMillis.get());
  }

  /** The world of one plugin: what is listening on its socket now, and the version it would report. */
  private static final class World {
    final PluginSpec spec;
    final FaultHarness.Supervised s;
    MockCsiPlugin mock;
    NonCsiServer nonCsi;
    String version = "1.0";
    int versions = 1;

    World(PluginSpec spec, FaultHarness.Supervised s) {
      this.spec = spec;
      this.s = s;
    }

    boolean mockRunning() {
      return mock != null && mock.isRunning();
    }

    /** Stops the non-CSI server on the socket, if one is there. */
    void closeNonCsi() throws IOException {
      if (nonCsi != null) {
        nonCsi.close();
        nonCsi = null;
      }
    }
  }

  private void run(FaultHarness h, FaultSchedule schedule) throws Exception {
    List<World> worlds = new ArrayList<>();
    try {
      for (PluginSpec spec : schedule.plugins()) {
        World w = new World(spec, h.supervise("alloc-s" + schedule.index(),
            FaultHarness.config(spec.id(), spec.kind()).build()));
        worlds.add(w);
        switch (spec.start()) {
          case READY -> startMock(h, w);
          case READY_AFTER -> {
            startMock(h, w);
            w.mock.readyAfter(Duration.ofMillis(spec.readyAfterMillis()));
          }
          case NEVER_READY -> {
            startMock(h, w);
            w.mock.setReady(false);
          }
          case ABSENT -> { }
        }
        w.s.hook.poststart(PoststartRequest.of());
      }
      for (Step step : schedule.steps()) {
        World w = worlds.get(step.plugin());
        apply(h, w, step);
        stepsRun.computeIfAbsent(step.fault(), f -> new AtomicLong()).incrementAndGet();
        observe(w, step.observe(), schedule + ", after step " + step);
      }

      // The end: each plugin healthy (maybe a new build) or down; then the registry must say so.
      long t0 = System.nanoTime();
      for (int i = 0; i < worlds.size(); i++) {
        end(h, worlds.get(i), schedule.endings().get(i));
      }
      for (int i = 0; i < worlds.size(); i++) {
        World w = worlds.get(i);
        Ending e = schedule.endings().get(i);
        if (e.healthy()) {
          awaitOrFail(() -> h.registeredHealthy(w.s, w.version), END_WAIT,
              () -> w.s + " should be registered healthy with version " + w.version + ", registry has "
                  + h.registrations(w.s));
        } else {
          awaitOrFail(() -> h.notHealthy(w.s), END_WAIT,
              () -> w.s + " is down (" + e + ") but the registry has " + h.registrations(w.s));
        }
      }
      maxConvergeMillis.accumulateAndGet((System.nanoTime() - t0) / 1_000_000, Math::max);

      // stop() returns (see FaultHarness.STOP_HANG_GUARD) and deregisters everything.
      for (World w : worlds) {
        long millis = h.stop(w.s);
        maxStopMillis.accumulateAndGet(millis, Math::max);
        if (millis > FaultHarness.STOP_HANG_GUARD.toMillis()) {
          throw new AssertionError(w.s + ": stop() took " + millis + " ms");
        }
        assertEquals(List.of(), h.registrations(w.s), w.s + ": still registered after stop()");
        assertEquals(List.of(), h.checkStoppedHistory(w.s));
        assertEquals(List.of(), FaultHarness.checkHealthAlternation(w.s));
        unhealthyEvents.addAndGet(w.s.count(dev.csisupervisor.supervisor.TaskEvent.PLUGIN_UNHEALTHY));
        for (PluginType t : FaultHarness.types(w.spec.kind())) {
          registryUpdates.addAndGet(h.events(w.s, t).stream()
              .filter(ev -> ev.kind() == dev.csisupervisor.registry.PluginEvent.Kind.UPDATED).count());
        }
      }
    } finally {
      for (World w : worlds) {
        w.s.hook.stop(dev.csisupervisor.supervisor.StopRequest.because("schedule over"));
        if (w.mock != null) {
          w.mock.close();
        }
        if (w.nonCsi != null) {
          w.nonCsi.close();
        }
      }
    }
  }

  private static void startMock(FaultHarness h, World w) throws IOException {
    w.closeNonCsi();
    if (w.mock != null) {
      w.mock.close(); // a no-op after a crash: the stale socket stays, and start() below replaces it
    }
    w.mock = h.plugin(w.s.socket(), w.spec.kind(), w.version).start();
  }

  private static void apply(FaultHarness h, World w, Step step) throws IOException {
    MockCsiPlugin m = w.mockRunning() ? w.mock : null;
    switch (step.fault()) {
      case CRASH -> { if (m != null) m.crash(); }
      case STOP -> { if (m != null) m.stop(); }
      case START -> { if (m == null) startMock(h, w); }
      case HANG -> { if (m != null) m.hangProbes(true); }
      case UNHANG -> { if (m != null) m.hangProbes(false); }
      case FAIL_PROBES -> { if (m != null) m.failProbes(Status.Code.UNAVAILABLE, "injected failure"); }
      case CLEAR_FAILURE -> { if (m != null) m.clearProbeFailure(); }
      case NOT_READY -> { if (m != null) m.setReady(false); }
      case READY -> { if (m != null) m.setReady(true); }
      case FLAP -> { if (m != null) m.flap(Duration.ofMillis(step.arg())); }
      case STOP_FLAPPING -> { if (m != null) m.stopFlapping(); }
      case SLOW -> { if (m != null) m.setLatency(Duration.ofMillis(step.arg())); }
      case FAST -> { if (m != null) m.setLatency(Duration.ZERO); }
      case NEW_VERSION -> {
        // A new build is a new process: the running one is replaced (the supervisor's steady
        // loop sends only Probe; a replaced process is what makes it fingerprint again).
        w.version = "1." + w.versions++;
        if (m != null) {
          m.stop();
          startMock(h, w);
        }
      }
      case NON_CSI -> replaceByNonCsi(w);
    }
  }

  private static void replaceByNonCsi(World w) throws IOException {
    if (w.nonCsi != null) {
      return;
    }
    if (w.mockRunning()) {
      w.mock.crash();
    }
    Files.deleteIfExists(w.s.socket()); // a stale socket, if any
    w.nonCsi = NonCsiServer.start(w.s.socket());
  }

  /** Waits until the supervisor has probed {@code n} more times (or noticed there is nothing to probe). */
  private static void observe(World w, int n, String where) {
    if (n == 0) {
      return;
    }
    if (w.mockRunning()) {
      long before = w.mock.probeCount();
      awaitOrFail(() -> w.mock.probeCount() >= before + n, STEP_WAIT,
          () -> "stuck supervisor: no probe reached the running plugin (" + where + "): " + w.s);
    } else if (w.nonCsi != null) {
      long before = w.nonCsi.connections();
      awaitOrFail(() -> w.nonCsi.connections() >= before + n, STEP_WAIT,
          () -> "stuck supervisor: no connection attempt on the non-CSI server (" + where + "): " + w.s);
    } else {
      awaitOrFail(() -> !w.s.hook.healthy(), STEP_WAIT,
          () -> "nothing listens on the socket, yet the hook stays healthy (" + where + "): " + w.s);
    }
  }

  private static void end(FaultHarness h, World w, Ending e) throws IOException {
    if (e.healthy()) {
      if (e.newVersion()) {
        w.version = "1." + w.versions++;
        if (w.mockRunning()) {
          w.mock.stop(); // a new build is a new process
        }
        startMock(h, w);
        return;
      }
      if (w.mockRunning()) {
        w.mock.hangProbes(false);
        w.mock.clearProbeFailure();
        w.mock.stopFlapping();
        w.mock.setReady(true);
        w.mock.setLatency(Duration.ZERO);
        w.mock.setVendorVersion(w.version);
      } else {
        startMock(h, w);
      }
      return;
    }
    switch (e.downBy()) {
      case CRASH -> {
        if (w.mockRunning()) {
          w.mock.crash();
        }
        w.closeNonCsi();
      }
      case STOP -> {
        if (w.mockRunning()) {
          w.mock.stop();
        }
        w.closeNonCsi();
        Files.deleteIfExists(w.s.socket());
      }
      case NON_CSI -> replaceByNonCsi(w);
      case NOT_READY, HANG -> {
        if (!w.mockRunning()) {
          startMock(h, w);
        }
        w.mock.stopFlapping();
        w.mock.clearProbeFailure();
        w.mock.setLatency(Duration.ZERO);
        if (e.downBy() == Fault.HANG) {
          w.mock.hangProbes(true);
        } else {
          w.mock.hangProbes(false);
          w.mock.setReady(false);
        }
      }
      default -> throw new IllegalStateException("not a way down: " + e);
    }
  }

  private static void awaitOrFail(BooleanSupplier condition, Duration atMost, java.util.function.Supplier<String> why) {
    try {
      await().atMost(atMost).pollInterval(Duration.ofMillis(10)).until(condition::getAsBoolean);
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(why.get() + " (waited " + atMost.toMillis() + " ms)");
    }
  }
}
