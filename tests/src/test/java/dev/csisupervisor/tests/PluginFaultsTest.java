package dev.csisupervisor.tests;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginEvent.Kind;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook.Phase;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.TaskEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One fault at a time, against real mock plugins and the real supervisor on a 2-thread scheduler (probe every
 * 50 ms, 250 ms deadline, 1.5 s health timeout): a plugin that crashes, hangs, flaps, answers slowly, changes
 * version, leaves a stale socket, or is replaced by a server that is not CSI. Each test checks the task events and
 * registry events the fault must cause, that the supervisor recovers when a good plugin is back, and — at the end
 * of every test — that stop() returned promptly, deregistered everything, and every key's event history is
 * well-formed.
 */
class PluginFaultsTest {
  private static final Duration WAIT = Duration.ofSeconds(15);
  /** {@link FaultHarness#STOP_HANG_GUARD}: catches a stop() that hangs, no speed claim. */
  private static final Duration STOP_HANG_GUARD = FaultHarness.STOP_HANG_GUARD;

  private FaultHarness h;
  private final List<FaultHarness.Supervised> supervised = new ArrayList<>();
  private final List<AutoCloseable> servers = new ArrayList<>();

  @BeforeEach
  void setUp() {
    h = new FaultHarness(42);
  }

  /** Cleanup only: a test checks its own ending ({@link #stopAllAndCheck}); this stops what a failed test left. */
  @AfterEach
  void tearDown() throws Exception {
    try {
      for (FaultHarness.Supervised s : supervised) {
        h.stop(s);
      }
    } finally {
      for (AutoCloseable c : servers) {
        c.close();
      }
      h.close();
    }
  }

  /**
   * The end of every test: stops each supervised plugin and checks that stop() returned (see
   * {@link #STOP_HANG_GUARD}), deregistered
   * everything, and left a well-formed event history per key; and that every registry view matches the registry.
   */
  private void stopAllAndCheck() {
    for (FaultHarness.Supervised s : List.copyOf(supervised)) {
      long millis = h.stop(s);
      supervised.remove(s);
      assertTrue(millis < STOP_HANG_GUARD.toMillis(), s + ": stop() took " + millis + " ms");
      assertEquals(Phase.STOPPED, s.hook.phase());
      assertEquals(List.of(), h.registrations(s), s + ": still registered after stop()");
      assertEquals(List.of(), h.checkStoppedHistory(s));
      assertEquals(List.of(), FaultHarness.checkHealthAlternation(s));
    }
    // The views hear of each change on their own delivery, after the registry has it: awaited, then shown.
    waiting().until(() -> h.viewProblems().isEmpty());
    assertEquals(List.of(), h.viewProblems());
  }

  private static ConditionFactory waiting() {
    return await().atMost(WAIT).pollInterval(Duration.ofMillis(10));
  }

  private FaultHarness.Supervised start(String id, PluginKind kind) throws IOException {
    return start(FaultHarness.config(id, kind).build());
  }

  private FaultHarness.Supervised start(CsiPluginConfig config) throws IOException {
    FaultHarness.Supervised s = h.supervise("alloc-" + config.pluginId(), config);
    supervised.add(s);
    return s;
  }

  private MockCsiPlugin serve(FaultHarness.Supervised s, String version) throws IOException {
    return serve(h.plugin(s.socket(), s.hook.config().type(), version));
  }

  private MockCsiPlugin serve(MockCsiPlugin.Builder b) throws IOException {
    MockCsiPlugin p = b.start();
    servers.add(p);
    return p;
  }

  private FaultHarness.Supervised registered(String id, PluginKind kind, String version) throws IOException {
    FaultHarness.Supervised s = start(id, kind);
    serve(s, version);
    s.hook.poststart(PoststartRequest.of());
    waiting().until(() -> h.registeredHealthy(s, version));
    return s;
  }

  private List<Kind> kinds(FaultHarness.Supervised s, PluginType type) {
    return h.events(s, type).stream().map(PluginEvent::kind).toList();
  }

  private static List<String> healthEvents(FaultHarness.Supervised s) {
    return s.taskEventTypes().stream()
        .filter(t -> t.equals(TaskEvent.PLUGIN_HEALTHY) || t.equals(TaskEvent.PLUGIN_UNHEALTHY)).toList();
  }

  // ---- crash ----------------------------------------------------------------------------------------------------

