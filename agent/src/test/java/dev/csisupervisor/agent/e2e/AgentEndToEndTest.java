package dev.csisupervisor.agent.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.admin.v1.TaskStatus;
import dev.csisupervisor.admin.v1.WatchEventsResponse;
import dev.csisupervisor.cli.AdminClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent as a real child process with a config of mock plugins (child processes of the agent):
 * registration, the CLI, events through a plugin crash and restart, SIGKILL of the agent and a
 * restart that restores, confirms and reconciles, then a graceful SIGTERM.
 */
class AgentEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;
  private final List<Process> processes = new ArrayList<>();
  private final List<Long> pluginPids = new ArrayList<>();

  @AfterEach
  void cleanUp() throws InterruptedException {
    AgentProcesses.stop(processes);
    for (long pid : pluginPids) {
      ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  private Path config(boolean withMonolith) throws Exception {
    StringBuilder y = new StringBuilder();
    y.append("data_dir: ").append(dir.resolve("d")).append('\n');
    y.append("metrics_address: 127.0.0.1:0\n");
    y.append("shutdown_grace: 5s\n");
    y.append("defaults:\n  probe_interval: 200ms\n  health_timeout: 30s\n");
    y.append("  restart: {attempts: 3, interval: 1m, delay: 200ms}\n");
    y.append("plugins:\n");
    plugin(y, "c1", "controller");
    plugin(y, "n1", "node");
    if (withMonolith) {
      plugin(y, "m1", "monolith");
    }
    Path f = dir.resolve(withMonolith ? "agent.yaml" : "agent-less.yaml");
    Files.writeString(f, y.toString());
    return f;
  }

  private static void plugin(StringBuilder y, String id, String type) {
    y.append("  - id: ").append(id).append("\n    type: ").append(type)
        .append("\n    command: builtin:mock-plugin\n    args: [--type, ").append(type)
        .append(", --name, ").append(id).append(".csi.dev]\n");
  }

  private Process startAgent(Path config, String name) throws Exception {
    Process p = Cli.start(dir, name, "run", "--config", config.toString());
    processes.add(p);
    return p;
  }

  private Path socket() {
    return dir.resolve("d/agent.sock");
  }

  private GetAgentStatusResponse status() throws Exception {
    try (AdminClient c = AdminClient.connect(socket())) {
      return c.status();
    }
  }

  private List<Plugin> plugins() throws Exception {
    try (AdminClient c = AdminClient.connect(socket())) {
      return c.listPlugins(PluginType.PLUGIN_TYPE_UNSPECIFIED);
    }
  }

  /** Every registration (all instances), from a watch's snapshots. */
  private List<Plugin> allRegistrations() throws Exception {
    try (AdminClient c = AdminClient.connect(socket())) {
      Iterator<WatchEventsResponse> it = c.watch(PluginType.PLUGIN_TYPE_UNSPECIFIED);
      List<Plugin> all = new ArrayList<>();
      all.addAll(it.next().getSnapshot().getPluginsList());
      all.addAll(it.next().getSnapshot().getPluginsList());
      return all;
    }
  }

  private Map<String, TaskStatus> tasks() throws Exception {
    Map<String, TaskStatus> m = new HashMap<>();
    for (TaskStatus t : status().getTasksList()) {
      m.put(t.getId(), t);
    }
    return m;
  }

  private boolean allHealthy(int registrations) {
    try {
      List<Plugin> ps = plugins();
      return ps.size() == registrations && ps.stream().allMatch(p -> p.getHealth().getHealthy()
          && !p.getRestored());
    } catch (Exception e) {
      return false; // not up yet
    }
  }

  @Test
  void agent_runsPlugins_survivesCrashes_andRestartsFromItsState() throws Exception {
    Path config = config(true);
    Process agent = startAgent(config, "agent1");

    // All registered: a monolith counts once per type.
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> allHealthy(4));
    Map<String, TaskStatus> before = tasks();
    before.values().forEach(t -> pluginPids.add(t.getPid()));
    assertEquals(3, before.size());
    assertTrue(before.values().stream().allMatch(t -> t.getProcessState().equals("running")));
    assertTrue(Cli.read(dir.resolve("agent1.out")).contains("csi-agent running: admin socket "
        + socket()));

    // The CLI lists them.
    Cli.Result list = Cli.run(dir, WAIT, "plugins", "--json", "--config", config.toString());
    assertEquals(0, list.code(), list.toString());
    JsonNode listed = JSON.readTree(list.out()).get("plugins");
    assertEquals(4, listed.size(), list.out());
    List<String> names = new ArrayList<>();
    listed.forEach(p -> names.add(p.get("type").asText() + "/" + p.get("name").asText()));
    assertEquals(List.of("controller/c1", "controller/m1", "node/m1", "node/n1"),
        names);
    Cli.Result one = Cli.run(dir, WAIT, "plugin", "controller", "c1", "--admin-socket",
        socket().toString());
    assertEquals(0, one.code(), one.toString());
    assertTrue(one.out().contains("CREATE_DELETE_VOLUME"), "shows the fingerprint: " + one);

    // Metrics are served.
    String metrics = scrape(Cli.read(dir.resolve("agent1.out")));
    assertTrue(metrics.contains("csi_agent_plugins{healthy=\"true\",type=\"node\"} 2"), metrics);
    assertTrue(metrics.contains("csi_agent_registry_events_total"), metrics);
    assertTrue(metrics.contains("csi_agent_probe_seconds_count{plugin=\"n1\"}"), metrics);
    assertTrue(metrics.contains("csi_agent_state_commit_seconds"), metrics);

    // Offline tools refuse while the agent holds the state file; so does a second agent.
    Cli.run(dir, WAIT, "state", "inspect", "--data-dir", dir.resolve("d").toString())
        .assertExit(1, "is locked");
    Cli.run(dir, WAIT, "run", "--config", config.toString()).assertExit(1,
        "locked by another process");
    assertTrue(agent.isAlive());

    // events --follow sees a plugin crash: unhealthy, restart, healthy again.
    Process follow = Cli.start(dir, "follow", "events", "--follow", "--json", "--type", "node",
        "--admin-socket", socket().toString());
    processes.add(follow);
    await().atMost(WAIT).until(() -> Cli.read(dir.resolve("follow.out")).contains("snapshot"));
    long n1 = before.get("n1").getPid();
    ProcessHandle.of(n1).orElseThrow().destroyForcibly();
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> {
      List<JsonNode> events = nodeEvents("n1");
      int unhealthy = indexOf(events, false, 0);
      return unhealthy >= 0 && indexOf(events, true, unhealthy + 1) > 0;
    });
    TaskStatus restarted = tasks().get("n1");
    assertEquals(1, restarted.getRestarts());
    assertTrue(restarted.getPid() != n1 && restarted.getPid() != 0);
    pluginPids.add(restarted.getPid());

    // SIGKILL the agent: its plugins keep running, its state stays.
    agent.destroyForcibly();
    assertTrue(agent.waitFor(30, TimeUnit.SECONDS));
    assertTrue(follow.waitFor(30, TimeUnit.SECONDS), "events --follow ends with the agent");
    assertEquals(1, follow.exitValue());
    assertTrue(Cli.read(dir.resolve("follow.err")).contains("went away"),
        Cli.read(dir.resolve("follow.err")));
    Map<String, Long> pids = Map.of("c1", before.get("c1").getPid(), "n1", restarted.getPid(),
        "m1", before.get("m1").getPid());
    pids.values().forEach(pid -> assertTrue(alive(pid), "plugin pid " + pid + " still runs"));

    // Restart without m1: c1 and n1 are re-attached and confirmed, m1 is stopped and
    // reconciled away, nothing is duplicated.
    Process agent2 = startAgent(config(false), "agent2");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> allHealthy(2));
    Map<String, TaskStatus> after = tasks();
    assertEquals(2, after.size());
    assertTrue(after.get("c1").getReattached());
    assertEquals(pids.get("c1"), after.get("c1").getPid(), "no second copy launched");
    assertEquals(pids.get("n1"), after.get("n1").getPid());
    await().atMost(WAIT).until(() -> !alive(pids.get("m1")));
    List<Plugin> all = allRegistrations();
    assertEquals(List.of("CSI_CONTROLLER/c1/agent-c1", "CSI_NODE/n1/agent-n1"),
        all.stream().map(p -> p.getType() + "/" + p.getName() + "/" + p.getAllocId()).sorted()
            .toList());
    String log2 = Cli.read(dir.resolve("agent2.err"));
    assertTrue(log2.contains("registry restored 4 registration(s)"), log2);
    assertTrue(log2.contains("plugin=m1 is no longer configured"), log2);
    assertTrue(log2.contains("reconciled away 2 registration(s)"), log2);
    assertTrue(log2.contains("re-attached to running pid " + pids.get("c1")), log2);

    // SIGTERM: plugins stopped, deregistered, nothing left to re-attach to.
    agent2.destroy();
    assertTrue(agent2.waitFor(30, TimeUnit.SECONDS));
    pids.values().forEach(pid -> assertFalse(alive(pid), "plugin pid " + pid + " stopped"));
    String records = Files.readString(dir.resolve("d/processes.json"));
    assertFalse(records.contains("\"pid\""), records);
    Cli.Result offline = Cli.run(dir, WAIT, "state", "inspect", "--data-dir",
        dir.resolve("d").toString());
    assertEquals(0, offline.code(), offline.toString());
    assertTrue(offline.out().contains("0 registration(s) in total"), offline.toString());
    assertFalse(Files.exists(socket()), "admin socket removed");
  }

  @Test
  void demo_runsToCompletion() throws Exception {
    Cli.Result r = Cli.run(dir, Duration.ofSeconds(120), "demo", "--fast");
    assertEquals(0, r.code(), r.toString());
    assertTrue(r.out().contains("all plugins registered"), r.toString());
    assertTrue(r.out().contains("UNHEALTHY"), r.toString());
    assertTrue(r.out().contains("demo-node is back"), r.toString());
    // The agent itself killed and coming back.
    assertTrue(r.out().contains("killed the agent (exit 137); its plugins are still running"),
        r.toString());
    assertTrue(r.out().contains("processes re-attached (same pids"), r.toString());
    assertTrue(r.out().contains("2 registrations: no duplicate"), r.toString());
    assertTrue(r.out().contains("stopped its plugins and exited 0"), r.toString());
    assertTrue(r.out().contains("demo finished"), r.toString());
  }

  // ---- helpers -----------------------------------------------------------------------------

  /** The follow output's events for one plugin, in order. */
  private List<JsonNode> nodeEvents(String name) throws Exception {
    List<JsonNode> out = new ArrayList<>();
    for (String line : Cli.read(dir.resolve("follow.out")).split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      JsonNode m = JSON.readTree(line);
      if (m.has("event") && m.get("event").get("plugin").get("name").asText().equals(name)) {
        out.add(m.get("event"));
      }
    }
    return out;
  }

  private static int indexOf(List<JsonNode> events, boolean healthy, int from) {
    for (int i = from; i < events.size(); i++) {
      JsonNode e = events.get(i);
      if (e.get("kind").asText().equals("UPDATED")
          && e.get("plugin").get("health").get("healthy").asBoolean() == healthy) {
        return i;
      }
    }
    return -1;
  }

  private static boolean alive(long pid) {
    return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
  }

  private static String scrape(String agentOut) throws Exception {
    Matcher m = Pattern.compile("metrics (http://\\S+/metrics)").matcher(agentOut);
    assertTrue(m.find(), agentOut);
    HttpResponse<String> r = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create(m.group(1))).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    return r.body();
  }
}
