package dev.csisupervisor.agent;

import static dev.csisupervisor.agent.TestPlugins.WAIT;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.admin.v1.GetPluginResponse;
import dev.csisupervisor.cli.AdminClient;
import dev.csisupervisor.cli.Format;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.tasks.resources.ResourceLimits;
import dev.csisupervisor.client.PluginKind;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** CPU and memory of launched plugins: samples, metrics, the admin API, limits. */
class AgentResourcesTest {
  @TempDir Path dir;
  private final TestAgents agents = new TestAgents();

  @AfterEach
  void tearDown() {
    agents.close();
  }

  @Test
  void pluginOverItsMemoryLimit_isRestarted_andItsUseIsShown() throws Exception {
    PluginSpec hog = new PluginSpec("hog", PluginKind.NODE, ConfigLoader.BUILTIN_MOCK_PLUGIN,
        List.of("--type", "node", "--name", "hog"), Map.of(), null, TestPlugins.FAST,
        TestPlugins.QUICK).withLimits(new ResourceLimits(1 << 20, 0,
            Duration.ofMillis(200)));
    PluginSpec calm = new PluginSpec("calm", PluginKind.CONTROLLER,
        ConfigLoader.BUILTIN_MOCK_PLUGIN, List.of("--type", "controller", "--name", "calm"),
        Map.of(), null, TestPlugins.FAST, TestPlugins.QUICK);
    AgentConfig cfg = new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"),
        null, false, Duration.ofSeconds(5), 1 << 20, 1, List.of(hog, calm))
        .withResources(Duration.ofMillis(100), 50);
    Agent agent = agents.start(cfg);

    await().atMost(WAIT).until(() -> agent.task("hog").orElseThrow().limitRestarts() >= 1
        && agent.task("hog").orElseThrow().restarts() >= 1);
    // Listeners run on their own thread: the event may arrive a moment after the restart.
    await().atMost(WAIT).until(() -> agents.sawEvent(e -> e.pluginId().equals("hog")
        && e.type().equals(AgentEvent.LIMIT_EXCEEDED)
        && e.message().contains("over the limit of 1.0 MiB for")));
    assertTrue(agent.metrics().scrape().contains(
        "csi_agent_resource_limit_restarts_total{plugin=\"hog\",resource=\"memory\"}"),
        agent.metrics().scrape());

    // The plugin without limits keeps running and is measured.
    await().atMost(WAIT).until(() -> agent.task("calm").orElseThrow().latestResources()
        .map(s -> s.cpuKnown() && s.memoryBytes() > (1 << 20)).orElse(false));
    assertEquals(0, agent.task("calm").orElseThrow().restarts());
    String scrape = agent.metrics().scrape();
    assertTrue(scrape.contains("csi_agent_plugin_memory_bytes{plugin=\"calm\"}"), scrape);
    assertTrue(scrape.contains("csi_agent_plugin_cpu_percent{plugin=\"calm\"}"), scrape);
    assertTrue(agent.task("calm").orElseThrow().resources().size() <= 50, "bounded history");

    await().atMost(WAIT).until(() -> agent.registry()
        .find(dev.csisupervisor.registry.PluginType.CSI_CONTROLLER, "calm").isPresent());
    try (AdminClient client = AdminClient.connect(cfg.adminSocket())) {
      GetPluginResponse r = client.getPluginDetails(
          dev.csisupervisor.admin.v1.PluginType.CSI_CONTROLLER, "calm").orElseThrow();
      assertTrue(r.getTask().getResources().hasLatest(), r.toString());
      assertTrue(r.getTask().getResources().getLatest().getMemoryBytes() > 0);
      StringWriter out = new StringWriter();
      Format.task(new PrintWriter(out, true), r.getTask());
      assertTrue(out.toString().contains("memory:") && out.toString().contains("MiB")
          && out.toString().contains("samples since"), out.toString());
      var status = client.status();
      var hogStatus = status.getTasksList().stream().filter(t -> t.getId().equals("hog"))
          .findFirst().orElseThrow();
      assertEquals(1 << 20, hogStatus.getResources().getMaxMemoryBytes());
      assertTrue(hogStatus.getResources().getLimitRestarts() >= 1);
    }
  }
}
