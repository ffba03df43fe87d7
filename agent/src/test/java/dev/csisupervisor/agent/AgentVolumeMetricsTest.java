package dev.csisupervisor.agent;

import static dev.csisupervisor.agent.TestPlugins.FAST;
import static dev.csisupervisor.agent.TestPlugins.QUICK;
import static dev.csisupervisor.agent.TestPlugins.WAIT;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.volumes.MountedVolume;
import dev.csisupervisor.volumes.VolumeClaim;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent's volume metrics: its manager's events counted by kind, and the volumes with a lost mount. */
class AgentVolumeMetricsTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);

  @TempDir Path dir;
  private final TestAgents agents = new TestAgents();
  private MockCsiPlugin plugin;

  @AfterEach
  void tearDown() {
    agents.close();
    if (plugin != null) {
      plugin.close();
    }
  }

  /** An agent supervising an in-process mock monolith {@code disk} (external), ready; its mounts verified or not. */
  private Agent start(boolean verifyMounts) throws Exception {
    Path socket = dir.resolve("ext/csi.sock");
    plugin = MockCsiPlugin.builder().socket(socket).mode(MockMode.MONOLITH).allCapabilities().createParentDirs(true)
        .build().start();
    PluginSpec spec = new PluginSpec("disk", PluginKind.MONOLITH, null, List.of(), Map.of(), socket, FAST, QUICK);
    Agent agent = agents.start(new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"), null, false,
        java.time.Duration.ofSeconds(5), 1 << 20, 1, List.of(spec)).withVolumeVerifyMounts(verifyMounts));
    await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_NODE, "disk")
        .map(p -> p.health().healthy()).orElse(false));
    return agent;
  }

  private static MountedVolume mount(Agent agent, String volume, String alloc) throws Exception {
    return agent.volumes().mount(new VolumeClaim("disk", volume, alloc, RWO, false, Map.of(), Map.of(),
        Secrets.none())).get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  private static String create(Agent agent, String name) throws Exception {
    return agent.volumes().create("disk", name, Optional.empty(), List.of(RWO), Map.of(), Secrets.none())
        .get(WAIT.toSeconds(), TimeUnit.SECONDS).volumeId();
  }

  @Test
  void mountsWithoutVerification_areCounted_andNoneIsLost() throws Exception {
    Agent agent = start(false);
    String volume = create(agent, "data");

    mount(agent, volume, "web-1");
    mount(agent, volume, "web-1"); // the same claim again: the recorded path is believed

    // Counted on the thread that emits the event, which may be a moment after the future completes.
    await().atMost(WAIT).until(() -> agent.metrics().scrape().contains(
        "csi_agent_volume_events_total{kind=\"MOUNTED\"} 1.0"));
    String scrape = agent.metrics().scrape();
    assertTrue(scrape.contains("csi_agent_volumes_lost 0.0"), scrape);
    assertFalse(scrape.contains("kind=\"LOST\""), scrape);
  }

  @Test
  void aTargetTheMountTableDoesNotHave_isCountedLostThenRemounted() throws Exception {
    // The mock plugin mounts nothing: with the mount table verified, its published target is never a mount
    // point, so the same claim mounted again finds it lost and has it published again.
    Agent agent = start(true);
    String volume = create(agent, "data");
    mount(agent, volume, "web-1");

    MountedVolume again = mount(agent, volume, "web-1");

    assertEquals("web-1", again.allocId());
    await().atMost(WAIT).until(() -> agent.metrics().scrape().contains(
        "csi_agent_volume_events_total{kind=\"REMOUNTED\"} 1.0"));
    String scrape = agent.metrics().scrape();
    assertTrue(scrape.contains("csi_agent_volume_events_total{kind=\"LOST\"} 1.0"), scrape);
    assertTrue(scrape.contains("csi_agent_volumes_lost 0.0"), "published again: " + scrape);
  }
}