  @Test
  void crash_marksEveryTypeUnhealthy_keepsTheRegistration_andRecoversWhenThePluginIsBack() throws Exception {
    FaultHarness.Supervised s = registered("mono", PluginKind.MONOLITH, "1.0.0");
    MockCsiPlugin first = (MockCsiPlugin) servers.get(0);

    first.crash();
    assertTrue(Files.exists(s.socket()), "a crash leaves its socket behind");
    waiting().until(() -> h.notHealthy(s) && h.registrations(s).size() == 2);
    for (PluginInfo p : h.registrations(s)) {
      assertTrue(p.health().message().contains(s.socket().toString()), "the reason names the socket: " + p.health());
    }
    // Task events and listeners are told after the registry changed, on their own threads.
    waiting().until(() -> s.count(TaskEvent.PLUGIN_UNHEALTHY) >= 1
        && Arrays.stream(PluginType.values()).allMatch(t -> kinds(s, t).size() >= 2));
    assertEquals(1, s.count(TaskEvent.PLUGIN_UNHEALTHY));
    for (PluginType t : PluginType.values()) {
      assertEquals(List.of(Kind.REGISTERED, Kind.UPDATED), kinds(s, t), "crash: an UPDATED, never a DEREGISTERED");
    }

    serve(s, "1.0.0"); // the restarted process: same build; start() replaces the stale socket
    waiting().until(() -> h.registeredHealthy(s, "1.0.0"));
    waiting().until(() -> healthEvents(s).size() >= 3
        && Arrays.stream(PluginType.values()).allMatch(t -> kinds(s, t).size() >= 3));
    assertEquals(List.of(TaskEvent.PLUGIN_HEALTHY, TaskEvent.PLUGIN_UNHEALTHY, TaskEvent.PLUGIN_HEALTHY), healthEvents(s));
    assertEquals(1, s.count(TaskEvent.PLUGIN_REGISTERED), "same build: no new registration task event");
    for (PluginType t : PluginType.values()) {
      assertEquals(List.of(Kind.REGISTERED, Kind.UPDATED, Kind.UPDATED), kinds(s, t));
    }
    assertEquals(List.of(), s.restarts, "a registered plugin is never restarted by the health timeout");
    stopAllAndCheck();
  }

  @Test
  void crashBeforeEverReady_noRegistration_healthTimeoutRequestsRestart_thenRegistersWhenBack() throws Exception {
    FaultHarness.Supervised s = start("early", PluginKind.NODE);
    MockCsiPlugin p = serve(h.plugin(s.socket(), PluginKind.NODE, "1.0").neverReady());
    s.hook.poststart(PoststartRequest.of());
    waiting().until(() -> p.probeCount() >= 2);
    p.crash();
    waiting().until(() -> !s.restarts.isEmpty());
    assertTrue(s.restarts.get(0).contains("did not become ready within 1500ms"), s.restarts.get(0));
    assertEquals(List.of(), h.registrations(s));
    assertEquals(List.of(TaskEvent.PLUGIN_UNHEALTHY, TaskEvent.RESTART_REQUESTED), s.taskEventTypes().subList(0, 2));

    serve(s, "1.0");
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    assertEquals(List.of(Kind.REGISTERED), kinds(s, PluginType.CSI_NODE));
    stopAllAndCheck();
  }

  // ---- hang -------------------------------------------------------------------------------------------------------

  @Test
  void stop_duringAHungProbe_doesNotWaitForItsDeadline() throws Exception {
    // The probe's deadline is an hour away: stop() returning at all shows it did not wait for the call.
    FaultHarness.Supervised s = start(FaultHarness.config("hung-at-stop", PluginKind.NODE)
        .probeTimeout(Duration.ofHours(1)).healthTimeout(Duration.ofHours(1)).build());
    MockCsiPlugin p = serve(s, "1.0");
    s.hook.poststart(PoststartRequest.of());
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    p.hangProbes(true);
    waiting().until(() -> p.hungProbeCount() >= 1);
    assertTimeoutPreemptively(Duration.ofMinutes(2), () -> h.stop(s));
    supervised.remove(s);
    assertEquals(List.of(), h.registrations(s), "deregistered at stop");
    p.hangProbes(false);
    stopAllAndCheck();
  }

  @Test
  void hungProbes_hitTheDeadline_markUnhealthy_andReleasingThemRecovers() throws Exception {
    FaultHarness.Supervised s = registered("hang", PluginKind.NODE, "1.0");
    MockCsiPlugin p = (MockCsiPlugin) servers.get(0);
    p.hangProbes(true);
    waiting().until(() -> h.notHealthy(s));
    String reason = h.registrations(s).get(0).health().message();
    assertTrue(reason.toLowerCase().contains("deadline") || reason.contains("250ms"), "names the deadline: " + reason);
    long probes = p.probeCount();
    waiting().until(() -> p.probeCount() >= probes + 2); // still probing, one hung call at a time
    // One call in flight from the supervisor; a second may still be parked while its cancellation travels.
    assertTrue(p.hungProbeCount() <= 2, "hung probes pile up: " + p.hungProbeCount());

    p.hangProbes(false);
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    assertEquals(List.of(Kind.REGISTERED, Kind.UPDATED, Kind.UPDATED), kinds(s, PluginType.CSI_NODE));
    stopAllAndCheck();
  }

