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
import dev.csisupervisor.agent.web.OperatorPages;
import dev.csisupervisor.cli.AdminCommands;
import dev.csisupervisor.cli.AgentConfigReader;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.testing.ShortTempDir;
import dev.csisupervisor.volumes.VolumeClaim;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The operator page and its JSON on the metrics listener, against a real agent: plugins {@code disk} (a monolith,
 * healthy, with a mounted volume) and {@code evil} (a controller whose driver calls itself
 * {@code <img src=x onerror=alert(1)>} and whose probes hang once it is registered: unhealthy); the page loaded in
 * headless Chromium.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class OperatorPageTest {
  static final String EVIL = "<img src=x onerror=alert(1)>";
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final AgentConfigReader NO_CONFIG = file -> {
    throw new IllegalStateException("no config in this test");
  };

  private final ShortTempDir tmp = new ShortTempDir("opage");
  private final TestAgents agents = new TestAgents();
  private final List<MockCsiPlugin> plugins = new ArrayList<>();
  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private Agent agent;
  private String base;
  private String volume;

  @BeforeEach
  void start() throws Exception {
    Path dir = tmp.path();
    Path disk = dir.resolve("disk/csi.sock");
    Path evil = dir.resolve("evil/csi.sock");
    plugins.add(MockCsiPlugin.builder().socket(disk).mode(MockMode.MONOLITH).allCapabilities()
        .createParentDirs(true).build().start());
    plugins.add(MockCsiPlugin.builder().socket(evil).mode(MockMode.CONTROLLER).name(EVIL)
        .hangProbesAfterReady(Duration.ofMillis(300)).createParentDirs(true).build().start());
    agent = agents.start(new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"),
        new InetSocketAddress("127.0.0.1", 0), false, Duration.ofSeconds(5), 1 << 20, 1, List.of(
            new PluginSpec("disk", PluginKind.MONOLITH, null, List.of(), Map.of(), disk, FAST, QUICK),
            new PluginSpec("evil", PluginKind.CONTROLLER, null, List.of(), Map.of(), evil, FAST, QUICK)))
        .withVolumeVerifyMounts(false));
    base = "http://127.0.0.1:" + agent.metricsAddress().orElseThrow().getPort();
    await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_NODE, "disk")
        .map(p -> p.health().healthy()).orElse(false));
    volume = agent.volumes().create("disk", "data", Optional.of(CapacityRange.atLeast(1 << 30)), List.of(RWO),
        Map.of(), Secrets.none()).get(WAIT.toSeconds(), TimeUnit.SECONDS).volumeId();
    agent.volumes().mount(new VolumeClaim("disk", volume, "web-1", RWO, false, Map.of(), Map.of(), Secrets.none()))
        .get(WAIT.toSeconds(), TimeUnit.SECONDS);
    await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_CONTROLLER, "evil")
        .map(p -> !p.health().healthy()).orElse(false));
  }

  @AfterEach
  void stop() {
    agents.close();
    plugins.forEach(MockCsiPlugin::close);
    tmp.close();
  }

  private HttpResponse<String> get(String path) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** What the CLI prints for {@code args} against the agent's admin socket. */
  private String cli(CommandSpec command, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(command);
    cl.setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true));
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--admin-socket", agent.config().adminSocket().toString()));
    assertEquals(0, cl.execute(all.toArray(String[]::new)), err.toString());
    return out.toString();
  }

  @Test
  void theJson_isWhatTheCliPrintsWithJson() throws Exception {
    assertEquals(cli(AdminCommands.plugins(NO_CONFIG), "--json"), get("/api/v1/plugins").body());
    assertEquals(cli(AdminCommands.volume(NO_CONFIG), "list", "--json"), get("/api/v1/volumes").body());
    assertEquals(cli(AdminCommands.status(NO_CONFIG), "--json"), get("/api/v1/status").body());
  }

  @Test
  void problems_nameTheUnhealthyPlugin_withSinceAndTheCommandThatShowsMore() throws Exception {
    HttpResponse<String> r = get("/api/v1/problems");
    assertEquals(200, r.statusCode());
    String body = r.body();
    assertTrue(body.contains("\"healthy\" : false"), body);
    assertTrue(body.contains("\"kind\" : \"plugin_unhealthy\""), body);
    assertTrue(body.contains("\"subject\" : \"plugin evil (controller)\""), body);
    assertTrue(body.contains("\"more\" : \"csi-agent plugin evil\""), body);
    assertFalse(body.contains("plugin disk"), "disk is healthy: " + body);
  }

  @Test
  void readOnly_strictPolicy_andUnknownPathsSaySo() throws Exception {
    HttpResponse<String> page = get("/ui/");
    assertEquals(200, page.statusCode());
    assertEquals(OperatorPages.CSP, page.headers().firstValue("Content-Security-Policy").orElse(""));
    assertEquals("nosniff", page.headers().firstValue("X-Content-Type-Options").orElse(""));
    assertTrue(page.body().contains("<script type=\"module\" src=\"app.js\">"), page.body());
    assertFalse(page.body().contains("<script>"), "no inline script: " + page.body());
    assertEquals("text/javascript; charset=utf-8",
        get("/ui/app.js").headers().firstValue("Content-Type").orElse(""));

    HttpResponse<String> post = http.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/status"))
        .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(405, post.statusCode());
    assertEquals("GET, HEAD", post.headers().firstValue("Allow").orElse(""));
    HttpResponse<String> unknown = get("/api/v1/bogus");
    assertEquals(404, unknown.statusCode());
    assertTrue(unknown.body().contains("no such thing: /api/v1/bogus"), unknown.body());
    assertEquals(404, get("/ui/../../etc/passwd").statusCode());
    HttpResponse<String> cluster = get("/api/v1/cluster/volumes");
    assertEquals(503, cluster.statusCode());
    assertTrue(cluster.body().contains("no cluster: section"), cluster.body());
    assertEquals(302, http.send(HttpRequest.newBuilder(URI.create(base + "/")).build(),
        HttpResponse.BodyHandlers.discarding()).statusCode());
  }

  @Test
  void metrics_nameThePlugin_carryVolumeStats_buildInfo_andTheJvm() throws Exception {
    agent.volumes().stats("disk", volume, Optional.empty()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    String m = get("/metrics").body();
    assertTrue(m.contains("csi_agent_plugin_healthy{plugin=\"disk\",type=\"node\"} 1"), m);
    assertTrue(m.contains("csi_agent_plugin_healthy{plugin=\"evil\",type=\"controller\"} 0"), m);
    assertTrue(m.contains("csi_agent_volume_rpcs_total{code=\"OK\",plugin=\"disk\",rpc=\"NodePublishVolume\"} 1"), m);
    assertTrue(m.contains("csi_agent_volume_rpc_seconds_count{plugin=\"disk\",rpc=\"CreateVolume\"} 1"), m);
    assertTrue(m.contains("csi_agent_volume_stats_capacity_bytes{plugin=\"disk\",volume=\"" + volume + "\"} 1.073741824E9"), m);
    assertTrue(m.contains("csi_agent_volume_stats_available_bytes{plugin=\"disk\",volume=\"" + volume + "\"}"), m);
    assertTrue(m.contains("csi_agent_volume_pending_oldest_seconds 0"), m);
    assertTrue(m.contains("csi_agent_build_info{version=\"" + Agent.version() + "\"} 1"), m);
    assertTrue(m.contains("jvm_memory_used_bytes{area=\"heap\"}"), m);
    assertTrue(m.contains("process_cpu_seconds_total"), m);
    String stats = get("/api/v1/volume-stats").body();
    assertTrue(stats.contains("\"volume\" : \"" + volume + "\"") && stats.contains("\"total\" : 1073741824"), stats);

    // Unmounted: its stats go with it (the families stay bounded by the volumes published here).
    agent.volumes().unmount("disk", volume, "web-1").get(WAIT.toSeconds(), TimeUnit.SECONDS);
    String after = get("/metrics").body();
    assertFalse(after.contains("csi_agent_volume_stats_capacity_bytes{plugin=\"disk\""), after);
  }

  @Test
  void inChromium_theBannerNamesTheProblem_andPluginStringsAreText() throws Exception {
    Chromium.require();
    agent.volumes().stats("disk", volume, Optional.empty()).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    Path profile = Files.createDirectory(tmp.resolve("chromium"));
    String dom = Chromium.dumpDom(base + "/ui/#plugins", profile, 5000);

    assertTrue(dom.contains("data-loaded=\"true\""), "the module ran: " + dom);
    assertTrue(dom.contains("data-state=\"problems\""), dom);
    assertTrue(dom.contains("<li data-kind=\"plugin_unhealthy\">"), dom);
    assertTrue(dom.contains("href=\"#plugins/evil\">plugin evil (controller)</a>"), dom);
    // The driver's name, as the plugin sent it, is text: escaped in the DOM, never an element.
    assertTrue(dom.contains("&lt;img src=x onerror=alert(1)&gt;"), dom);
    assertFalse(dom.contains("<img"), dom);
    assertTrue(dom.contains("<tr data-key=\"disk\" data-type=\"node\">"), dom);
    assertTrue(dom.contains("<tr data-key=\"disk/" + volume + "\">"), dom);
    // Its last reported use (the mock's volume: 1 GiB, nothing written).
    assertTrue(dom.contains("0 B of 1.0 GiB (0 %)"), dom);

    // A link to one volume (as the banner makes) filters the tables to it and marks its row.
    String linked = Chromium.dumpDom(base + "/ui/#volumes/" + java.net.URLEncoder.encode("disk/" + volume,
        java.nio.charset.StandardCharsets.UTF_8), Files.createDirectory(tmp.resolve("chromium-link")), 5000);
    assertTrue(linked.contains("<tr data-key=\"disk/" + volume + "\" class=\"target\">"), linked);
    assertTrue(linked.contains("1 of 1 match the filter"), linked);
  }
}
