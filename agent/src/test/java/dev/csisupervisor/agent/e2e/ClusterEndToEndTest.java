package dev.csisupervisor.agent.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.admin.v1.TaskStatus;
import dev.csisupervisor.cli.AdminClient;
import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.ClusterEvent;
import dev.csisupervisor.catalog.ClusterSnapshot;
import dev.csisupervisor.catalog.ClusterView;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.testing.EtcdProcess;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real agents (child JVMs, each with its own data dir, node id and mock plugin processes) publishing to one
 * real etcd; the cluster view and the {@code csi-agent cluster} CLI reading it.
 */
class ClusterEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final int TTL_SECONDS = 3;
  private static final String PREFIX = "/e2e";
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;
  private final List<Process> processes = new ArrayList<>();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void cleanUp() throws Exception {
    AgentProcesses.stop(processes);
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private Path config(String node, String endpoint, String pluginType) throws Exception {
    StringBuilder y = new StringBuilder();
    y.append("data_dir: ").append(dir.resolve(node)).append('\n');
    y.append("metrics_address: 127.0.0.1:0\n");
    y.append("shutdown_grace: 5s\n");
    y.append("defaults:\n  probe_interval: 200ms\n  health_timeout: 30s\n");
    // A crashed plugin is restarted after 5 s: long enough to see it unhealthy in the cluster, with a CLI started
    // after the view saw it (a JVM, on a loaded machine).
    y.append("  restart: {attempts: 3, interval: 1m, delay: 5s}\n");
    if (pluginType == null) {
      y.append("plugins: []\n");
    } else {
      y.append("plugins:\n  - id: ebs\n    type: ").append(pluginType)
          .append("\n    command: builtin:mock-plugin\n    args: [--type, ").append(pluginType)
          .append(", --name, ebs.csi.dev, --node-id, ").append(node).append("]\n");
    }
    y.append("cluster:\n  endpoints: [").append(endpoint).append("]\n  node_id: ").append(node)
        .append("\n  prefix: ").append(PREFIX).append("\n  lease_ttl: ").append(TTL_SECONDS).append("s\n");
    Path f = dir.resolve(node + ".yaml");
    Files.writeString(f, y.toString());
    return f;
  }

  private Process startAgent(Path config, String name) throws Exception {
    Process p = Cli.start(dir, name, "run", "--config", config.toString());
    processes.add(p);
    return p;
  }

  private static String counts(ClusterSnapshot s, String name) {
    return s.plugin(name).map(p -> "c" + p.controllersHealthy() + "/" + p.controllersExpected() + " n"
        + p.nodesHealthy() + "/" + p.nodesExpected() + " entries=" + p.entries().size()).orElse("absent");
  }

  private static long pluginPid(Path dataDir) throws Exception {
    try (AdminClient c = AdminClient.connect(dataDir.resolve("agent.sock"))) {
      for (TaskStatus t : c.status().getTasksList()) {
        if (t.getId().equals("ebs")) {
          return t.getPid();
        }
      }
    }
    throw new AssertionError("no task ebs");
  }

  @Test
  void threeAgents_exactCounts_pluginCrash_kill9OfAnAgent_andItsRestart() throws Exception {
    EtcdProcess etcd = EtcdProcess.start(dir);
    closeables.add(etcd);
    String ep = etcd.endpoint();
    startAgent(config("a1", ep, "monolith"), "a1");
    startAgent(config("a2", ep, "node"), "a2");
    Path a3config = config("a3", ep, "node");
    Process a3 = startAgent(a3config, "a3");

    ClusterView view = ClusterView.builder().etcd(EtcdOptions.of(ep)).prefix(PREFIX).build();
    closeables.add(view);
    List<ClusterEvent> events = new CopyOnWriteArrayList<>();
    view.start();
    closeables.add(view.subscribe(events::add, Runnable::run));

    await().atMost(WAIT).pollInterval(Duration.ofMillis(100))
        .until(() -> counts(view.snapshot(), "ebs").equals("c1/1 n3/3 entries=4"));

    // The CLI, reading etcd directly.
    Cli.Result plugins = Cli.run(dir, WAIT, "cluster", "plugins", "--json", "--endpoints", ep, "--prefix", PREFIX);
    assertEquals(0, plugins.code(), plugins.toString());
    JsonNode ebs = JSON.readTree(plugins.out()).get("plugins").get(0);
    assertEquals("ebs", ebs.get("name").asText());
    assertEquals(List.of(1, 1, 3, 3), List.of(ebs.get("controllers_healthy").asInt(), ebs.get("controllers_expected").asInt(),
        ebs.get("nodes_healthy").asInt(), ebs.get("nodes_expected").asInt()), plugins.out());
    JsonNode fresh = JSON.readTree(plugins.out()).get("freshness");
    assertTrue(!fresh.get("stale").asBoolean() && fresh.get("revision").asLong() > 0
        && fresh.get("endpoint").asText().equals(ep), plugins.out());
    Cli.Result one = Cli.run(dir, WAIT, "cluster", "plugin", "ebs", "--config", dir.resolve("a1.yaml").toString());
    assertEquals(0, one.code(), one.toString());
    assertTrue(one.out().contains("ebs: controllers healthy 1/1, nodes healthy 3/3"), one.toString());
    assertTrue(one.out().contains("a2 ") && one.out().contains("agent-ebs"), one.toString());
    Cli.Result nodes = Cli.run(dir, WAIT, "cluster", "nodes", "--endpoints", ep, "--prefix", PREFIX);
    assertEquals(0, nodes.code(), nodes.toString());
    assertEquals(3, nodes.out().lines().filter(l -> l.matches("a[123] .*")).count(), nodes.toString());
    assertTrue(nodes.out().lines().findFirst().orElse("").matches("revision \\d+ from " + ep + ", confirmed \\d+s ago"),
        nodes.toString());
    Cli.Result missing = Cli.run(dir, WAIT, "cluster", "plugin", "nope", "--endpoints", ep, "--prefix", PREFIX);
    assertEquals(1, missing.code(), missing.toString());

    // A plugin crash on a2: unhealthy there (probe interval + publish lag), then healthy after its restart.
    long pid = pluginPid(dir.resolve("a2"));
    ProcessHandle.of(pid).orElseThrow().destroyForcibly();
    long crashed = System.nanoTime();
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> counts(view.snapshot(), "ebs").equals("c1/1 n2/3 entries=4"));
    long unhealthyMs = (System.nanoTime() - crashed) / 1_000_000;
    CatalogEntry a2 = view.snapshot().nodePlugins("a2").get(0);
    assertTrue(!a2.healthy() && !a2.healthMessage().isEmpty(), a2.toString());
    Cli.Result table = Cli.run(dir, WAIT, "cluster", "plugins", "--endpoints", ep, "--prefix", PREFIX);
    assertTrue(table.out().contains("a2 (node) since"), table.toString());
    await().atMost(WAIT).until(() -> counts(view.snapshot(), "ebs").equals("c1/1 n3/3 entries=4"));
    System.out.println("CLUSTER-E2E plugin-crash-unhealthy-in-view-ms " + unhealthyMs + " (probe interval 200 ms)");

    // kill -9 of agent a3: its entries go with its lease; its plugin process keeps running.
    a3.destroyForcibly();
    long killed = System.nanoTime();
    assertTrue(a3.waitFor(30, TimeUnit.SECONDS));
    await().atMost(Duration.ofSeconds(TTL_SECONDS + 2)).pollInterval(Duration.ofMillis(20))
        .until(() -> view.snapshot().nodePlugins("a3").isEmpty() && !view.snapshot().nodes().containsKey("a3"));
    long vanishMs = (System.nanoTime() - killed) / 1_000_000;
    assertEquals("c1/1 n2/2 entries=3", counts(view.snapshot(), "ebs"));

    // Restart with the same node id: back, re-attached to the running plugin, no duplicates.
    startAgent(a3config, "a3-again");
    long restarted = System.nanoTime();
    await().atMost(WAIT).pollInterval(Duration.ofMillis(50))
        .until(() -> counts(view.snapshot(), "ebs").equals("c1/1 n3/3 entries=4"));
    long backMs = (System.nanoTime() - restarted) / 1_000_000;
    assertEquals(1, view.snapshot().nodePlugins("a3").size());
    System.out.println("CLUSTER-E2E kill9-agent-vanish-ms " + vanishMs + " (lease ttl " + TTL_SECONDS + " s); restart-back-ms " + backMs);

    // etcd stopped for a while: the agents keep supervising (a1's plugin crashes and is restarted) and the
    // view, once etcd is back, shows what happened meanwhile.
    java.time.Instant before = view.snapshot().nodePlugins("a1").get(0).healthSince();
    etcd.stop();
    long a1Plugin = pluginPid(dir.resolve("a1"));
    ProcessHandle.of(a1Plugin).orElseThrow().destroyForcibly();
    await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).until(() -> {
      try (AdminClient c = AdminClient.connect(dir.resolve("a1/agent.sock"))) {
        return c.status().getTasksList().stream().anyMatch(t -> t.getId().equals("ebs") && t.getRestarts() == 1)
            && c.listPlugins(dev.csisupervisor.admin.v1.PluginType.PLUGIN_TYPE_UNSPECIFIED).stream()
                .allMatch(p -> p.getHealth().getHealthy());
      }
    });
    etcd.startAgain();
    long back = System.nanoTime();
    await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> view.snapshot().nodePlugins("a1").stream()
        .allMatch(e -> e.healthy() && e.healthSince().isAfter(before)) && counts(view.snapshot(), "ebs").equals("c1/1 n3/3 entries=4"));
    System.out.println("CLUSTER-E2E etcd-back-converged-ms " + (System.nanoTime() - back) / 1_000_000);

    // SIGTERM: each agent deregisters its plugins and revokes its lease: the catalog empties at once.
    for (Process p : processes) {
      p.destroy();
    }
    for (Process p : processes) {
      assertTrue(p.waitFor(30, TimeUnit.SECONDS));
    }
    // Exited, so revoked: etcd has nothing of them now (a lease left to expire would keep them for its TTL).
    ClusterSnapshot right = ClusterView.read(EtcdOptions.of(etcd.endpoint()), PREFIX);
    assertTrue(right.entries().isEmpty() && right.nodes().isEmpty(), right.toString());
    await().atMost(WAIT).until(() -> view.snapshot().entries().isEmpty() && view.snapshot().nodes().isEmpty());
  }

  @Test
  void unreachableEtcdAtStart_agentRunsAndRetries_oneLogLinePerBackoffStep_thenJoins() throws Exception {
    int port = EtcdProcess.freePort();
    Process agent = startAgent(config("lonely", "http://127.0.0.1:" + port, null), "lonely");
    await().atMost(WAIT).until(() -> Cli.read(dir.resolve("lonely.out")).contains("csi-agent running"));
    Pattern attempt = Pattern.compile("catalog: etcd unavailable \\(attempt (\\d+)\\)");
    await().atMost(WAIT).until(() -> attempts(attempt).size() >= 3);
    List<Integer> seen = attempts(attempt);
    for (int i = 0; i < seen.size(); i++) {
      assertEquals(i + 1, seen.get(i), "one line per backoff step: " + seen);
    }
    String metrics = scrape(Cli.read(dir.resolve("lonely.out")));
    assertTrue(metrics.contains("csi_agent_catalog_connected 0.0"), metrics);
    assertTrue(agent.isAlive());

    EtcdProcess etcd = EtcdProcess.startOnPort(dir, port);
    closeables.add(etcd);
    await().atMost(WAIT).until(() -> Cli.read(dir.resolve("lonely.err")).contains("reachable again"));
    await().atMost(WAIT).until(() -> scrape(Cli.read(dir.resolve("lonely.out"))).contains("csi_agent_catalog_connected 1.0"));
    Cli.Result nodes = Cli.run(dir, WAIT, "cluster", "nodes", "--json", "--endpoints", etcd.endpoint(), "--prefix", PREFIX);
    assertEquals("lonely", JSON.readTree(nodes.out()).get("nodes").get(0).get("node").asText(), nodes.toString());

    // The publisher's state in csi-agent status: member, lease, TTL left, backlog, the error it recovered from.
    Path cfg = dir.resolve("lonely.yaml");
    await().atMost(WAIT).until(() -> JSON.readTree(Cli.run(dir, WAIT, "status", "--json", "--config", cfg.toString()).out())
        .get("cluster").get("lease_ttl_left_seconds").asDouble() > 0);
    JsonNode c = JSON.readTree(Cli.run(dir, WAIT, "status", "--json", "--config", cfg.toString()).out()).get("cluster");
    assertEquals("lonely", c.get("node_id").asText(), c.toString());
    assertTrue(c.get("connected").asBoolean() && c.get("endpoint").asText().equals(etcd.endpoint()), c.toString());
    assertTrue(c.get("lease_id").asText().matches("[0-9a-f]+") && c.get("lease_ttl_left_seconds").asDouble() <= TTL_SECONDS,
        c.toString());
    assertEquals(0, c.get("backlog").asInt(), c.toString());
    assertTrue(c.get("last_error").asText().contains("127.0.0.1:" + port), c.toString());
    Cli.Result text = Cli.run(dir, WAIT, "status", "--config", cfg.toString());
    assertTrue(text.out().contains("cluster node lonely under " + PREFIX + ": connected to " + etcd.endpoint() + ", lease "),
        text.toString());

    // A cluster: change applied by reload, without a restart: the old node id leaves at once, the new one joins.
    Files.writeString(cfg, Files.readString(cfg).replace("node_id: lonely", "node_id: lonely-2"));
    Cli.Result reload = Cli.run(dir, WAIT, "reload", "--config", cfg.toString());
    assertEquals(0, reload.code(), reload.toString());
    assertTrue(reload.out().contains("cluster: settings changed (node_id): publishing again as node lonely-2"),
        reload.toString());
    await().atMost(Duration.ofSeconds(5)).until(() -> ClusterView.read(EtcdOptions.of(etcd.endpoint()), PREFIX).nodeIds()
        .equals(java.util.Set.of("lonely-2")));
    assertEquals("lonely-2", JSON.readTree(Cli.run(dir, WAIT, "status", "--json", "--config", cfg.toString()).out())
        .get("cluster").get("node_id").asText());
    // And the section removed: the node leaves the catalog; status has no cluster.
    Files.writeString(cfg, Files.readString(cfg).replaceAll("(?s)cluster:.*", ""));
    Cli.Result off = Cli.run(dir, WAIT, "reload", "--config", cfg.toString());
    assertTrue(off.out().contains("cluster: left the catalog (node lonely-2)"), off.toString());
    assertTrue(ClusterView.read(EtcdOptions.of(etcd.endpoint()), PREFIX).nodeIds().isEmpty());
    assertTrue(JSON.readTree(Cli.run(dir, WAIT, "status", "--json", "--config", cfg.toString()).out()).path("cluster")
        .isMissingNode());
    assertTrue(agent.isAlive());
  }

  private List<Integer> attempts(Pattern p) {
    List<Integer> out = new ArrayList<>();
    Matcher m = p.matcher(Cli.read(dir.resolve("lonely.err")));
    while (m.find()) {
      out.add(Integer.parseInt(m.group(1)));
    }
    return out;
  }

  /** Issue 35 (9): a second agent started with the node_id of a live one is refused at start; the first goes on. */
  @Test
  void aSecondAgentWithALiveAgentsNodeId_isRefusedAtStart() throws Exception {
    EtcdProcess etcd = EtcdProcess.start(dir);
    closeables.add(etcd);
    startAgent(config("twin", etcd.endpoint(), "node"), "twin");
    ClusterView view = ClusterView.builder().etcd(EtcdOptions.of(etcd.endpoint())).prefix(PREFIX).build();
    closeables.add(view);
    view.start();
    await().atMost(WAIT).until(() -> counts(view.snapshot(), "ebs").equals("c0/0 n1/1 entries=1"));
    Path second = dir.resolve("twin-2.yaml");
    Files.writeString(second, Files.readString(config("twin", etcd.endpoint(), "node"))
        .replace("data_dir: " + dir.resolve("twin"), "data_dir: " + dir.resolve("twin-2")));
    Cli.run(dir, WAIT, "run", "--config", second.toString()).assertExit(1,
        "csi-agent: cannot start: cluster.node_id: node id twin is in use by another agent (host ");
    assertEquals("c0/0 n1/1 entries=1", counts(view.snapshot(), "ebs"));
    assertTrue(Files.exists(dir.resolve("twin").resolve("node-instance")));
  }

  @Test
  void emptyEndpoints_refusedWithTheFieldNamed() throws Exception {
    Path f = dir.resolve("bad.yaml");
    Files.writeString(f, "data_dir: " + dir.resolve("bad") + "\nplugins: []\ncluster:\n  endpoints: []\n");
    Cli.run(dir, WAIT, "run", "--config", f.toString()).assertExit(2,
        f + ": cluster.endpoints: must not be empty");
    Cli.run(dir, WAIT, "cluster", "plugins", "--endpoints", "ftp://x:1").assertExit(2,
        "endpoints[0] 'ftp://x:1' must be http");
  }

  private static String scrape(String agentOut) throws Exception {
    Matcher m = Pattern.compile("metrics (http://\\S+/metrics)").matcher(agentOut);
    assertTrue(m.find(), agentOut);
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(m.group(1))).build(),
        HttpResponse.BodyHandlers.ofString());
    return r.body();
  }

}