  @Test
  void probesFailingWithAStatus_unhealthyWithThePluginsMessage_thenHealthyWhenCleared() throws Exception {
    FaultHarness.Supervised s = registered("failing", PluginKind.CONTROLLER, "1.0");
    MockCsiPlugin p = (MockCsiPlugin) servers.get(0);
    p.failProbes(io.grpc.Status.Code.UNAVAILABLE, "backend down");
    waiting().until(() -> h.notHealthy(s));
    assertTrue(h.registrations(s).get(0).health().message().contains("backend down"),
        h.registrations(s).get(0).health().message());
    p.clearProbeFailure();
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    stopAllAndCheck();
  }

  // ---- flapping ---------------------------------------------------------------------------------------------------

  @Test
  void flapping_alternatesHealthyAndUnhealthy_andSettlesHealthyWhenItStops() throws Exception {
    FaultHarness.Supervised s = registered("flappy", PluginKind.MONOLITH, "1.0");
    MockCsiPlugin p = (MockCsiPlugin) servers.get(0);
    p.flap(Duration.ofMillis(200));
    waiting().until(() -> s.count(TaskEvent.PLUGIN_UNHEALTHY) >= 3);
    p.stopFlapping();
    p.setReady(true);
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    // Alternation is checked after the test; here: each transition is one UPDATED per type, nothing else.
    for (PluginType t : PluginType.values()) {
      List<PluginEvent> ev = h.events(s, t);
      assertEquals(Kind.REGISTERED, ev.get(0).kind());
      for (int i = 1; i < ev.size(); i++) {
        assertEquals(Kind.UPDATED, ev.get(i).kind());
        assertTrue(ev.get(i).plugin().health().healthy() != ev.get(i - 1).plugin().health().healthy(),
            "each UPDATED of a flapping plugin flips health: " + ev);
      }
    }
    stopAllAndCheck();
  }

  // ---- slow answers -----------------------------------------------------------------------------------------------

  @Test
  void slowAnswers_withinTheDeadlineStayHealthy_beyondItTurnUnhealthy_andRecover() throws Exception {
    FaultHarness.Supervised s = registered("slow", PluginKind.NODE, "1.0");
    MockCsiPlugin p = (MockCsiPlugin) servers.get(0);
    p.setLatency(Duration.ofMillis(60));
    long probes = p.probeCount();
    waiting().until(() -> p.probeCount() >= probes + 5);
    assertEquals(0, s.count(TaskEvent.PLUGIN_UNHEALTHY), "60 ms answers are within the 250 ms deadline");
    assertEquals(List.of(Kind.REGISTERED), kinds(s, PluginType.CSI_NODE));

    p.setLatency(Duration.ofMillis(600));
    waiting().until(() -> h.notHealthy(s));
    p.setLatency(Duration.ZERO);
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    stopAllAndCheck();
  }

  @Test
  void slowFingerprint_beyondTheDeadline_failsRegistration_untilThePluginIsFastAgain() throws Exception {
    FaultHarness.Supervised s = start("slowfp", PluginKind.NODE);
    MockCsiPlugin p = serve(h.plugin(s.socket(), PluginKind.NODE, "1.0").latency(Duration.ofMillis(400)));
    s.hook.poststart(PoststartRequest.of());
    waiting().until(() -> s.count(TaskEvent.PLUGIN_FAILED) + s.restarts.size() >= 1);
    assertEquals(List.of(), h.registrations(s));
    p.setLatency(Duration.ZERO);
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    stopAllAndCheck();
  }

  // ---- version change ---------------------------------------------------------------------------------------------

