package dev.csisupervisor.agent;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.cli.AdminClient;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.discovery.DiscoveryDir;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent's discovery directory with in-process mock plugins on real unix sockets. */
class AgentDiscoveryTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir Path data;
  private Path discovery;
  private final List<MockCsiPlugin> plugins = new ArrayList<>();
  private final TestAgents agents = new TestAgents();

  @BeforeEach
  void setUp() throws Exception {
    discovery = Files.createTempDirectory(Path.of("/tmp"), "d");
  }

  @AfterEach
  void tearDown() throws Exception {
    agents.close();
    plugins.forEach(MockCsiPlugin::close);
    FileTrees.deleteQuietly(discovery);
  }

  private MockCsiPlugin plugin(String file, MockMode mode) throws Exception {
    MockCsiPlugin p = MockCsiPlugin.builder().socket(discovery.resolve(file)).mode(mode)
        .name(file + ".csi.dev").build().start();
    plugins.add(p);
    return p;
  }

  private static boolean healthy(Agent a, PluginType t, String name) {
    return a.registry().find(t, name).map(p -> p.health().healthy()).orElse(false);
  }

  @Test
  void socketsInTheDiscoveryDir_areRegisteredByKind_andDeregisteredWhenGone() throws Exception {
    plugin("n.sock", MockMode.NODE);
    plugin("m.sock", MockMode.MONOLITH);
    PluginSpec configured = new PluginSpec("cfg", PluginKind.CONTROLLER,
        ConfigLoader.BUILTIN_MOCK_PLUGIN, List.of("--type", "controller"), Map.of(),
        null, TestPlugins.FAST, TestPlugins.QUICK);
    AgentConfig cfg = new AgentConfig(null, data, data.resolve("csi"),
        data.resolve("agent.sock"), null, false, Duration.ofSeconds(5), 1 << 20, 1, List.of())
        .withDiscoveryDir(discovery);
    Agent agent = agents.start(cfg);

    await().atMost(WAIT).until(() -> healthy(agent, PluginType.CSI_NODE, "n")
        && healthy(agent, PluginType.CSI_CONTROLLER, "m")
        && healthy(agent, PluginType.CSI_NODE, "m"));
    PluginInfo n = agent.registry().find(PluginType.CSI_NODE, "n").orElseThrow();
    assertEquals("discovered-n", n.allocId());
    assertEquals(discovery.resolve("n.sock"), n.socketPath());
    assertTrue(agent.registry().find(PluginType.CSI_CONTROLLER, "n").isEmpty(),
        "a node plugin is not a controller");
    TaskStatus t = agent.task("m").orElseThrow();
    assertTrue(t.discovered());
    assertEquals(PluginKind.MONOLITH, t.kind());
    assertEquals(TaskStatus.ProcessState.EXTERNAL, t.processState());

    // A later one, and one whose id a configured plugin takes after a reload.
    plugin("late.sock", MockMode.CONTROLLER);
    await().atMost(WAIT).until(() -> healthy(agent, PluginType.CSI_CONTROLLER, "late"));
    assertEquals(List.of("cfg: added"), agent.reload(cfg.withPlugins(List.of(configured))));

    try (AdminClient client = AdminClient.connect(cfg.adminSocket())) {
      GetAgentStatusResponse s = client.status();
      assertEquals(discovery.toString(), s.getDiscoveryDir());
      assertEquals(3, s.getDiscoveredSocketsCount(), s.toString());
      assertTrue(s.getDiscoveredSocketsList().stream().allMatch(d ->
          d.getState().equals("supervised")), s.toString());
      assertTrue(s.getTasksList().stream().anyMatch(x -> x.getId().equals("late")
          && x.getDiscovered() && x.getKind().equals("controller")), s.toString());
      var details = client.getPluginDetails(dev.csisupervisor.admin.v1.PluginType.CSI_NODE, "m")
          .orElseThrow();
      assertTrue(details.getTask().getDiscovered(), details.toString());
    }
    assertTrue(agent.metrics().scrape().contains(
        "csi_agent_discovered_sockets{state=\"supervised\"} 3.0"), agent.metrics().scrape());

    plugins.get(0).close();
    Files.deleteIfExists(discovery.resolve("n.sock"));
    await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_NODE, "n").isEmpty());
    assertTrue(agent.task("n").isEmpty());
    // Listeners run on their own thread: the event may arrive a moment after the change.
    await().atMost(WAIT).until(() -> agents.sawEvent(e -> e.pluginId().equals("n")
        && e.type().equals(DiscoveryDir.REMOVED)));
    agent.close();
    assertTrue(agent.registry().find(PluginType.CSI_NODE, "m").isEmpty(),
        "deregistered when the agent stops");
    assertTrue(plugins.get(1).isRunning(), "but never stopped: it is not the agent's");
  }
}
