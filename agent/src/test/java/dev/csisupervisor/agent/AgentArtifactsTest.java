package dev.csisupervisor.agent;

import static dev.csisupervisor.agent.TestPlugins.FAST;
import static dev.csisupervisor.agent.TestPlugins.QUICK;
import static dev.csisupervisor.agent.TestPlugins.WAIT;
import static dev.csisupervisor.testing.TestArchives.file;
import static dev.csisupervisor.testing.TestArchives.sha256;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.agent.TaskStatus.ProcessState;
import dev.csisupervisor.testing.ArtifactServer;
import dev.csisupervisor.testing.TestArchives;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.tasks.artifact.ArtifactSpec;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.tasks.resources.ResourceLimits;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginType;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Plugins launched from artifacts served by a loopback HTTP server started here. */
class AgentArtifactsTest {

  @TempDir Path dir;
  private ArtifactServer server;
  private final TestAgents agents = new TestAgents();

  @BeforeEach
  void setUp() throws Exception {
    server = new ArtifactServer();
  }

  @AfterEach
  void tearDown() {
    agents.close();
    server.close();
  }

  private AgentConfig config(PluginSpec... plugins) {
    return new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"), null,
        false, Duration.ofSeconds(5), 1 << 20, 1, List.of(plugins));
  }

  /** A shell script that runs the bundled mock plugin with this vendor version. */
  static String mockPluginScript(PluginKind kind, String name, String version) {
    PluginSpec builtin = new PluginSpec("x", kind, ConfigLoader.BUILTIN_MOCK_PLUGIN,
        List.of("--type", kind.dirName(), "--name", name, "--vendor-version",
            version), Map.of(), null, FAST, QUICK);
    String argv = PluginTask.commandLine(builtin, null).stream()
        .map(a -> "'" + a.replace("'", "'\\''") + "'").collect(Collectors.joining(" "));
    return "#!/bin/sh\nexec " + argv + " \"$@\"\n";
  }

  static PluginSpec artifactPlugin(String id, PluginKind kind, URI url, byte[] content,
      String entry) {
    return new PluginSpec(id, kind, null, List.of(), Map.of(), null, FAST, QUICK,
        new ArtifactSpec(url, sha256(content), ArtifactSpec.Unpack.TAR_GZ, entry,
            Duration.ofSeconds(20), 2), ResourceLimits.NONE);
  }

  /** Listeners run on their own thread: an event may arrive a moment after the state it reports. */
  private boolean sawEvent(String pluginId, String type, String text) {
    await().atMost(Duration.ofSeconds(10)).until(() -> sawEventNow(pluginId, type, text));
    return true;
  }

  private boolean sawEventNow(String pluginId, String type, String text) {
    return agents.sawEvent(e -> e.pluginId().equals(pluginId) && e.type().equals(type)
        && e.message().contains(text));
  }

  private static boolean registered(Agent a, PluginType t, String name, String version) {
    return a.registry().find(t, name)
        .map(p -> p.health().healthy() && p.version().equals(version)).orElse(false);
  }

  private List<String> pluginDirs() throws Exception {
    try (Stream<Path> s = Files.list(dir.resolve("plugins"))) {
      return s.map(p -> p.getFileName().toString()).filter(n -> !n.equals(".downloads"))
          .sorted().toList();
    }
  }

  @Test
  void artifactPlugin_runsFromItsVerifiedRevision_andANewRevisionUpdatesItsRegistration()
      throws Exception {
    byte[] v1 = TestArchives.tarGz(List.of(
        file("bin/plugin", mockPluginScript(PluginKind.NODE, "art.csi.dev", "1.0"), 0755)));
    byte[] v2 = TestArchives.tarGz(List.of(
        file("bin/plugin", mockPluginScript(PluginKind.NODE, "art.csi.dev", "2.0"), 0755)));
    server.serve("/art-1.tgz", v1).serve("/art-2.tgz", v2);
    PluginSpec first = artifactPlugin("art", PluginKind.NODE, server.url("/art-1.tgz"), v1,
        "bin/plugin");
    AgentConfig cfg = config(first);
    Agent agent = agents.start(cfg);
    await().atMost(WAIT).until(() -> registered(agent, PluginType.CSI_NODE, "art", "1.0"));
    String rev1 = "art_" + sha256(v1).substring(0, 12);
    TaskStatus t1 = agent.task("art").orElseThrow();
    assertEquals(rev1, t1.revision());
    assertTrue(sawEvent("art", AgentEvent.ARTIFACT_READY, rev1));
    assertEquals(List.of(rev1), pluginDirs());
    try (Stream<Path> s = Files.list(dir.resolve("plugins/.downloads"))) {
      assertEquals(0, s.count(), "the downloaded archive is removed");
    }

    List<PluginEvent> seen = Collections.synchronizedList(new ArrayList<>());
    agent.registry().subscribe(PluginType.CSI_NODE, new PluginListener() {
      @Override
      public void onEvent(PluginEvent e) {
        seen.add(e);
      }
    }, Runnable::run);
    PluginSpec second = first.withArtifact(new ArtifactSpec(server.url("/art-2.tgz"),
        sha256(v2), ArtifactSpec.Unpack.TAR_GZ, "bin/plugin", Duration.ofSeconds(20), 2));
    List<String> changes = agent.reload(cfg.withPlugins(List.of(second)));
    String rev2 = "art_" + sha256(v2).substring(0, 12);
    assertEquals(List.of("art: updated (new artifact revision " + rev2 + ")"), changes);

    await().atMost(WAIT).until(() -> registered(agent, PluginType.CSI_NODE, "art", "2.0"));
    TaskStatus t2 = agent.task("art").orElseThrow();
    assertEquals(rev2, t2.revision());
    assertTrue(t2.pid() != t1.pid(), "restarted on the new revision");
    assertTrue(sawEvent("art", AgentEvent.RESTARTING_FOR_UPDATE, "new revision " + rev2));
    synchronized (seen) {
      assertTrue(seen.stream().anyMatch(e -> e.kind() == PluginEvent.Kind.UPDATED
          && e.plugin().version().equals("2.0")), "the registration is UPDATED: " + seen);
      assertTrue(seen.stream().noneMatch(e -> e.kind() == PluginEvent.Kind.DEREGISTERED
          || e.kind() == PluginEvent.Kind.REGISTERED), "not replaced: " + seen);
    }
    // The old revision stays until the new one has answered a probe, then goes.
    await().atMost(WAIT).until(() -> pluginDirs().equals(List.of(rev2)));
    assertTrue(agent.metrics().scrape().contains(
        "csi_agent_artifact_downloads_total{plugin=\"art\"} 2.0"), agent.metrics().scrape());
  }

  @Test
  void wrongChecksum_failsThatPluginOnly_andItsFileIsNeverRun() throws Exception {
    Path marker = dir.resolve("marker");
    byte[] evil = TestArchives.tarGz(List.of(
        file("bin/plugin", "#!/bin/sh\ntouch " + marker + "\n", 0755)));
    server.serve("/evil.tgz", evil);
    PluginSpec bad = new PluginSpec("bad", PluginKind.NODE, null, List.of(), Map.of(), null,
        FAST, QUICK, new ArtifactSpec(server.url("/evil.tgz"), sha256(new byte[] {1}),
            ArtifactSpec.Unpack.TAR_GZ, "bin/plugin", Duration.ofSeconds(20), 3),
        ResourceLimits.NONE);
    PluginSpec good = new PluginSpec("good", PluginKind.CONTROLLER,
        ConfigLoader.BUILTIN_MOCK_PLUGIN, List.of("--type", "controller", "--name", "good"),
        Map.of(), null, FAST, QUICK);
    AgentConfig cfg = config(bad, good);
    Agent agent = agents.start(cfg);
    await().atMost(WAIT).until(() ->
        agent.task("bad").orElseThrow().processState() == ProcessState.FAILED);
    await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_CONTROLLER, "good")
        .map(p -> p.health().healthy()).orElse(false));
    TaskStatus b = agent.task("bad").orElseThrow();
    assertTrue(b.artifactError().contains("checksum mismatch for " + server.url("/evil.tgz")),
        b.artifactError());
    assertTrue(sawEvent("bad", AgentEvent.ARTIFACT_FAILED, "checksum mismatch"));
    assertTrue(agent.metrics().scrape().contains(
        "csi_agent_artifact_failures_total{plugin=\"bad\",reason=\"checksum\"} 1.0"),
        agent.metrics().scrape());
    assertEquals(1, server.requests("/evil.tgz"), "a wrong checksum is not retried");
    assertTrue(agent.registry().find(PluginType.CSI_NODE, "bad").isEmpty());
    assertFalse(Files.exists(marker), "the file with the wrong checksum never ran");
    assertFalse(Files.exists(dir.resolve("plugins/bad_" + sha256(new byte[] {1})
        .substring(0, 12))));

    // A new artifact that cannot be fetched leaves the running plugin alone.
    long pid = agent.task("good").orElseThrow().pid();
    PluginSpec broken = good.withArtifact(new ArtifactSpec(server.url("/missing.tgz"),
        sha256(evil), ArtifactSpec.Unpack.TAR_GZ, "bin/plugin", Duration.ofSeconds(20), 3));
    agent.reload(cfg.withPlugins(List.of(bad, broken)));
    await().atMost(WAIT).until(() -> agent.task("good").orElseThrow().artifactError() != null);
    TaskStatus g = agent.task("good").orElseThrow();
    assertTrue(g.artifactError().contains("HTTP 404"), g.artifactError());
    assertEquals(pid, g.pid(), "still the old process");
    assertEquals(ProcessState.RUNNING, g.processState());
    assertTrue(sawEvent("good", AgentEvent.ARTIFACT_FAILED, "keeps running its command"));
    assertTrue(agent.registry().find(PluginType.CSI_CONTROLLER, "good").orElseThrow().health()
        .healthy());
  }
}
