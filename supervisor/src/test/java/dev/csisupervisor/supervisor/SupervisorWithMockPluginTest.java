package dev.csisupervisor.supervisor;

import org.awaitility.core.ConditionFactory;
import org.awaitility.Awaitility;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook.Phase;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Supervision against real mock plugins over real unix sockets, on a real 2-thread scheduler.
 * Awaitility waits for conditions; nothing sleeps.
 */
class SupervisorWithMockPluginTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private Path root;
  private ScheduledExecutorService scheduler;
  private PluginRegistry registry;
  private CsiPluginSupervisor supervisor;
  private final List<PluginEvent> events = new CopyOnWriteArrayList<>();
  private final List<TaskEvent> taskEvents = new CopyOnWriteArrayList<>();
  private final List<String> restarts = new CopyOnWriteArrayList<>();
  private final List<MockCsiPlugin> plugins = new ArrayList<>();
  private final List<CsiPluginSupervisorHook> hooks = new ArrayList<>();

  @BeforeEach
  void setUp() throws IOException {
    // Short paths: the unix socket limit is 107 bytes.
    root = Files.createTempDirectory(Path.of("/tmp"), "sv");
    scheduler = Executors.newScheduledThreadPool(2);
    registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
    PluginListener recorder = events::add;
    registry.subscribe(PluginType.CSI_CONTROLLER, recorder, Runnable::run);
    registry.subscribe(PluginType.CSI_NODE, recorder, Runnable::run);
    supervisor = CsiPluginSupervisor.builder().csiRoot(root).registry(registry)
        .scheduler(scheduler).build();
  }

  @AfterEach
  void tearDown() throws Exception {
    hooks.forEach(h -> h.stop(StopRequest.because("test done")));
    for (Process child : children) {
      child.destroyForcibly();
      child.waitFor(10, TimeUnit.SECONDS);
    }
    plugins.forEach(MockCsiPlugin::close);
    supervisor.close();
    registry.close();
    scheduler.shutdownNow();
    scheduler.awaitTermination(5, TimeUnit.SECONDS);
    FileTrees.deleteQuietly(root);
  }

  private CsiPluginSupervisorHook hook(CsiPluginConfig config) throws IOException {
    CsiPluginSupervisorHook hook = supervisor.hook(
        new TaskContext("alloc-" + config.pluginId(), "plugin"), config, taskEvents::add,
        restarts::add);
    hooks.add(hook);
    hook.prestart(PrestartRequest.withEnv(Map.of()));
    return hook;
  }

  private MockCsiPlugin plugin(MockCsiPlugin.Builder builder) throws IOException {
    MockCsiPlugin p = builder.start();
    plugins.add(p);
    return p;
  }

  private long count(PluginEvent.Kind kind) {
    return events.stream().filter(e -> e.kind() == kind).count();
  }

  @Test
  void readyAfterDelay_registersWithRealFingerprint() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("ctl", PluginKind.CONTROLLER)
        .build());
    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.CONTROLLER)
        .name("ctl.csi.dev").vendorVersion("3.1.4").readyAfter(Duration.ofMillis(300)));
    hook.poststart(PoststartRequest.of());

    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);
    PluginEvent registered = events.get(0);
    assertEquals(PluginType.CSI_CONTROLLER, registered.type());
    assertEquals("3.1.4", registered.plugin().version());
    assertEquals("ctl.csi.dev", registered.plugin().fingerprint().name());
    assertTrue(registered.plugin().fingerprint().pluginCapabilities().stream()
        .anyMatch(c -> c.contains("CONTROLLER_SERVICE")), registered.plugin().toString());
    // The hook learns of the commit after the registry's listeners do.
    await().atMost(WAIT).until(() -> hook.phase() == Phase.REGISTERED);
  }

  @Test
  void socketAppearingLate_isSeenByTheWatchNotTheBackoff() throws Exception {
    // Backoff of 60 s: only the socket watch can explain a registration within seconds.
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("late", PluginKind.NODE)
        .initialBackoff(Duration.ofSeconds(60)).maxBackoff(Duration.ofSeconds(60)).build());
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> taskEvents.isEmpty() && hook.phase() == Phase.AWAITING_READY);
    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.NODE));
    await().atMost(Duration.ofSeconds(10)).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);
    assertEquals(PluginType.CSI_NODE, events.get(0).type());
  }

  @Test
  void socketPresentButRefusingAtFirst_registersOnceThePluginAccepts() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("stale", PluginKind.NODE)
        .build());
    // A stale socket file: bound once, nobody accepting any more.
    try (ServerSocketChannel ch = ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
      ch.bind(UnixDomainSocketAddress.of(hook.socketPath()));
    }
    assertTrue(Files.exists(hook.socketPath()));
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> hook.phase() == Phase.AWAITING_READY);
    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.NODE));
    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);
  }

  @Test
  void crashThenRestartWithNewVersion_unhealthyThenUpdated() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("mono", PluginKind.MONOLITH)
        .probeInterval(Duration.ofMillis(100)).build());
    MockCsiPlugin first = plugin(MockCsiPlugin.builder().socket(hook.socketPath())
        .mode(MockMode.MONOLITH).vendorVersion("1.0.0"));
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.REGISTERED) == 2);

    first.crash();
    await().atMost(WAIT).until(() -> taskEvents.stream()
        .anyMatch(e -> e.type().equals(TaskEvent.PLUGIN_UNHEALTHY)));
    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.UPDATED) == 2);
    assertFalse(registry.find(PluginType.CSI_NODE, "mono").orElseThrow().health().healthy());
    assertEquals(0, count(PluginEvent.Kind.DEREGISTERED), "registration kept while unhealthy");

    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.MONOLITH)
        .vendorVersion("2.0.0"));
    await().atMost(WAIT).until(() -> registry.find(PluginType.CSI_NODE, "mono")
        .map(p -> p.health().healthy() && p.version().equals("2.0.0")).orElse(false));
    await().atMost(WAIT).until(() -> registry.find(PluginType.CSI_CONTROLLER, "mono")
        .map(p -> p.health().healthy() && p.version().equals("2.0.0")).orElse(false));
    assertEquals(1, taskEvents.stream()
        .filter(e -> e.type().equals(TaskEvent.PLUGIN_UNHEALTHY)).count());
  }

  @Test
  void neverReadyPlugin_healthTimeoutRequestsRestart() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("stuck", PluginKind.NODE)
        .healthTimeout(Duration.ofMillis(500)).build());
    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.NODE).neverReady());
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> !restarts.isEmpty());
    assertTrue(restarts.get(0).contains("did not become ready within 500ms"), restarts.get(0));
    assertTrue(restarts.get(0).contains("not ready"), restarts.get(0));
    assertEquals(0, events.size());
  }

  @Test
  void hungProbe_hitsDeadlineAndRetries() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("hang", PluginKind.NODE)
        .probeTimeout(Duration.ofMillis(200)).build());
    MockCsiPlugin p = plugin(MockCsiPlugin.builder().socket(hook.socketPath())
        .mode(MockMode.NODE));
    p.hangProbes(true);
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> p.probeCount() >= 3);
    assertEquals(Phase.AWAITING_READY, hook.phase());
    p.hangProbes(false);
    await().atMost(WAIT).until(() -> hook.phase() == Phase.REGISTERED);
  }

  @Test
  void stopRemovesTheRegistrationAndTheLeftoverSocket() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("gone", PluginKind.NODE).build());
    MockCsiPlugin p = plugin(MockCsiPlugin.builder().socket(hook.socketPath())
        .mode(MockMode.NODE));
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);
    p.crash();
    assertTrue(Files.exists(hook.socketPath()), "crash leaves the socket");
    hook.stop(StopRequest.because("task exited"));
    assertEquals(1, count(PluginEvent.Kind.DEREGISTERED));
    assertFalse(Files.exists(hook.socketPath()));
    assertTrue(registry.list(PluginType.CSI_NODE).isEmpty());
  }

  // ---- issue 11: supervision that keeps its promises with real drivers ------------------------

  @Test
  void probeWithoutReadyField_registersHealthy_endToEnd() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("noready", PluginKind.NODE)
        .build());
    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.NODE)
        .omitReadyField());
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);
    assertTrue(registry.find(PluginType.CSI_NODE, "noready").orElseThrow().health().healthy());
    await().atMost(WAIT).until(hook::healthy); // set once the hook learns of the commit, after the listeners
  }

  @Test
  void nodeOnlyDriverConfiguredAsMonolith_registersItsNodeHalf() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("half", PluginKind.MONOLITH)
        .build());
    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.NODE));
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> hook.phase() == Phase.REGISTERED);
    // Listeners and task events are told on their own threads: awaited, then checked that nothing else came.
    await().atMost(WAIT).until(() -> !events.isEmpty() && taskEvents.stream().anyMatch(e -> e.type()
        .equals(TaskEvent.PLUGIN_PARTIAL) && e.message().contains("controller half not registered")));
    assertEquals(List.of(PluginType.CSI_NODE), events.stream().map(PluginEvent::type).toList());
    assertTrue(restarts.isEmpty());
  }

  @Test
  void controllerConfiguredDriverWithoutControllerService_failsNamingTheCapability()
      throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("noctl", PluginKind.CONTROLLER)
        .build());
    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.CONTROLLER)
        .name("nodeonly.csi.dev").pluginCapabilities(new int[0]));
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> taskEvents.stream()
        .anyMatch(e -> e.type().equals(TaskEvent.PLUGIN_FAILED)));
    TaskEvent failed = taskEvents.stream().filter(e -> e.type().equals(TaskEvent.PLUGIN_FAILED))
        .findFirst().orElseThrow();
    assertTrue(failed.message().startsWith("plugin noctl (driver nodeonly.csi.dev 1.0.0) is"
        + " configured as a controller but does not advertise the CONTROLLER_SERVICE plugin"
        + " capability"), failed.message());
    assertEquals(0, events.size());
  }

  @Test
  void externalSocketInADirectoryCreatedLate_isSeenByTheWatch_notTheBackoff() throws Exception {
    Path socket = root.resolve("ext/a/b/csi.sock");
    // Backoff of 60 s: only the socket watch (from the nearest existing ancestor) can explain a
    // registration within seconds of the plugin's start.
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("ext", PluginKind.NODE)
        .externalSocket(socket).initialBackoff(Duration.ofSeconds(60))
        .maxBackoff(Duration.ofSeconds(60)).build());
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> hook.phase() == Phase.AWAITING_READY);
    Files.createDirectories(socket.getParent());
    plugin(MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE));
    await().atMost(Duration.ofSeconds(10)).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);
  }

  @Test
  void externalPluginRestartedAfterRegistration_isReFingerprinted_beforeTheSteadyTick()
      throws Exception {
    Path socket = root.resolve("ext2/csi.sock");
    Files.createDirectories(socket.getParent());
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("ext2", PluginKind.NODE)
        .externalSocket(socket).probeInterval(Duration.ofMinutes(10)).build());
    MockCsiPlugin first = plugin(MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE)
        .vendorVersion("1.0.0"));
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);
    first.stop();
    plugin(MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE).vendorVersion("2.0.0"));
    // The steady tick is 10 minutes away: only the re-appeared socket explains this.
    await().atMost(Duration.ofSeconds(10)).until(() -> registry.find(PluginType.CSI_NODE, "ext2")
        .map(p -> p.version().equals("2.0.0") && p.health().healthy()).orElse(false));
  }

  /** A real external plugin process, killed with SIGKILL: its socket file stays, so the watch sees nothing. */
  @Test
  void externalPluginKilledWithSigkill_isUnhealthyAtOnce_andHealthyAgainOnceRestarted_farBeforeTheTick()
      throws Exception {
    Path socket = root.resolve("ext3/csi.sock");
    Files.createDirectories(socket.getParent());
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("ext3", PluginKind.NODE)
        .externalSocket(socket).probeInterval(Duration.ofMinutes(10)).healthTimeout(Duration.ofMinutes(30))
        .build());
    Process first = launchPlugin(socket);
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);

    first.destroyForcibly(); // SIGKILL
    assertTrue(first.waitFor(10, TimeUnit.SECONDS));
    assertTrue(Files.exists(socket), "a killed plugin leaves its socket file");
    // The steady tick is 10 minutes away: only the lost connection explains this.
    await().atMost(Duration.ofSeconds(10)).until(() -> count(PluginEvent.Kind.UPDATED) == 1);
    assertFalse(registry.find(PluginType.CSI_NODE, "ext3").orElseThrow().health().healthy());
    assertFalse(hook.healthy());

    launchPlugin(socket);
    await().atMost(Duration.ofSeconds(10)).until(() -> hook.healthy());
    assertTrue(registry.find(PluginType.CSI_NODE, "ext3").orElseThrow().health().healthy());
  }

  private final List<Process> children = new ArrayList<>();

  /** The mock plugin as its own JVM, as an operator runs a driver; returns once it serves. */
  private Process launchPlugin(Path socket) throws IOException {
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"), MockCsiPlugin.class.getName(),
        "--endpoint", "unix://" + socket, "--type", "node", "--name", "ext3.csi.dev")
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    children.add(p);
    String line = new BufferedReader(new InputStreamReader(p.getInputStream(),
        StandardCharsets.UTF_8)).readLine();
    assertEquals("READY-TO-SERVE " + socket, line);
    return p;
  }

  @Test
  void driverHangingAfterRegistration_isRestartedAfterHealthTimeout() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("hangs", PluginKind.NODE)
        .healthTimeout(Duration.ofMillis(800)).probeInterval(Duration.ofMillis(100))
        .probeTimeout(Duration.ofMillis(200)).build());
    plugin(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.NODE)
        .hangProbesAfterReady(Duration.ofMillis(300)));
    hook.poststart(PoststartRequest.of());
    await().atMost(WAIT).until(() -> count(PluginEvent.Kind.REGISTERED) == 1);
    await().atMost(WAIT).until(() -> !restarts.isEmpty());
    assertTrue(restarts.get(0).contains("after registration"), restarts.get(0));
    assertEquals(Phase.REGISTERED, hook.phase());
    assertFalse(registry.find(PluginType.CSI_NODE, "hangs").orElseThrow().health().healthy(),
        "kept, as unhealthy, while the task restarts");
  }

  /** Awaitility polling from the first moment and every 10 ms (by default it waits 100 ms before it first looks). */
  private static ConditionFactory await() {
    return Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10));
  }
}
