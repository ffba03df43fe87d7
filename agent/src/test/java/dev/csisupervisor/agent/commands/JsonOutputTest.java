package dev.csisupervisor.agent.commands;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.agent.Agent;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.catalog.testing.EtcdProcess;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.testing.ShortTempDir;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every command's {@code --json} prints JSON (one object, or one per line for {@code events}) and nothing else, against
 * a real agent with {@code cluster:} on a real etcd; and the words of two answers operators met: an unmount of a
 * volume the alloc never had, and a mount for a plugin id the agent does not know.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class JsonOutputTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static ShortTempDir tmp;
  private static EtcdProcess etcd;
  private static MockCsiPlugin plugin;
  private static Agent agent;
  private static String socket;
  private static String config;

  @BeforeAll
  static void start() throws Exception {
    EtcdProcess.assumeInstalled();
    tmp = new ShortTempDir("jsonout");
    etcd = EtcdProcess.start(tmp.path());
    Path sock = tmp.resolve("disk/csi.sock");
    plugin = MockCsiPlugin.builder().socket(sock).mode(MockMode.MONOLITH).allCapabilities().createParentDirs(true)
        .nodeId("n1").cloud(tmp.resolve("cloud"), Duration.ofMillis(10)).build().start();
    Path file = tmp.resolve("agent.yaml");
    Files.writeString(file, """
        data_dir: %s
        metrics_address: off
        defaults:
          probe_interval: 200ms
        volumes:
          verify_mounts: false
        plugins:
          - id: disk
            type: monolith
            socket: %s
        cluster:
          endpoints: [%s]
          node_id: n1
        """.formatted(tmp.resolve("data"), sock, etcd.endpoint()));
    config = file.toString();
    ConfigLoader.Sections s = ConfigLoader.loadSections(file);
    agent = Agent.create(s.agent());
    agent.start();
    agent.cluster().apply(s.cluster());
    socket = s.agent().adminSocket().toString();
    await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_CONTROLLER, "disk")
        .map(p -> p.health().healthy()).orElse(false)
        && agent.clusterNode().map(n -> n.status().connected() && n.controller().leading().contains("disk"))
            .orElse(false));
  }

  @AfterAll
  static void stop() {
    if (agent != null) {
      agent.close();
    }
    if (plugin != null) {
      plugin.close();
    }
    if (etcd != null) {
      etcd.close();
    }
    if (tmp != null) {
      tmp.close();
    }
  }

  private record Result(int code, String out, String err) {}

  private static Result csiAgent(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = CsiAgentCommand.commandLine(new PrintWriter(out, true), new PrintWriter(err, true), args)
        .execute(args);
    return new Result(code, out.toString(), err.toString());
  }

  /** Runs {@code args} and checks it exits 0 and printed JSON only; returns the (first) object. */
  private static JsonNode json(String... args) throws Exception {
    Result r = csiAgent(args);
    String line = String.join(" ", args);
    assertEquals(0, r.code(), line + ": " + r.out() + r.err());
    assertTrue(!r.out().isBlank(), line + " printed nothing");
    ObjectMapper m = new ObjectMapper();
    if (args[0].equals("events")) {
      JsonNode first = null;
      for (String l : r.out().split("\n")) {
        JsonNode n = m.readTree(l);
        first = first == null ? n : first;
      }
      return first;
    }
    try {
      return m.readTree(r.out());
    } catch (Exception e) {
      throw new AssertionError(line + " printed no JSON:\n" + r.out(), e);
    }
  }

  @Test
  void everyCommandsJson_isJson() throws Exception {
    String s = "--admin-socket=" + socket;
    String e = "--endpoints=" + etcd.endpoint();
    json("plugins", "--json", s);
    json("plugin", "node", "disk", "--json", s);
    json("status", "--json", s);
    json("events", "--json", s);
    json("reload", "--json", "--config", config);
    String local = json("volume", "create", "--plugin", "disk", "--name", "local-1", "--size", "1MiB", "--json", s)
        .path("volume_id").asText();
    json("volume", "delete", "--plugin", "disk", "--volume", local, "--json", s);

    JsonNode created = json("cluster", "volume", "create", "disk", "web-data", "--size", "1MiB", "--json", e);
    String volume = created.path("volume").path("volume").asText();
    assertTrue(!volume.isEmpty(), created.toString());
    json("cluster", "volume", "create", "disk", "later", "--size", "1MiB", "--wait", "0", "--json", e);
    json("cluster", "volume", "cancel", "create", "disk", "later", "--json", e);
    json("volume", "mount", "--plugin", "disk", "--volume", volume, "--alloc", "web-1", "--json", s);
    json("volume", "list", "--json", s);
    json("volume", "stats", "--plugin", "disk", "--volume", volume, "--json", s);
    json("volume", "expand", "--plugin", "disk", "--volume", volume, "--size", "2MiB", "--json", s);
    json("cluster", "plugins", "--json", e);
    json("cluster", "plugin", "disk", "--json", e);
    json("cluster", "nodes", "--json", e);
    json("cluster", "volume", "list", "--json", e);
    json("cluster", "volume", "status", "--json", e);
    json("volume", "unmount", "--plugin", "disk", "--volume", volume, "--alloc", "web-1", "--json", s);
    json("volume", "release", "--alloc", "web-1", "--json", s);
    json("volume", "gc", "--json", s);
    json("cluster", "volume", "register", "disk", "disk-7", "--no-validate", "--json", e);
    json("cluster", "volume", "snapshot", "list", "--json", e);
    json("cluster", "volume", "deregister", "disk", "disk-7", "--json", e);
    json("cluster", "volume", "detach", "--node", "gone", "--force", "--json", e);
    await().atMost(WAIT).ignoreExceptions().until(() ->
        json("cluster", "volume", "delete", "disk", volume, "--json", e).path("deleted").asBoolean());
  }

  @Test
  void unmountOfAVolumeTheAllocNeverHad_saysSo_andExitsZero() {
    Result r = csiAgent("volume", "unmount", "--plugin", "disk", "--volume", "never", "--alloc", "a",
        "--admin-socket=" + socket);
    assertEquals(0, r.code(), r.err());
    assertEquals("volume never of plugin disk was not mounted for alloc a on this node: nothing to unmount\n",
        r.out());
  }

  @ParameterizedTest
  @ValueSource(strings = {"mount --volume v --alloc a", "create --name n", "delete --volume v",
      "expand --volume v --size 2GiB"})
  void aPluginIdTheAgentDoesNotKnow_isRefusedAtOnce_namingItsPlugins(String command) {
    // NOT_FOUND from the agent's own look at its plugins, not the manager's PLUGIN_UNAVAILABLE after mount_wait.
    List<String> args = new java.util.ArrayList<>(List.of("volume"));
    args.addAll(List.of(command.split(" ")));
    args.addAll(List.of("--plugin", "nosuch", "--admin-socket=" + socket));
    Result r = csiAgent(args.toArray(String[]::new));
    assertEquals(1, r.code(), r.out());
    assertTrue(r.err().endsWith("answered NOT_FOUND: no plugin nosuch on this agent: its config does not name it, none"
        + " is registered and its discovery directory has not shown one (its plugins: disk)\n"), r.err());
  }
}