  @Test
  void newBuildReplacingTheProcess_reFingerprints_updatesEveryType_andEmitsARegistrationEvent() throws Exception {
    FaultHarness.Supervised s = registered("upgrade", PluginKind.MONOLITH, "1.0.0");
    MockCsiPlugin p = (MockCsiPlugin) servers.get(0);
    // A new build is a new process: the socket re-appears, and the supervisor fingerprints again
    // (its steady loop sends only Probe, so a version changed under a live process is not seen).
    p.stop();
    serve(s, "2.0.0");
    waiting().until(() -> h.registeredHealthy(s, "2.0.0"));
    waiting().until(() -> s.count(TaskEvent.PLUGIN_REGISTERED) >= 2 && Arrays.stream(PluginType.values())
        .allMatch(t -> { // listeners hear of the new build after the registry has it
          List<PluginEvent> e = h.events(s, t);
          return "2.0.0".equals(e.get(e.size() - 1).plugin().fingerprint().vendorVersion());
        }));
    for (PluginType t : PluginType.values()) {
      List<Kind> kinds = kinds(s, t);
      assertEquals(Kind.REGISTERED, kinds.get(0));
      assertEquals(Kind.UPDATED, kinds.get(kinds.size() - 1), "the new build is an UPDATED: " + kinds);
      assertEquals("2.0.0", h.events(s, t).get(kinds.size() - 1).plugin().fingerprint().vendorVersion());
    }
    assertEquals(2, s.count(TaskEvent.PLUGIN_REGISTERED), "registered, then updated: " + s.taskEventTypes());
    assertTrue(s.taskEvents.stream().filter(e -> e.type().equals(TaskEvent.PLUGIN_REGISTERED))
        .reduce((a, b) -> b).orElseThrow().message().contains("2.0.0"), s.taskEvents.toString());
    stopAllAndCheck();
  }

  @Test
  void restartedWithANewBuild_whileUnhealthy_comesBackHealthyWithTheNewVersion() throws Exception {
    FaultHarness.Supervised s = registered("rebuild", PluginKind.CONTROLLER, "1.0.0");
    ((MockCsiPlugin) servers.get(0)).crash();
    waiting().until(() -> h.notHealthy(s));
    serve(s, "1.1.0");
    waiting().until(() -> h.registeredHealthy(s, "1.1.0"));
    waiting().until(() -> s.count(TaskEvent.PLUGIN_REGISTERED) >= 2); // told on the task events' own thread
    assertEquals(2, s.count(TaskEvent.PLUGIN_REGISTERED), s.taskEventTypes().toString());
    stopAllAndCheck();
  }

  // ---- stale sockets ----------------------------------------------------------------------------------------------

  @Test
  void staleSocketAtStart_isRefused_andThePluginThatReplacesItRegisters() throws Exception {
    FaultHarness.Supervised s = start("stale", PluginKind.NODE);
    serve(s, "1.0").crash(); // leaves a socket file nobody accepts on
    assertTrue(Files.exists(s.socket()));
    s.hook.poststart(PoststartRequest.of());
    waiting().until(() -> s.hook.phase() == Phase.AWAITING_READY && !s.restarts.isEmpty());
    assertTrue(s.restarts.get(0).toLowerCase().contains("refused"), "the reason says refused: " + s.restarts.get(0));
    assertEquals(List.of(), h.registrations(s));

    serve(s, "1.0");
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    stopAllAndCheck();
  }

  @Test
  void staleSocketLeftAtStop_isRemoved() throws Exception {
    FaultHarness.Supervised s = registered("leftover", PluginKind.NODE, "1.0");
    ((MockCsiPlugin) servers.get(0)).crash();
    waiting().until(() -> h.notHealthy(s));
    assertTrue(Files.exists(s.socket()));
    long millis = h.stop(s);
    assertTrue(millis < STOP_HANG_GUARD.toMillis(), "stop took " + millis + " ms");
    assertFalse(Files.exists(s.socket()), "stop removes the stale socket");
    stopAllAndCheck();
  }

  // ---- a server that is not CSI -----------------------------------------------------------------------------------

  @Test
  void replacedByANonCsiServer_unhealthyNamingIt_thenHealthyWhenTheRealPluginIsBack() throws Exception {
    FaultHarness.Supervised s = registered("impostor", PluginKind.MONOLITH, "1.0");
    ((MockCsiPlugin) servers.get(0)).crash();
    Files.delete(s.socket());
    NonCsiServer http = NonCsiServer.start(s.socket());
    servers.add(http);
    waiting().until(() -> h.notHealthy(s) && http.connections() > 0);
    waiting().until(() -> h.registrations(s).stream().allMatch(p -> p.health().message().contains("not a CSI plugin")));
    // Exactly one unhealthy event. Its reason is whatever the first failed probe saw, and the swap passes through
    // three moments (the crashed plugin's stale socket, no socket, the impostor), so it is not asserted here; a later,
    // different reason updates the registered reason (checked above) without another event.
    assertEquals(1, s.taskEvents.stream().filter(e -> e.type().equals(TaskEvent.PLUGIN_UNHEALTHY)).count(),
        s.taskEvents.toString());

    http.close();
    serve(s, "1.0");
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    stopAllAndCheck();
  }

