package dev.csisupervisor.agent;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.metrics.MonitoringFiles;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import dev.csisupervisor.catalog.testing.EtcdProcess;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.testing.ShortTempDir;
import dev.csisupervisor.volumes.VolumeClaim;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two agents on a three-member etcd, with the demo's plugins (the built-in mock plugin, launched): {@code n1} runs
 * {@code mono} (a monolith on a shared cloud, so it is the controller agent) and {@code evil} (a controller whose
 * driver calls itself {@code <img src=x onerror=alert(1)>} and whose probes hang once ready: unhealthy); {@code n2}
 * runs {@code mono}'s node side. A cluster volume is claimed and mounted on n1; n2's claim of it is refused. Then:
 * n2's page in headless Chromium, from the refused claim in the banner to its holder in the cluster tab; and a real
 * Prometheus scraping both agents answers every dashboard panel's query with data.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ClusterOperatorPageTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);

  private static ShortTempDir tmp;
  private static EtcdCluster etcd;
  private static final TestAgents agents = new TestAgents();
  private static Agent n1;
  private static Agent n2;
  private static String volume;
  private static String refusal;
  private static final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @BeforeAll
  static void startCluster() throws Exception {
    EtcdProcess.assumeInstalled();
    tmp = new ShortTempDir("copage");
    etcd = EtcdCluster.start(tmp.path(), 3);
    Path cloud = tmp.resolve("cloud");
    n1 = agent("n1", """
          - id: mono
            type: monolith
            command: builtin:mock-plugin
            args: [--type, monolith, --node-id, n1, --cloud, %s, --all-capabilities]
          - id: evil
            type: controller
            command: builtin:mock-plugin
            args: [--type, controller, --name, '%s', --hang-after-ready-ms, '500']
            health_timeout: 1h
        """.formatted(cloud, OperatorPageTest.EVIL));
    n2 = agent("n2", """
          - id: mono
            type: node
            command: builtin:mock-plugin
            args: [--type, node, --node-id, n2, --cloud, %s, --all-capabilities]
        """.formatted(cloud));
    for (Agent a : List.of(n1, n2)) {
      await().atMost(WAIT).until(() -> a.registry().find(PluginType.CSI_NODE, "mono")
          .map(p -> p.health().healthy()).orElse(false)
          && a.clusterNode().map(n -> n.status().connected()).orElse(false));
    }
    await().atMost(WAIT).until(() -> n1.registry().find(PluginType.CSI_CONTROLLER, "evil")
        .map(p -> !p.health().healthy()).orElse(false));
    // A volume of the cloud, registered in the cluster, claimed and mounted on n1 (n1 is the controller agent).
    volume = n1.volumes().create("mono", "web-data", Optional.of(CapacityRange.atLeast(1 << 30)), List.of(RWO),
        Map.of(), Secrets.none()).get(WAIT.toSeconds(), TimeUnit.SECONDS).volumeId();
    n1.clusterNode().orElseThrow().volumes().register(new ClusterVolume("mono", volume, 1 << 30,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), List.of(), Map.of(), Map.of()));
    await().atMost(WAIT).ignoreExceptions().until(() -> {
      n1.volumes().mount(claim("web-1")).get(WAIT.toSeconds(), TimeUnit.SECONDS);
      return true;
    });
    // n2's claim of the same single-writer volume: refused, naming the holder.
    try {
      n2.volumes().mount(claim("web-2")).get(WAIT.toSeconds(), TimeUnit.SECONDS);
      throw new AssertionError("n2's claim of a volume n1 holds was granted");
    } catch (ExecutionException e) {
      refusal = e.getCause().getMessage();
    }
    assertTrue(refusal.contains("held by node n1, alloc web-1"), refusal);
    // Connected comes before the reconcile that writes a node's plugin entries: the page reads etcd.
    await().atMost(WAIT).ignoreExceptions().until(() -> new ObjectMapper().readTree(get(base(n2)
        + "/api/v1/cluster/plugins")).path("plugins").toString().contains("\"nodes_healthy\":2,\"nodes_expected\":2"));
  }

  private static VolumeClaim claim(String alloc) {
    return new VolumeClaim("mono", volume, alloc, RWO, false, Map.of(), Map.of(), Secrets.none());
  }

  private static Agent agent(String node, String plugins) throws Exception {
    Path dir = Files.createDirectories(tmp.resolve(node));
    Path config = dir.resolve("agent.yaml");
    Files.writeString(config, """
        data_dir: %s
        metrics_address: 127.0.0.1:0
        resource_interval: 1s
        defaults:
          probe_interval: 200ms
          probe_timeout: 1s
        volumes:
          verify_mounts: false
          health_interval: 1s
        plugins:
        %s
        cluster:
          endpoints: [%s]
          node_id: %s
          lease_ttl: 5s
          controller_check_interval: 1s
        """.formatted(dir, plugins, etcd.endpoints(), node));
    ConfigLoader.Sections s = ConfigLoader.loadSections(config);
    Agent a = agents.start(s.agent());
    a.cluster().apply(s.cluster());
    return a;
  }

  @AfterAll
  static void stop() {
    agents.close();
    if (etcd != null) {
      etcd.close();
    }
    if (tmp != null) {
      tmp.close();
    }
  }

  private static String base(Agent a) {
    return "http://127.0.0.1:" + a.metricsAddress().orElseThrow().getPort();
  }

  @Test
  void theClusterJson_isWhatTheClusterCommandsPrint() throws Exception {
    String json = get(base(n2) + "/api/v1/cluster/volumes");
    JsonNode v = new ObjectMapper().readTree(json);
    assertEquals("n1", v.path("controllers").path("mono").asText(), json);
    JsonNode claims = v.path("volumes").get(0).path("claims");
    assertEquals(1, claims.size(), json);
    assertEquals("n1", claims.get(0).path("node").asText());
    assertEquals("web-1", claims.get(0).path("alloc").asText());
    assertTrue(v.path("conditions").isArray() && v.path("leaks").isArray(), "the checks' findings too: " + json);
    JsonNode plugins = new ObjectMapper().readTree(get(base(n2) + "/api/v1/cluster/plugins"));
    assertTrue(plugins.path("plugins").toString().contains("\"name\":\"mono\",\"controllers_healthy\":1,"
        + "\"controllers_expected\":1,\"nodes_healthy\":2,\"nodes_expected\":2"), plugins.toString());
  }

  /** {@code csi-mock-plugin cloud-...} on the agents' cloud file, as an operator runs it. */
  private static void cloudCommand(String command, String... args) throws Exception {
    List<String> cmd = new java.util.ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
        .toString(), "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        "dev.csisupervisor.mockplugin.MockCsiPlugin", command, tmp.resolve("cloud").toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    assertTrue(p.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS), command + " finished");
    assertEquals(0, p.exitValue(), new String(p.getInputStream().readAllBytes()));
  }

  @Test
  void inChromium_aVolumeTheControllersCheckFindsAbnormal_isShownInThePluginsWords_untilItRecovers()
      throws Exception {
    Chromium.require();
    String api = base(n2) + "/api/v1/cluster/volumes";
    cloudCommand("cloud-mark-abnormal", volume, "disk is read-only: I/O errors");
    try {
      await().atMost(WAIT).until(() -> get(api).contains("\"ABNORMAL\""));
      Path profile = Files.createDirectories(tmp.resolve("chromium-" + System.nanoTime()));
      String dom = Chromium.dumpDom(base(n2) + "/ui/#cluster", profile, 5000);
      Matcher row = Pattern.compile("<tr data-key=\"cluster-volume:" + Pattern.quote("mono/" + volume)
          + "\".*?</tr>").matcher(dom);
      assertTrue(row.find(), dom);
      assertTrue(row.group().contains("data-condition=\"ABNORMAL\"")
          && row.group().contains("disk is read-only: I/O errors"), row.group());
    } finally {
      cloudCommand("cloud-mark-abnormal", volume, "");
    }
    await().atMost(WAIT).until(() -> !get(api).contains("\"ABNORMAL\""));
  }

  @Test
  void inChromium_aRefusedClaimLeadsToItsHolder() throws Exception {
    Chromium.require();
    Path profile = Files.createDirectories(tmp.resolve("chromium-" + System.nanoTime()));
    String dom = Chromium.dumpDom(base(n2) + "/ui/#cluster", profile, 5000);
    String key = "mono/" + volume;
    // The banner: the refused claim, linked to the volume in the cluster tab.
    Matcher link = Pattern.compile("<li data-kind=\"claim_refused\">.*?<a href=\"(#cluster/[^\"]+)\">").matcher(dom);
    assertTrue(link.find(), dom);
    assertTrue(dom.contains("held by node n1, alloc web-1"), dom);
    // The cluster tab: per plugin controllers/nodes healthy of expected, the volume's claim and attachment.
    assertTrue(dom.contains("<tr data-key=\"cluster-plugin:mono\">"), dom);
    assertTrue(dom.contains("1 of 1") && dom.contains("2 of 2"), dom);
    assertTrue(!dom.contains("null"), "no null written as text: " + dom);
    assertTrue(dom.contains("data-claim=\"n1/web-1\""), dom);
    assertTrue(dom.contains("ATTACHED"), dom);

    // A click on the banner's link: the volume's row is shown and marked, its claim naming the holder.
    try (Chromium.Session browser = Chromium.session(tmp.resolve("chromium-" + System.nanoTime()))) {
      browser.navigate(base(n2) + "/ui/#plugins");
      browser.await("document.body.dataset.loaded || ''", WAIT);
      browser.evaluate("document.querySelector('li[data-kind=\"claim_refused\"] a').click()");
      String marked = browser.await("(document.querySelector('#tab-cluster:not([hidden]) tr.target') || {}).dataset"
          + "?.key || ''", WAIT);
      assertEquals("cluster-volume:" + key, marked);
      String holder = browser.evaluate("document.querySelector('tr.target [data-claim]').textContent");
      assertTrue(holder.startsWith("node n1, alloc web-1, SINGLE_NODE_WRITER"), holder);
      assertEquals(key, browser.evaluate("document.getElementById('filter').value"));
    }

    // The same link loaded afresh marks the row too.
    Path again = Files.createDirectories(tmp.resolve("chromium-" + System.nanoTime()));
    String target = Chromium.dumpDom(base(n2) + "/ui/" + link.group(1), again, 5000);
    Matcher row = Pattern.compile("<tr data-key=\"cluster-volume:" + Pattern.quote(key) + "\"[^>]*class=\"target\"")
        .matcher(target);
    assertTrue(row.find(), "the link " + link.group(1) + " marks the volume's row: " + target);

    // -Doperator.page.screenshot=PATH: the README's picture of the page (n1's, the cluster tab).
    String png = System.getProperty("operator.page.screenshot");
    if (png != null) {
      Chromium.screenshot(base(n1) + "/ui/#cluster", Files.createDirectories(tmp.resolve("chromium-shot")),
          Path.of(png).toAbsolutePath(), 640);
    }

    // n1's page: the unhealthy plugin by name, its driver's name as text.
    Path third = Files.createDirectories(tmp.resolve("chromium-" + System.nanoTime()));
    String n1dom = Chromium.dumpDom(base(n1) + "/ui/", third, 5000);
    assertTrue(n1dom.contains("href=\"#plugins/evil\">plugin evil (controller)</a>"), n1dom);
    assertTrue(n1dom.contains("&lt;img src=x onerror=alert(1)&gt;"), n1dom);
    assertTrue(!n1dom.contains("<img"), n1dom);
  }

  @Test
  void aRealPrometheus_answersEveryDashboardQueryWithData_andTheAlertsReadOnlyExportedMetrics() throws Exception {
    Path prometheus = Path.of("/usr/bin/prometheus");
    Assumptions.assumeTrue(Files.isExecutable(prometheus), "prometheus is not installed (apt-get install"
        + " prometheus; .ci/run installs it in CI): the dashboard's queries are not run");
    Path dir = Files.createDirectories(tmp.resolve("prometheus-" + System.nanoTime()));
    int port = EtcdProcess.freePort();
    Files.writeString(dir.resolve("prometheus.yml"), """
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        scrape_configs:
          - job_name: csi-agent
            static_configs:
              - targets: ['127.0.0.1:%d', '127.0.0.1:%d']
        """.formatted(n1.metricsAddress().orElseThrow().getPort(), n2.metricsAddress().orElseThrow().getPort()));
    Process p = new ProcessBuilder(prometheus.toString(), "--config.file=" + dir.resolve("prometheus.yml"),
        "--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + port)
        .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
    try {
      String api = "http://127.0.0.1:" + port + "/api/v1/query?query=";
      // Both agents scraped, for long enough that a rate over 1m has two samples.
      await().atMost(WAIT).pollInterval(Duration.ofMillis(500)).ignoreExceptions().until(() ->
          result(get(api + enc("count(up{job=\"csi-agent\"} == 1) == 2"))).size() == 1
          && result(get(api + enc("count_over_time(csi_agent_build_info[1m])"))).get(0).path("value").get(1)
              .asInt() >= 4);
      List<String> empty = new ArrayList<>();
      List<MonitoringFiles.Query> queries = MonitoringFiles.dashboardQueries();
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofSeconds(1)).until(() -> {
        empty.clear();
        for (MonitoringFiles.Query q : queries) {
          if (result(get(api + enc(q.promql()))).isEmpty()) {
            empty.add(q.panel() + " " + q.refId() + ": " + q.promql());
          }
        }
        return empty.isEmpty();
      });
      assertEquals(List.of(), empty, "dashboard queries without data");

      // Every csi_agent_* family the alert rules read is one the agents export.
      Set<String> exported = new TreeSet<>();
      for (JsonNode n : result(get(api + enc("count by (__name__) ({__name__=~\"csi_agent_.*\"})")))) {
        exported.add(family(n.path("metric").path("__name__").asText()));
      }
      // With the families registered but without samples here (no restart yet, a plugin reporting no inodes).
      exported.addAll(n1.metrics().families());
      Set<String> read = new TreeSet<>();
      Matcher m = Pattern.compile("csi_agent_\\w+").matcher(String.join("\n", MonitoringFiles.alertRules().values()));
      while (m.find()) {
        read.add(family(m.group()));
      }
      read.removeAll(exported);
      assertEquals(Set.of(), read, "families the alerts read that no agent exports (exported: " + exported + ")");
    } finally {
      p.destroy();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }

  /** A family's name without the suffixes of its samples. */
  private static String family(String name) {
    return name.replaceAll("_(bucket|count|sum|total|created)$", "");
  }

  private static String enc(String q) {
    return URLEncoder.encode(q, StandardCharsets.UTF_8);
  }

  private static JsonNode result(String body) throws Exception {
    JsonNode r = new ObjectMapper().readTree(body);
    assertEquals("success", r.path("status").asText(), body);
    return r.path("data").path("result");
  }

  private static String get(String url) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), url + ": " + r.body());
    return r.body();
  }
}
