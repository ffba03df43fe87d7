package dev.csisupervisor.supervisor;

import dev.csisupervisor.testing.FakeScheduler;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook.Phase;
import dev.csisupervisor.supervisor.FakeConnection.Probe;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The supervision loop under a fake clock and a scripted plugin: every timing is exact. */
class SupervisionStateMachineTest {
  @TempDir Path root;

  private final FakeScheduler scheduler = new FakeScheduler();
  private final FakeConnection plugin = new FakeConnection(scheduler, Duration.ofSeconds(5));
  private final List<TaskEvent> taskEvents = new CopyOnWriteArrayList<>();
  private final List<String> restarts = new CopyOnWriteArrayList<>();
  private final List<PluginEvent> registryEvents = new CopyOnWriteArrayList<>();
  private PluginRegistry registry;
  private CsiPluginSupervisor supervisor;

  @BeforeEach
  void setUp() {
    registry = PluginRegistry.builder().stateStore(new InMemoryStateStore())
        .clock(scheduler.clock()).build();
    PluginListener recorder = registryEvents::add;
    registry.subscribe(PluginType.CSI_CONTROLLER, recorder, Runnable::run);
    registry.subscribe(PluginType.CSI_NODE, recorder, Runnable::run);
    supervisor = newSupervisor(registry);
  }

  private final List<String> probes = new CopyOnWriteArrayList<>();

  private CsiPluginSupervisor newSupervisor(PluginRegistry reg) {
    long[] ticks = {0};
    return CsiPluginSupervisor.builder().csiRoot(root).registry(reg).scheduler(scheduler)
        .registryExecutor(scheduler).clock(scheduler.clock()).random(new Random(7)).connector(plugin.connector())
        .nanoTicker(() -> ticks[0] += 1_000_000)
        .probeObserver((id, latency, ready, error) ->
            probes.add(id + " " + latency.toMillis() + "ms " + ready + " " + error))
        .build();
  }

  @AfterEach
  void tearDown() {
    supervisor.close();
    registry.close();
  }

  private static CsiPluginConfig.Builder config(PluginKind kind) {
    return CsiPluginConfig.builder("ebs", kind);
  }

  private CsiPluginSupervisorHook hook(PluginKind kind) {
    return hook(config(kind));
  }

  private CsiPluginSupervisorHook hook(CsiPluginConfig.Builder config) {
    return hook(supervisor, config.build());
  }

  private CsiPluginSupervisorHook hook(CsiPluginSupervisor sup, CsiPluginConfig config) {
    return sup.hook(new TaskContext("alloc-1", "plugin"), config, taskEvents::add, restarts::add);
  }

  private static CsiPluginSupervisorHook started(CsiPluginSupervisorHook hook) throws Exception {
    hook.prestart(PrestartRequest.withEnv(Map.of()));
    hook.poststart(PoststartRequest.of());
    return hook;
  }

  /** A started hook whose plugin answers Probe ready, after the first probe and what follows it at once. */
  private CsiPluginSupervisorHook startedReady(CsiPluginConfig.Builder config) throws Exception {
    plugin.probe = Probe.READY;
    CsiPluginSupervisorHook hook = started(hook(config));
    scheduler.runDueTasks();
    return hook;
  }

  /** A hook whose ready plugin has been probed, fingerprinted and registered. */
  private CsiPluginSupervisorHook registered(CsiPluginConfig.Builder config) throws Exception {
    CsiPluginSupervisorHook hook = startedReady(config);
    assertEquals(Phase.REGISTERED, hook.phase());
    return hook;
  }

  /** {@link #registered}, with the task and registry events of getting there cleared. */
  private CsiPluginSupervisorHook registeredQuietly(CsiPluginConfig.Builder config) throws Exception {
    CsiPluginSupervisorHook hook = registered(config);
    taskEvents.clear();
    registryEvents.clear();
    return hook;
  }

