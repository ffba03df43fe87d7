package dev.csisupervisor.agent;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.logging.AgentLogging;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Agent#reload}: plugins added, replaced and removed while the agent runs. */
class AgentReloadTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir Path dir;
  private final List<MockCsiPlugin> plugins = new ArrayList<>();
  private Agent agent;

  @AfterEach
  void tearDown() {
    if (agent != null) {
      agent.close();
    }
    plugins.forEach(MockCsiPlugin::close);
  }

  private Path ext(String name, MockMode mode) throws Exception {
    Path socket = dir.resolve(name + "/csi.sock");
    plugins.add(MockCsiPlugin.builder().socket(socket).mode(mode).name(name)
        .createParentDirs(true).build().start());
    return socket;
  }

  private Path write(String yaml) throws Exception {
    Path f = dir.resolve("agent.yaml");
    Files.writeString(f, "data_dir: data\nmetrics_address: off\n"
        + "defaults: {probe_interval: 200ms}\n" + yaml);
    return f;
  }

  private boolean healthy(PluginType t, String name) {
    return agent.registry().find(t, name).map(p -> p.health().healthy()).orElse(false);
  }

  @Test
  void reload_appliesNewLogLevels_withoutRestart_andRejectsBadOnes() throws Exception {
    Path file = write("plugins: []\n");
    agent = Agent.create(ConfigLoader.load(file));
    agent.start();
    org.slf4j.Logger registryLog = org.slf4j.LoggerFactory.getLogger("dev.csisupervisor.registry.X");
    try {
      agent.reloadFromFile(); // the file's (default) levels, whatever ran before in this JVM
      assertFalse(registryLog.isDebugEnabled());

      write("plugins: []\nlog:\n  levels:\n    dev.csisupervisor.registry: debug\n");
      List<String> changes = agent.reloadFromFile();
      assertTrue(changes.contains("log level of dev.csisupervisor.registry: debug (was the default)"),
          changes.toString());
      assertTrue(registryLog.isDebugEnabled());

      write("plugins: []\nlog:\n  level: loud\n");
      ConfigException e = assertThrows(ConfigException.class, agent::reloadFromFile);
      assertTrue(e.getMessage().contains("log.level: \"loud\" is not a log level"), e.getMessage());
      assertTrue(registryLog.isDebugEnabled(), "a rejected file changes nothing");
    } finally {
      AgentLogging.apply(LogSettings.DEFAULT);
    }
  }

  @Test
  void reload_addsReplacesAndRemovesPlugins() throws Exception {
    Path a = ext("a", MockMode.MONOLITH);
    Path b = ext("b", MockMode.NODE);
    Path file = write("plugins:\n  - {id: a, type: node, socket: " + a + "}\n");
    agent = Agent.create(ConfigLoader.load(file));
    agent.start();
    await().atMost(WAIT).until(() -> healthy(PluginType.CSI_NODE, "a"));
    List<PluginEvent> seen = Collections.synchronizedList(new ArrayList<>());
    for (PluginType t : PluginType.values()) {
      agent.registry().subscribe(t, new PluginListener() {
        @Override
        public void onEvent(PluginEvent e) {
          seen.add(e);
        }
      }, Runnable::run);
    }

    write("plugins:\n  - {id: a, type: monolith, socket: " + a + "}\n"
        + "  - {id: b, type: node, socket: " + b + "}\n");
    List<String> changes = agent.reloadFromFile();
    assertEquals(List.of("a: replaced (its type, socket, probe or restart settings changed)",
        "b: added"), changes);
    await().atMost(WAIT).until(() -> healthy(PluginType.CSI_CONTROLLER, "a")
        && healthy(PluginType.CSI_NODE, "a") && healthy(PluginType.CSI_NODE, "b"));
    synchronized (seen) {
      assertEquals(PluginEvent.Kind.DEREGISTERED, seen.get(0).kind(), seen.toString());
    }
    assertEquals(2, agent.currentConfig().plugins().size());

    write("plugins:\n  - {id: b, type: node, socket: " + b + "}\nlog_max_files: 7\n");
    assertEquals(List.of("settings outside plugins changed: they take effect when the agent is"
        + " restarted", "a: removed"), agent.reloadFromFile());
    await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_NODE, "a").isEmpty()
        && agent.registry().find(PluginType.CSI_CONTROLLER, "a").isEmpty());
    assertTrue(agent.task("a").isEmpty());
    assertTrue(healthy(PluginType.CSI_NODE, "b"), "untouched");
    write("plugins:\n  - {id: b, type: node, socket: " + b + "}\n");
    assertEquals(List.of("no plugin changed"), agent.reloadFromFile());

    write("plugins:\n  - {id: b, type: nodes, socket: " + b + "}\n");
    ConfigException bad = assertThrows(ConfigException.class, agent::reloadFromFile);
    assertTrue(bad.getMessage().contains("plugins[0].type"), bad.getMessage());
    assertTrue(healthy(PluginType.CSI_NODE, "b"), "an invalid file changes nothing");

    agent.close();
    AgentConfig cfg = agent.config();
    assertThrows(IllegalStateException.class, () -> agent.reload(cfg));
  }

  @Test
  void reload_ofALaunchedPluginsArgs_marksItUnhealthyAtOnce_thenHealthyOnTheNewProcess()
      throws Exception {
    // A long probe interval: without the mark, the old registration would stay "healthy" for
    // up to a minute after its process was told to go.
    String plugin = "plugins:\n  - {id: m, type: node, command: builtin:mock-plugin,"
        + " probe_interval: 1m, args: [--type, node, --vendor-version, %s]}\n";
    Path file = write(String.format(plugin, "1.0.0"));
    agent = Agent.create(ConfigLoader.load(file));
    agent.start();
    await().atMost(WAIT).until(() -> healthy(PluginType.CSI_NODE, "m"));
    long pid = agent.task("m").orElseThrow().pid();

    write(String.format(plugin, "2.0.0"));
    assertEquals(List.of("m: updated"), agent.reloadFromFile());
    // The health as read when it was not healthy (the new process may be healthy by a second read).
    var replacing = await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_NODE, "m").orElseThrow()
        .health(), h -> !h.healthy());
    assertTrue(replacing.message().contains("stopping pid " + pid), replacing.toString());
    await().atMost(WAIT).until(() -> healthy(PluginType.CSI_NODE, "m")
        && agent.registry().find(PluginType.CSI_NODE, "m").orElseThrow().version()
            .equals("2.0.0"));
  }

  @Test
  void removedAndAddedBackWithinTheGrace_theNewProcessKeepsItsRecord() throws Exception {
    // Ignores SIGTERM: its stop takes the whole 2 s grace.
    String plugin = "plugins:\n  - {id: s, type: node, command: /bin/sh, health_timeout: 0s,"
        + " args: [-c, \"trap '' TERM; while :; do sleep 1; done\"]}\n";
    Path file = write("shutdown_grace: 2s\n" + plugin);
    agent = Agent.create(ConfigLoader.load(file));
    agent.start();
    await().atMost(WAIT).until(() -> agent.task("s").orElseThrow().pid() != 0);
    long first = agent.task("s").orElseThrow().pid();
    Path records = agent.config().processesFile();

    write("shutdown_grace: 2s\nplugins: []\n");
    assertEquals(List.of("s: removed"), agent.reloadFromFile());
    write("shutdown_grace: 2s\n" + plugin);
    assertEquals(List.of("s: added"), agent.reloadFromFile());

    await().atMost(WAIT).until(() -> {
      long pid = agent.task("s").orElseThrow().pid();
      return pid != 0 && pid != first;
    });
    long second = agent.task("s").orElseThrow().pid();
    assertTrue(ProcessHandle.of(first).map(h -> !h.isAlive()).orElse(true),
        "the old process went first");
    // The old task's stop completed before (or after) the new launch: either way the record of
    // the new process stays, so a crash of the agent now would re-attach to it.
    assertEquals(second, dev.csisupervisor.tasks.process.ProcessRecords.read(records).get("s")
        .pid());
  }
}