  @Test
  void nonCsiServerFromTheStart_neverRegisters_andTheRestartReasonSaysWhy() throws Exception {
    FaultHarness.Supervised s = start("nothttp", PluginKind.NODE);
    NonCsiServer http = NonCsiServer.start(s.socket());
    servers.add(http);
    s.hook.poststart(PoststartRequest.of());
    waiting().until(() -> !s.restarts.isEmpty());
    assertTrue(s.restarts.get(0).contains("not a CSI plugin"), s.restarts.get(0));
    assertEquals(List.of(), h.registrations(s));
    assertEquals(List.of(), h.events(s, PluginType.CSI_NODE));
    http.close();
    serve(s, "3.0");
    waiting().until(() -> h.registeredHealthy(s, "3.0"));
    stopAllAndCheck();
  }

  // ---- stop is always prompt ---------------------------------------------------------------------------------------

  static Stream<Arguments> faultsAtStop() {
    List<Arguments> a = new ArrayList<>();
    a.add(Arguments.of("a probe hung", (Consumer<MockCsiPlugin>) p -> p.hangProbes(true)));
    a.add(Arguments.of("answers slower than the deadline", (Consumer<MockCsiPlugin>) p -> p.setLatency(Duration.ofSeconds(3))));
    a.add(Arguments.of("crashed, stale socket", (Consumer<MockCsiPlugin>) MockCsiPlugin::crash));
    a.add(Arguments.of("stopped, no socket", (Consumer<MockCsiPlugin>) MockCsiPlugin::stop));
    a.add(Arguments.of("not ready", (Consumer<MockCsiPlugin>) p -> p.setReady(false)));
    a.add(Arguments.of("flapping", (Consumer<MockCsiPlugin>) p -> p.flap(Duration.ofMillis(30))));
    return a.stream();
  }

  @ParameterizedTest(name = "stop while {0}")
  @MethodSource("faultsAtStop")
  void stopDuringAFault_returnsPromptly_andDeregistersEverything(String label, Consumer<MockCsiPlugin> fault)
      throws Exception {
    FaultHarness.Supervised s = registered("stopper", PluginKind.MONOLITH, "1.0");
    MockCsiPlugin p = (MockCsiPlugin) servers.get(0);
    long probes = p.probeCount();
    fault.accept(p);
    if (p.isRunning()) {
      waiting().until(() -> p.probeCount() >= probes + 1); // the fault is in front of the supervisor now
    }
    stopAllAndCheck(); // what this test is about: prompt, everything deregistered, histories well-formed
  }

  @Test
  void stopWhileAwaitingReady_andWhileRegistering_isPrompt() throws Exception {
    FaultHarness.Supervised waitingOne = start("never", PluginKind.NODE);
    serve(h.plugin(waitingOne.socket(), PluginKind.NODE, "1.0").neverReady());
    waitingOne.hook.poststart(PoststartRequest.of());
    FaultHarness.Supervised registering = start("slowreg", PluginKind.MONOLITH);
    MockCsiPlugin slow = serve(h.plugin(registering.socket(), PluginKind.MONOLITH, "1.0"));
    registering.hook.poststart(PoststartRequest.of());
    waiting().until(() -> registering.hook.phase() != Phase.NEW && slow.probeCount() >= 1);
    slow.setLatency(Duration.ofSeconds(2)); // whatever it is doing now takes long
    waiting().until(() -> ((MockCsiPlugin) servers.get(0)).probeCount() >= 3);
    stopAllAndCheck(); // what this test is about: prompt, everything deregistered, histories well-formed
  }

  @Test
  void poststartAgain_afterARestartedTask_keepsOneSupervision() throws Exception {
    FaultHarness.Supervised s = registered("restarted", PluginKind.NODE, "1.0");
    MockCsiPlugin p = (MockCsiPlugin) servers.get(0);
    p.stop(); // the task is restarted by its runner: prestart and poststart again
    s.hook.prestart(dev.csisupervisor.supervisor.PrestartRequest.withEnv(java.util.Map.of()));
    serve(s, "1.0");
    s.hook.poststart(PoststartRequest.of());
    waiting().until(() -> h.registeredHealthy(s, "1.0"));
    assertEquals(1, s.count(TaskEvent.PLUGIN_REGISTERED));
    assertTrue(kinds(s, PluginType.CSI_NODE).stream().filter(k -> k == Kind.REGISTERED).count() == 1);
    stopAllAndCheck();
  }
}