  /** Lets the next {@code n} timers fire, one after the other; the delay each had. */
  private List<Duration> followTimers(int n) {
    List<Duration> delays = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Duration next = scheduler.pendingDelays().get(0);
      delays.add(next);
      scheduler.forwardTime(next);
    }
    return delays;
  }

  /** The delays are the retry backoff's: from 50 ms, doubling, each within ±20% jitter. */
  private static void assertBackoffFrom50ms(List<Duration> delays) {
    long base = 50;
    for (int i = 0; i < delays.size(); i++, base *= 2) {
      long ms = delays.get(i).toMillis();
      assertTrue(ms >= base * 0.8 - 1 && ms <= base * 1.2 + 1, "delay " + i + " = " + ms + " of " + delays);
    }
  }

  private List<String> eventTypes() {
    List<String> out = new ArrayList<>();
    taskEvents.forEach(e -> out.add(e.type()));
    return out;
  }

  private List<String> registryKinds() {
    List<String> out = new ArrayList<>();
    registryEvents.forEach(e -> out.add(e.kind() + " " + e.type()));
    return out;
  }

  @Test
  void readyAfterDelay_probesWithGrowingBackoffThenRegisters() throws Exception {
    CsiPluginSupervisorHook hook = started(hook(PluginKind.CONTROLLER));
    scheduler.runDueTasks();
    assertEquals(1, plugin.probes, "probes immediately at poststart");
    assertEquals(Phase.AWAITING_READY, hook.phase());

    List<Duration> delays = followTimers(4);
    assertEquals(5, plugin.probes);
    assertBackoffFrom50ms(delays);

    plugin.probe = Probe.READY;
    scheduler.forwardTime(scheduler.pendingDelays().get(0));
    assertEquals(Phase.REGISTERED, hook.phase());
    assertEquals(List.of(TaskEvent.PLUGIN_HEALTHY, TaskEvent.PLUGIN_REGISTERED), eventTypes());
    assertEquals(List.of("REGISTERED CSI_CONTROLLER"), registryKinds());
    PluginInfo info = registry.find(PluginType.CSI_CONTROLLER, "ebs").orElseThrow();
    assertEquals("1.0.0", info.version());
    assertEquals("alloc-1", info.allocId());
    assertEquals(hook.socketPath(), info.socketPath());
    assertEquals("fake.csi.dev", info.options().get("provider"));
    assertTrue(info.health().healthy());
  }

  @Test
  void backoffIsCappedAtMaxBackoff() throws Exception {
    started(hook(PluginKind.NODE));
    scheduler.runDueTasks();
    List<Duration> delays = followTimers(12);
    Duration last = delays.get(delays.size() - 1);
    assertTrue(last.compareTo(Duration.ofSeconds(5)) <= 0, "capped at 5 s: " + last);
    assertTrue(last.compareTo(Duration.ofSeconds(4)) >= 0, "reached the cap: " + last);
  }

  @Test
  void neverReady_healthTimeoutEmitsEventAndRequestsRestart_thenKeepsSupervising()
      throws Exception {
    CsiPluginSupervisorHook hook = started(hook(PluginKind.CONTROLLER));
    scheduler.forwardTime(29_999, TimeUnit.MILLISECONDS);
    assertTrue(restarts.isEmpty());
    scheduler.forwardTime(1, TimeUnit.MILLISECONDS);
    assertEquals(1, restarts.size());
    assertTrue(restarts.get(0).startsWith("unhealthy: did not become ready within 30s"),
        restarts.get(0));
    assertTrue(restarts.get(0).contains("plugin reports not ready"), restarts.get(0));
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY, TaskEvent.RESTART_REQUESTED), eventTypes());
    assertEquals(Phase.AWAITING_READY, hook.phase());

    // The restarted task gets a fresh deadline.
    scheduler.forwardTime(30, TimeUnit.SECONDS);
    assertEquals(2, restarts.size());

    plugin.probe = Probe.READY;
    scheduler.forwardTime(6, TimeUnit.SECONDS);
    assertEquals(Phase.REGISTERED, hook.phase());
    scheduler.forwardTime(60, TimeUnit.SECONDS);
    assertEquals(2, restarts.size(), "no restart once registered");
    assertTrue(registryEvents.size() == 1);
  }

  @Test
  void zeroHealthTimeout_neverRestarts() throws Exception {
    started(hook(config(PluginKind.NODE).healthTimeout(Duration.ZERO)));
    scheduler.forwardTime(10, TimeUnit.MINUTES);
    assertTrue(restarts.isEmpty());
    assertTrue(plugin.probes > 100);
  }

  @Test
  void hungProbe_failsAtDeadlineThenRetries() throws Exception {
    plugin.probe = Probe.HANG;
    CsiPluginSupervisorHook hook = started(hook(PluginKind.CONTROLLER));
    scheduler.runDueTasks();
    assertEquals(1, plugin.probes);
    scheduler.forwardTime(4_999, TimeUnit.MILLISECONDS);
    assertEquals(1, plugin.probes, "no second probe while one is in flight");
    plugin.probe = Probe.READY;
    scheduler.forwardTime(1, TimeUnit.MILLISECONDS);
    scheduler.forwardTime(scheduler.pendingDelays().get(0));
    assertEquals(2, plugin.probes);
    assertEquals(Phase.REGISTERED, hook.phase());
  }

  @Test
  void crashWhileRegistered_marksUnhealthyOnceKeepsRegistration_thenRecovers() throws Exception {
    // Liveness restarts are covered below; here the plugin comes back before health_timeout.
    CsiPluginSupervisorHook hook =
        registeredQuietly(config(PluginKind.CONTROLLER).healthTimeout(Duration.ofMinutes(5)));

    plugin.probe = Probe.REFUSED;
    scheduler.forwardTime(30, TimeUnit.SECONDS);
    scheduler.forwardTime(30, TimeUnit.SECONDS);
    scheduler.forwardTime(30, TimeUnit.SECONDS);
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY), eventTypes());
    assertTrue(taskEvents.get(0).message().contains("connection refused"),
        taskEvents.get(0).message());
    assertEquals(List.of("UPDATED CSI_CONTROLLER"), registryKinds());
    PluginInfo info = registry.find(PluginType.CSI_CONTROLLER, "ebs").orElseThrow();
    assertFalse(info.health().healthy());
    assertTrue(info.health().message().contains("connection refused"));
    assertFalse(hook.healthy());

    plugin.probe = Probe.READY;
    scheduler.forwardTime(30, TimeUnit.SECONDS);
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY, TaskEvent.PLUGIN_HEALTHY), eventTypes());
    assertEquals(List.of("UPDATED CSI_CONTROLLER", "UPDATED CSI_CONTROLLER"), registryKinds());
    assertTrue(registry.find(PluginType.CSI_CONTROLLER, "ebs").orElseThrow().health().healthy());
    assertTrue(hook.healthy());
  }

  @Test
  void connectionLost_probesAtOnce_unhealthyWithoutWaitingForTheTick_thenHealthyOnTheQuickBackoff()
      throws Exception {
    CsiPluginSupervisorHook hook = registeredQuietly(config(PluginKind.NODE)
        .probeInterval(Duration.ofHours(1)).healthTimeout(Duration.ofHours(2)));
    int before = plugin.probes;

    plugin.probe = Probe.REFUSED; // killed: its socket file stays, nothing listens on it
    plugin.loseConnection();
    scheduler.runDueTasks(); // no time passes
    assertEquals(before + 1, plugin.probes, "one probe, at once");
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY), eventTypes());
    assertEquals(List.of("UPDATED CSI_NODE"), registryKinds());
    assertFalse(registry.find(PluginType.CSI_NODE, "ebs").orElseThrow().health().healthy());

    // Restarted: found by the next retry on the quick backoff, far before the hour's tick.
    plugin.probe = Probe.READY;
    Duration next = scheduler.pendingDelays().get(0);
    assertTrue(next.compareTo(Duration.ofSeconds(1)) < 0, "retry after " + next);
    scheduler.forwardTime(next);
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY, TaskEvent.PLUGIN_HEALTHY), eventTypes());
    assertTrue(hook.healthy());
    assertEquals(Duration.ofHours(1), scheduler.pendingDelays().get(0), "back to the steady interval");
  }

  @Test
  void connectionLost_ofAHealthyPlugin_thatReconnects_costsOneProbe_andNoEvent() throws Exception {
    registeredQuietly(config(PluginKind.NODE).probeInterval(Duration.ofHours(1)));
    int before = plugin.probes;
    plugin.loseConnection(); // e.g. the server closed an old connection; the plugin still answers
    scheduler.runDueTasks();
    assertEquals(before + 1, plugin.probes);
    assertEquals(List.of(), eventTypes());
    assertEquals(List.of(), registryKinds());
  }

  @Test
  void pluginRestartedWithNewVersion_updatesRegistration() throws Exception {
    CsiPluginSupervisorHook hook = registeredQuietly(config(PluginKind.NODE));

    // The task runner restarts the task on a new build: prestart and poststart again.
    plugin.vendorVersion = "2.0.0";
    started(hook);
    scheduler.runDueTasks();
    assertEquals(List.of("UPDATED CSI_NODE"), registryKinds());
    assertEquals("2.0.0", registryEvents.get(0).plugin().version());
    assertEquals("2.0.0", registry.find(PluginType.CSI_NODE, "ebs").orElseThrow().version());

    scheduler.forwardTime(300, TimeUnit.SECONDS);
    assertEquals(1, registryEvents.size(), "no event while nothing changes");
  }

  @Test
  void steadyLoop_sendsOnlyProbe() throws Exception {
    registered(config(PluginKind.NODE).probeInterval(Duration.ofSeconds(10)));
    assertEquals(1, plugin.fingerprints);
    int probes = plugin.probes;
    scheduler.forwardTime(100, TimeUnit.SECONDS);
    assertEquals(probes + 10, plugin.probes);
    assertEquals(1, plugin.fingerprints, "no GetPluginInfo (or any other call) besides Probe");
  }

  @Test
  void steadyProbes_useTheConfiguredInterval() throws Exception {
    registered(config(PluginKind.NODE).probeInterval(Duration.ofSeconds(10)));
    int before = plugin.probes;
    scheduler.forwardTime(100, TimeUnit.SECONDS);
    assertEquals(before + 10, plugin.probes);
  }

  @Test
  void flappingPlugin_oneEventPerTransition() throws Exception {
    registeredQuietly(config(PluginKind.CONTROLLER).healthTimeout(Duration.ofMinutes(5)));
    for (int i = 0; i < 3; i++) {
      plugin.probe = Probe.NOT_READY;
      scheduler.forwardTime(30, TimeUnit.SECONDS);
      scheduler.forwardTime(30, TimeUnit.SECONDS);
      plugin.probe = Probe.READY;
      scheduler.forwardTime(30, TimeUnit.SECONDS);
      scheduler.forwardTime(30, TimeUnit.SECONDS);
    }
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      expected.add(TaskEvent.PLUGIN_UNHEALTHY);
      expected.add(TaskEvent.PLUGIN_HEALTHY);
    }
    assertEquals(expected, eventTypes());
    assertEquals(6, registryEvents.size());
    assertTrue(registryEvents.stream().allMatch(e -> e.kind() == PluginEvent.Kind.UPDATED));
  }

  @Test
  void monolith_registersControllerAndNode() throws Exception {
    CsiPluginSupervisorHook hook = registered(config(PluginKind.MONOLITH));
    assertEquals(List.of("REGISTERED CSI_CONTROLLER", "REGISTERED CSI_NODE"), registryKinds());
    assertEquals(java.util.Set.of(PluginType.CSI_CONTROLLER, PluginType.CSI_NODE),
        hook.registeredTypes());

    hook.stop(StopRequest.because("test"));
    assertEquals(List.of("REGISTERED CSI_CONTROLLER", "REGISTERED CSI_NODE",
        "DEREGISTERED CSI_NODE", "DEREGISTERED CSI_CONTROLLER"), registryKinds());
  }

  @Test
  void monolith_secondRegistrationFails_firstIsRolledBackAndRetried() throws Exception {
    boolean[] failNode = {true};
    PluginRegistry failing = (PluginRegistry) Proxy.newProxyInstance(
        getClass().getClassLoader(), new Class<?>[] {PluginRegistry.class},
        (proxy, method, args) -> {
          if (method.getName().equals("register") && failNode[0]
              && ((PluginInfo) args[0]).type() == PluginType.CSI_NODE) {
            throw new IllegalStateException("state store commit failed");
          }
          try {
            return method.invoke(registry, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
    CsiPluginSupervisor sup = newSupervisor(failing);
    plugin.probe = Probe.READY;
    CsiPluginSupervisorHook hook =
        started(hook(sup, config(PluginKind.MONOLITH).build()));
    scheduler.runDueTasks();
    assertEquals(List.of("REGISTERED CSI_CONTROLLER", "DEREGISTERED CSI_CONTROLLER"),
        registryKinds());
    assertTrue(registry.list(PluginType.CSI_CONTROLLER).isEmpty());
    assertEquals(Phase.AWAITING_READY, hook.phase());
    assertTrue(eventTypes().contains(TaskEvent.PLUGIN_FAILED));
    assertTrue(taskEvents.stream().anyMatch(e -> e.message().contains("state store commit failed")));

    failNode[0] = false;
    scheduler.forwardTime(scheduler.pendingDelays().get(0));
    assertEquals(Phase.REGISTERED, hook.phase());
    assertEquals(1, registry.list(PluginType.CSI_NODE).size());
    assertEquals(1, registry.list(PluginType.CSI_CONTROLLER).size());
    sup.close();
  }

  @Test
  void fingerprintFailure_isReportedAndRetried() throws Exception {
    plugin.fingerprintFails = true;
    CsiPluginSupervisorHook hook = startedReady(config(PluginKind.CONTROLLER));
    assertEquals(Phase.AWAITING_READY, hook.phase());
    assertTrue(registryEvents.isEmpty());
    plugin.fingerprintFails = false;
    scheduler.forwardTime(scheduler.pendingDelays().get(0));
    assertEquals(Phase.REGISTERED, hook.phase());
  }

  @Test
  void fingerprintFailingForever_backsOffLikeProbes() throws Exception {
    // A driver that answers Probe but not GetPluginInfo (hostpath built without a version):
    // retried at the growing backoff, not every ~50 ms.
    plugin.fingerprintFails = true;
    CsiPluginSupervisorHook hook = startedReady(config(PluginKind.CONTROLLER));
    List<Duration> delays = followTimers(6);
    assertEquals(Phase.AWAITING_READY, hook.phase());
    assertBackoffFrom50ms(delays);
    int tries = plugin.fingerprints;
    scheduler.forwardTime(10, TimeUnit.SECONDS);
    assertTrue(plugin.fingerprints - tries <= 4, "backed off: " + (plugin.fingerprints - tries)
        + " fingerprints in 10 s");
    plugin.fingerprintFails = false;
    scheduler.forwardTime(scheduler.pendingDelays().get(0));
    assertEquals(Phase.REGISTERED, hook.phase());
  }

  @Test
  void stopDuringWaitForReady_cancelsEverything() throws Exception {
    CsiPluginSupervisorHook hook = started(hook(PluginKind.CONTROLLER));
    scheduler.forwardTime(1, TimeUnit.SECONDS);
    int probes = plugin.probes;
    hook.stop(StopRequest.because("task killed"));
    assertEquals(Phase.STOPPED, hook.phase());
    assertTrue(plugin.closed);
    assertEquals(0, scheduler.pendingCount(), "no timers left: " + scheduler.pendingDelays());
    plugin.probe = Probe.READY;
    scheduler.forwardTime(10, TimeUnit.MINUTES);
    assertEquals(probes, plugin.probes);
    assertTrue(registryEvents.isEmpty());
    assertTrue(restarts.isEmpty());
  }

  @Test
  void stopTwice_deregistersOnce() throws Exception {
    CsiPluginSupervisorHook hook = registered(config(PluginKind.NODE));
    hook.stop(StopRequest.because("one"));
    hook.stop(StopRequest.because("two"));
    assertEquals(List.of("REGISTERED CSI_NODE", "DEREGISTERED CSI_NODE"), registryKinds());
    assertTrue(hook.registeredTypes().isEmpty());
  }

  @Test
  void stopBeforePoststart_isHarmless_andPoststartAfterStopIsRefused() {
    CsiPluginSupervisorHook hook = hook(PluginKind.NODE);
    hook.stop(StopRequest.because("never started"));
    assertEquals(Phase.STOPPED, hook.phase());
    assertEquals(0, plugin.probes);
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> hook.poststart(PoststartRequest.of()));
    assertTrue(e.getMessage().contains("ebs"), e.getMessage());
  }

  @Test
  void poststartTwice_runsOneLoop() throws Exception {
    CsiPluginSupervisorHook hook = started(hook(PluginKind.CONTROLLER));
    started(hook);
    scheduler.runDueTasks();
    // The second poststart is a restarted task: its new process is probed at once.
    assertEquals(2, plugin.probes);
    scheduler.forwardTime(2, TimeUnit.SECONDS);
    int oneLoop = plugin.probes;
    // 2 immediate probes, 10 quick retries, then 50 ms backoff doubling: ~6 within 2 s.
    assertTrue(oneLoop <= 18, "one loop (quick retries, then backoff), not two: " + oneLoop);
    assertEquals(1, scheduler.pendingDelays().stream()
        .filter(d -> d.compareTo(Duration.ofSeconds(5)) <= 0).count(), "a single probe timer");
  }

  @Test
  void stopRemovesSocketLeftBehind() throws Exception {
    CsiPluginSupervisorHook hook = started(hook(PluginKind.CONTROLLER));
    Files.createFile(hook.socketPath());
    hook.stop(StopRequest.because("done"));
    assertFalse(Files.exists(hook.socketPath()));
  }

  @Test
  void socketAppearing_probesAtOnce_thenRetriesRefusalsWithinMilliseconds() throws Exception {
    plugin.probe = Probe.REFUSED;
    CsiPluginSupervisorHook hook = started(hook(PluginKind.NODE));
    scheduler.forwardTime(10, TimeUnit.SECONDS);
    int before = plugin.probes;
    assertTrue(before >= 7, "the backoff has doubled to seconds: " + before + " probes");

    // The plugin binds its socket (real inotify) but does not accept yet: refused.
    Files.createFile(hook.socketPath());
    org.awaitility.Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10))
        .atMost(Duration.ofSeconds(10)).until(() -> scheduler.pendingDelays().contains(Duration.ZERO));
    scheduler.runDueTasks();
    assertEquals(before + 1, plugin.probes, "probed as soon as the socket appeared");
    assertEquals(Duration.ofMillis(5), scheduler.pendingDelays().get(0),
        "a refusal right after the socket appeared is retried in 5 ms, not after the backoff");

    plugin.probe = Probe.READY;
    scheduler.forwardTime(5, TimeUnit.MILLISECONDS);
    assertEquals(Phase.REGISTERED, hook.phase());
  }

  @Test
  void socketAppearedRetries_areBounded_thenBackoffResumesFromTheStart() throws Exception {
    plugin.probe = Probe.REFUSED;
    CsiPluginSupervisorHook hook = started(hook(PluginKind.NODE));
    scheduler.forwardTime(10, TimeUnit.SECONDS);
    Files.createFile(hook.socketPath());
    org.awaitility.Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10))
        .atMost(Duration.ofSeconds(10)).until(() -> scheduler.pendingDelays().contains(Duration.ZERO));
    scheduler.runDueTasks();
    int before = plugin.probes;
    scheduler.forwardTime(50, TimeUnit.MILLISECONDS);
    assertEquals(before + 10, plugin.probes, "ten quick retries");
    Duration next = scheduler.pendingDelays().get(0);
    assertTrue(next.toMillis() >= 40 && next.toMillis() <= 60, "backoff restarted at 50 ms: " + next);
  }

  @Test
  void probeObserver_seesEveryProbeWithLatencyAndOutcome() throws Exception {
    plugin.probe = Probe.REFUSED;
    started(hook(PluginKind.NODE));
    scheduler.runDueTasks();
    plugin.probe = Probe.READY;
    scheduler.forwardTime(scheduler.pendingDelays().get(0));
    assertEquals(List.of("ebs 1ms false connection refused on csi.sock", "ebs 1ms true "), probes);
  }

  @Test
  void detach_keepsRegistrationsButStopsSupervising() throws Exception {
    CsiPluginSupervisorHook hook = registeredQuietly(config(PluginKind.MONOLITH));
    int probesBefore = plugin.probes;
    hook.detach("agent shutting down, leave_running");
    assertEquals(Phase.STOPPED, hook.phase());
    assertTrue(plugin.closed);
    assertEquals(0, scheduler.pendingCount());
    scheduler.forwardTime(5, TimeUnit.MINUTES);
    assertEquals(probesBefore, plugin.probes);
    hook.stop(StopRequest.because("after detach"));
    assertTrue(registryEvents.isEmpty(), "nothing deregistered: " + registryKinds());
    assertEquals(1, registry.list(PluginType.CSI_NODE).size());
    assertEquals(1, registry.list(PluginType.CSI_CONTROLLER).size());
  }

  @Test
  void throwingEventEmitter_doesNotBreakSupervision() throws Exception {
    plugin.probe = Probe.READY;
    CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext("alloc-1", "plugin"),
        config(PluginKind.NODE).build(),
        e -> {
          throw new IllegalStateException("emitter down");
        }, restarts::add);
    started(hook);
    scheduler.runDueTasks();
    assertEquals(Phase.REGISTERED, hook.phase());
  }

  // ---- liveness for the plugin's whole life -------------------------------------------------

  private CsiPluginSupervisorHook registeredHook(Duration healthTimeout) throws Exception {
    return registeredQuietly(
        config(PluginKind.NODE).healthTimeout(healthTimeout).probeInterval(Duration.ofSeconds(10)));
  }

  @Test
  void registeredPluginThatHangs_isRestartedAfterHealthTimeout() throws Exception {
    CsiPluginSupervisorHook hook = registeredHook(Duration.ofSeconds(30));
    plugin.probe = Probe.HANG;
    // t=10 s: the probe hangs; t=15 s: its 5 s deadline passes, unhealthy from then on.
    scheduler.forwardTime(15, TimeUnit.SECONDS);
    assertFalse(hook.healthy());
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY), eventTypes());
    scheduler.forwardTime(29_999, TimeUnit.MILLISECONDS);
    assertEquals(List.of(), restarts, "not before health_timeout");
    scheduler.forwardTime(1, TimeUnit.MILLISECONDS);
    assertEquals(1, restarts.size(), "restart requested at health_timeout: " + eventTypes());
    assertTrue(restarts.get(0).contains("after registration"), restarts.get(0));
    assertTrue(restarts.get(0).contains("deadline exceeded"), restarts.get(0));
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY, TaskEvent.RESTART_REQUESTED), eventTypes());
    // Still registered (as unhealthy) while the task restarts.
    assertFalse(registry.find(PluginType.CSI_NODE, "ebs").orElseThrow().health().healthy());

    // The task runner relaunches the process: fast path, healthy again at once.
    plugin.probe = Probe.READY;
    started(hook);
    scheduler.runDueTasks();
    assertTrue(hook.healthy());
    assertEquals(TaskEvent.PLUGIN_HEALTHY, eventTypes().get(eventTypes().size() - 1));
    scheduler.forwardTime(5, TimeUnit.MINUTES);
    assertEquals(1, restarts.size(), "the deadline is cancelled once healthy");
  }

  @Test
  void registeredPluginReportingNotReady_isRestartedAfterHealthTimeout_andAgainIfStillDown()
      throws Exception {
    registeredHook(Duration.ofSeconds(30));
    plugin.probe = Probe.NOT_READY;
    scheduler.forwardTime(10, TimeUnit.SECONDS); // unhealthy at t=10
    scheduler.forwardTime(30, TimeUnit.SECONDS);
    assertEquals(1, restarts.size());
    assertTrue(restarts.get(0).contains("plugin reports not ready"), restarts.get(0));
    // A restart that does not help: a fresh deadline, another request.
    scheduler.forwardTime(30, TimeUnit.SECONDS);
    assertEquals(2, restarts.size());
  }

  @Test
  void pluginSlowToAnswerOnce_isNotRestarted() throws Exception {
    CsiPluginSupervisorHook hook = registeredHook(Duration.ofSeconds(30));
    plugin.probe = Probe.HANG;
    scheduler.forwardTime(15, TimeUnit.SECONDS); // one probe timed out
    plugin.probe = Probe.READY;
    scheduler.forwardTime(10, TimeUnit.MINUTES);
    assertTrue(hook.healthy());
    assertEquals(List.of(), restarts);
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY, TaskEvent.PLUGIN_HEALTHY), eventTypes());
  }

  @Test
  void healthTimeoutZero_neverRestartsARegisteredPlugin() throws Exception {
    registeredHook(Duration.ZERO);
    plugin.probe = Probe.REFUSED;
    scheduler.forwardTime(1, TimeUnit.HOURS);
    assertEquals(List.of(), restarts);
  }

  @Test
  void relaunchedProcess_isProbedAtOnce_withFreshBackoff_notAtTheSteadyTick() throws Exception {
    CsiPluginSupervisorHook hook = registeredHook(Duration.ofSeconds(30));
    plugin.probe = Probe.REFUSED; // crashed
    scheduler.forwardTime(10, TimeUnit.SECONDS);
    assertFalse(hook.healthy());
    int fingerprints = plugin.fingerprints;
    // Relaunched, but it takes a moment to listen: quick retries, then backoff from 50 ms.
    started(hook);
    scheduler.forwardTime(50, TimeUnit.MILLISECONDS);
    Duration next = scheduler.pendingDelays().get(0);
    assertTrue(next.toMillis() <= 60, "fresh backoff, not the 10 s interval: " + next);
    plugin.probe = Probe.READY;
    scheduler.forwardTime(next);
    assertTrue(hook.healthy(), "healthy well before the next steady tick");
    assertEquals(fingerprints + 1, plugin.fingerprints, "the new process is re-fingerprinted");
  }

  @Test
  void relaunchedProcess_getsAFreshHealthDeadline() throws Exception {
    CsiPluginSupervisorHook hook = registeredHook(Duration.ofSeconds(30));
    plugin.probe = Probe.REFUSED;
    scheduler.forwardTime(10, TimeUnit.SECONDS); // unhealthy at t=10, deadline t=40
    scheduler.forwardTime(20, TimeUnit.SECONDS);
    hook.poststart(PoststartRequest.of()); // relaunched at t=30: deadline t=60
    scheduler.forwardTime(20, TimeUnit.SECONDS);
    assertEquals(List.of(), restarts, "the old deadline does not apply to the new process");
    scheduler.forwardTime(10, TimeUnit.SECONDS);
    assertEquals(1, restarts.size());
  }

  @Test
  void stillUnhealthyForAnotherKindOfReason_updatesTheRegisteredReason_withoutATaskEvent()
      throws Exception {
    registeredHook(Duration.ZERO);
    plugin.probe = Probe.REFUSED;
    scheduler.forwardTime(30, TimeUnit.SECONDS); // the same reason three times: one UPDATED
    assertEquals(List.of("UPDATED CSI_NODE"), registryKinds());
    plugin.probe = Probe.NOT_READY;
    scheduler.forwardTime(30, TimeUnit.SECONDS);
    assertEquals(List.of("UPDATED CSI_NODE", "UPDATED CSI_NODE"), registryKinds());
    assertEquals("plugin reports not ready",
        registry.find(PluginType.CSI_NODE, "ebs").orElseThrow().health().message());
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY), eventTypes());
  }

  // ---- fingerprint by capability -------------------------------------------------------------

  @Test
  void nodeOnlyPluginConfiguredAsMonolith_registersItsNodeHalf_andSaysWhy() throws Exception {
    plugin.servesController = false;
    CsiPluginSupervisorHook hook = registered(config(PluginKind.MONOLITH));
    assertEquals(List.of("REGISTERED CSI_NODE"), registryKinds());
    assertEquals(java.util.Set.of(PluginType.CSI_NODE), hook.registeredTypes());
    TaskEvent partial = taskEvents.stream()
        .filter(e -> e.type().equals(TaskEvent.PLUGIN_PARTIAL)).findFirst().orElseThrow();
    assertTrue(partial.message().contains("controller half not registered"), partial.message());
    assertTrue(partial.message().contains("CONTROLLER_SERVICE"), partial.message());
  }

  @Test
  void controllerOnlyPluginConfiguredAsMonolith_registersItsControllerHalf() throws Exception {
    plugin.servesNode = false;
    registered(config(PluginKind.MONOLITH));
    assertEquals(List.of("REGISTERED CSI_CONTROLLER"), registryKinds());
    assertTrue(taskEvents.stream().anyMatch(e -> e.type().equals(TaskEvent.PLUGIN_PARTIAL)
        && e.message().contains("node half not registered")), taskEvents.toString());
  }

  @Test
  void controllerConfiguredPluginWithoutControllerService_failsNamingTheCapability()
      throws Exception {
    plugin.servesController = false;
    CsiPluginSupervisorHook hook = startedReady(config(PluginKind.CONTROLLER));
    assertEquals(Phase.AWAITING_READY, hook.phase());
    assertEquals(List.of(), registryKinds());
    TaskEvent failed = taskEvents.stream()
        .filter(e -> e.type().equals(TaskEvent.PLUGIN_FAILED)).findFirst().orElseThrow();
    assertEquals("plugin ebs (driver fake.csi.dev 1.0.0) is configured as a controller but does"
        + " not advertise the CONTROLLER_SERVICE plugin capability (GetPluginCapabilities: [])",
        failed.message());
  }

  @Test
  void anotherDriverOnTheSocket_isReportedAsReplaced_thenUpdated() throws Exception {
    CsiPluginSupervisorHook hook = registeredQuietly(config(PluginKind.NODE));
    plugin.name = "other.csi.dev";
    plugin.vendorVersion = "9.9";
    hook.poststart(PoststartRequest.of()); // a restart brought up another driver
    scheduler.runDueTasks();
    TaskEvent replaced = taskEvents.stream()
        .filter(e -> e.type().equals(TaskEvent.DRIVER_REPLACED)).findFirst().orElseThrow();
    assertEquals("plugin ebs: driver fake.csi.dev 1.0.0 was replaced on " + hook.socketPath()
        + " by other.csi.dev 9.9", replaced.message());
    assertEquals(List.of(TaskEvent.DRIVER_REPLACED, TaskEvent.PLUGIN_REGISTERED), eventTypes());
    assertEquals(List.of("UPDATED CSI_NODE"), registryKinds());
    assertEquals("other.csi.dev",
        registry.find(PluginType.CSI_NODE, "ebs").orElseThrow().fingerprint().name());
  }

  // ---- listeners outside the lock --------------------------------------------------------------

  @Test
  void taskEventEmitter_mayCallBackIntoTheHook_fromAnotherThread() throws Exception {
    plugin.probe = Probe.READY;
    java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      CsiPluginSupervisorHook[] self = new CsiPluginSupervisorHook[1];
      List<Boolean> seen = new CopyOnWriteArrayList<>();
      // A listener that asks the hook for its state on another thread and waits for the answer:
      // deadlocks if the event is emitted under the hook's lock.
      CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext("alloc-1", "plugin"),
          config(PluginKind.NODE).build(),
          e -> {
            try {
              seen.add(other.submit(() -> self[0].healthy()).get(5, TimeUnit.SECONDS));
            } catch (Exception ex) {
              throw new IllegalStateException("listener could not ask the hook: " + ex, ex);
            }
          }, restarts::add);
      self[0] = hook;
      started(hook);
      scheduler.runDueTasks();
      assertEquals(2, seen.size(), "both events delivered: " + seen);
    } finally {
      other.shutdownNow();
    }
  }
}
