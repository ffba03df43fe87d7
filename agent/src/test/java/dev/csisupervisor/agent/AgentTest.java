package dev.csisupervisor.agent;

import static dev.csisupervisor.agent.TestPlugins.FAST;
import static dev.csisupervisor.agent.TestPlugins.QUICK;
import static dev.csisupervisor.agent.TestPlugins.WAIT;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.agent.TaskStatus.ProcessState;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.config.ProbeSettings;
import dev.csisupervisor.tasks.process.RestartPolicy;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.supervisor.TaskEvent;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent in this JVM; its plugins are real child processes or in-process mock plugins. */
class AgentTest {

  @TempDir Path dir;
  private final TestAgents agents = new TestAgents();
  private final List<Long> pids = new ArrayList<>();

  @AfterEach
  void tearDown() {
    agents.close();
    pids.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
  }

  private AgentConfig config(boolean leaveRunning, PluginSpec... plugins) {
    return new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"), null,
        leaveRunning, Duration.ofSeconds(5), 1 << 20, 1, List.of(plugins));
  }

  private static PluginSpec mock(String id, PluginKind kind, ProbeSettings probe,
      RestartPolicy restart, String... extraArgs) {
    List<String> args = new ArrayList<>(List.of("--type", kind.dirName(),
        "--name", id + ".csi.dev"));
    args.addAll(List.of(extraArgs));
    return new PluginSpec(id, kind, ConfigLoader.BUILTIN_MOCK_PLUGIN, args, Map.of(), null,
        probe, restart);
  }

  /** Listeners run on their own thread: an event may arrive a moment after the state it reports. */
  private boolean sawEvent(String pluginId, String type) {
    await().atMost(Duration.ofSeconds(10)).until(() -> sawEventNow(pluginId, type));
    return true;
  }

  private boolean sawEventNow(String pluginId, String type) {
    return agents.sawEvent(e -> e.pluginId().equals(pluginId) && e.type().equals(type));
  }

  @Test
  void neverReadyPlugin_isRestartedAfterHealthTimeout() throws Exception {
    ProbeSettings shortTimeout = new ProbeSettings(Duration.ofMillis(1500),
        Duration.ofMillis(200), Duration.ofSeconds(1), Duration.ofMillis(20),
        Duration.ofMillis(200));
    Agent agent = agents.start(config(false, mock("stuck", PluginKind.NODE, shortTimeout, QUICK,
        "--never-ready")));
    await().atMost(WAIT).until(() -> agent.task("stuck").orElseThrow().restarts() >= 1);
    assertTrue(sawEvent("stuck", TaskEvent.PLUGIN_UNHEALTHY));
    assertTrue(sawEvent("stuck", AgentEvent.RESTART_REQUESTED));
    assertTrue(sawEvent("stuck", AgentEvent.PROCESS_EXITED));
    assertTrue(agent.registry().list(PluginType.CSI_NODE).isEmpty());
    assertTrue(agent.metrics().scrape().contains("csi_agent_plugin_restarts_total{plugin=\"stuck\"}"),
        agent.metrics().scrape());
  }

  @Test
  void missingCommand_failModeGivesUp() throws Exception {
    PluginSpec bad = new PluginSpec("ghost", PluginKind.CONTROLLER, "/no/such/plugin",
        List.of(), Map.of(), null, FAST, new RestartPolicy(1, Duration.ofMinutes(1),
            Duration.ofMillis(10), RestartPolicy.Mode.FAIL));
    Agent agent = agents.start(config(false, bad));
    await().atMost(WAIT).until(() ->
        agent.task("ghost").orElseThrow().processState() == ProcessState.FAILED);
    assertTrue(sawEvent("ghost", AgentEvent.START_FAILED));
    assertTrue(sawEvent("ghost", AgentEvent.NOT_RESTARTING));
    assertTrue(agents.sawEvent(e -> e.message().contains("/no/such/plugin")),
        agents.events().toString());
  }

  @Test
  void externalPlugin_isSupervisedButNotLaunched() throws Exception {
    Path socket = dir.resolve("ext/csi.sock");
    try (MockCsiPlugin ext = MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE)
        .name("ext.csi.dev").createParentDirs(true).build().start()) {
      PluginSpec spec = new PluginSpec("ext", PluginKind.NODE, null, List.of(), Map.of(), socket,
          FAST, QUICK);
      Agent agent = agents.start(config(false, spec));
      await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_NODE, "ext")
          .map(p -> p.health().healthy()).orElse(false));
      TaskStatus t = agent.task("ext").orElseThrow();
      assertEquals(ProcessState.EXTERNAL, t.processState());
      assertFalse(t.launched());
      assertEquals(socket, agent.registry().find(PluginType.CSI_NODE, "ext").orElseThrow()
          .socketPath());
      agent.close();
      assertTrue(ext.isRunning(), "the agent never stops an external plugin");
      assertTrue(Files.exists(socket), "nor removes its socket");
    }
  }

  @Test
  void leaveRunning_keepsPluginsAndRegistrations_forTheNextStart() throws Exception {
    AgentConfig cfg = config(true, mock("keep", PluginKind.CONTROLLER, FAST, QUICK));
    Agent first = agents.start(cfg);
    await().atMost(WAIT).until(() -> first.registry().find(PluginType.CSI_CONTROLLER, "keep")
        .map(p -> p.health().healthy()).orElse(false));
    long pid = first.task("keep").orElseThrow().pid();
    pids.add(pid);
    // Event sequences are persisted: the next agent's registry numbers on from the last one here.
    EventCount firstRun = EventCount.subscribe(first, PluginType.CSI_CONTROLLER);
    first.close();
    long lastSequenceOfFirstRun = firstRun.lastSequence();
    assertTrue(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false),
        "left running");

    // The registry only exists once start() has run, and start() re-attaches the plugin: an event
    // may come before any subscription. The subscription's snapshot sequence counts those too, so
    // every event of the second run is accounted for, whether it came before or after subscribing.
    Agent second = agents.start(cfg);
    EventCount secondRun = EventCount.subscribe(second, PluginType.CSI_CONTROLLER);
    TaskStatus t = second.task("keep").orElseThrow();
    assertTrue(t.reattached());
    assertEquals(pid, t.pid(), "re-attached, not launched again");
    await().atMost(WAIT).until(() -> second.registry().find(PluginType.CSI_CONTROLLER, "keep")
        .map(p -> !p.restored()).orElse(false));
    List<PluginInfo> all = second.registry().listAll(PluginType.CSI_CONTROLLER);
    assertEquals(1, all.size(), "confirmed, not duplicated: " + all);
    // Exactly one event, the confirmation (UPDATED, restored=false), and nothing more for a while:
    // a spurious REGISTERED, DEREGISTERED or UPDATED, early or late, makes the count 2 or more.
    await().atMost(WAIT).during(Duration.ofMillis(500)).until(
        () -> secondRun.lastSequence() - lastSequenceOfFirstRun == 1);
    assertTrue(secondRun.seen().stream().allMatch(e -> e.kind() == PluginEvent.Kind.UPDATED
            && !e.plugin().restored() && e.plugin().name().equals("keep")),
        "a confirmation is not a new registration: " + secondRun.seen());
  }

  /**
   * Every event of one type in an agent's registry since its start: those before subscribing as a
   * count (the snapshot sequence), the later ones as received.
   */
  private record EventCount(Subscription subscription, List<PluginEvent> seen) {
    static EventCount subscribe(Agent agent, PluginType type) {
      List<PluginEvent> seen = new CopyOnWriteArrayList<>();
      Subscription s = agent.registry().subscribe(type, seen::add, Runnable::run);
      return new EventCount(s, seen);
    }

    /** The sequence of the last event so far (they are numbered without gaps). */
    long lastSequence() {
      return subscription.snapshotSequence() + seen.size();
    }
  }

  @Test
  void secondAgentOnSameDataDir_failsClearly() throws Exception {
    agents.start(config(false));
    Agent other = agents.create(config(false));
    AgentException e = assertThrows(AgentException.class, other::start);
    assertTrue(e.getMessage().contains("locked by another process"), e.getMessage());
  }

  @Test
  void metricsAddressInUse_failsTheStart_beforeAnyPluginIsLaunched() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), taken.getLocalPort());
      AgentConfig config = new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"), address, false,
          Duration.ofSeconds(5), 1 << 20, 1, List.of(mock("early", PluginKind.NODE, FAST, QUICK)));
      Agent agent = agents.create(config);
      AgentException e = assertThrows(AgentException.class, agent::start);
      assertTrue(e.getMessage().contains(":" + taken.getLocalPort()), e.getMessage());
      assertFalse(agents.sawEvent(ev -> ev.type().equals(AgentEvent.PROCESS_STARTED)), agents.events().toString());
      assertFalse(Files.exists(dir.resolve("csi/node/early")), "no plugin directory was prepared");
    }
  }

  @Test
  void startTwice_isRejected() throws Exception {
    Agent a = agents.start(config(false));
    assertThrows(IllegalStateException.class, a::start);
    a.close();
    a.close();
  }
}
