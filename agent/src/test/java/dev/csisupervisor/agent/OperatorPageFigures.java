package dev.csisupervisor.agent;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.cli.AdminCommands;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.testing.ShortTempDir;
import dev.csisupervisor.volumes.VolumeClaim;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The figures of benchmarks/README.md section 17 (not a test: run on request with {@code -Dcsi.figures.operator=true}).
 * One agent with in-process mock plugins: the metrics scrape at 20 plugins, before (the reference) and after 1 000
 * mounted volumes; then at 200 plugins and 1 000 volumes the page's JSON (beside the CLI's {@code volume list --json},
 * the reference) and the page in headless Chromium to its first render and paint (beside the page of the same agent
 * before the volumes were mounted).
 */
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class OperatorPageFigures {
  /** Probes every 10 s: 200 plugins supervised as an agent would, not hammered. */
  private static final dev.csisupervisor.agent.config.ProbeSettings PROBES = new dev.csisupervisor.agent.config
      .ProbeSettings(Duration.ofSeconds(60), Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofMillis(20),
      Duration.ofMillis(200));
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void figures() throws Exception {
    Assumptions.assumeTrue(Boolean.getBoolean("csi.figures.operator"), "figures on request only:"
        + " -Dcsi.figures.operator=true");
    Chromium.require();
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory("figures", true),
        EpollIoHandler.newFactory());
    List<MockCsiPlugin> plugins = new ArrayList<>();
    try (ShortTempDir tmp = new ShortTempDir("figures"); TestAgents agents = new TestAgents()) {
      Path dir = tmp.path();
      List<PluginSpec> specs = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        Path socket = dir.resolve("p/" + i + "/csi.sock");
        // The first 20 carry the volumes (monoliths: they create them); the others are node plugins.
        boolean mono = i < 20;
        plugins.add(MockCsiPlugin.builder().socket(socket).mode(mono ? MockMode.MONOLITH : MockMode.NODE)
            .allCapabilities().name("figures.csi.example.com").eventLoopGroup(group).createParentDirs(true).build()
            .start());
        specs.add(new PluginSpec(String.format("plugin-%03d", i), mono ? PluginKind.MONOLITH : PluginKind.NODE, null,
            List.of(), Map.of(), socket, PROBES, TestPlugins.QUICK));
      }
      Agent agent = agents.start(new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"),
          new InetSocketAddress("127.0.0.1", 0), false, Duration.ofSeconds(5), 1 << 20, 1, specs.subList(0, 20))
          .withVolumeVerifyMounts(false));
      String base = "http://127.0.0.1:" + agent.metricsAddress().orElseThrow().getPort();
      await().atMost(Duration.ofMinutes(2)).until(() -> agent.registry().list(PluginType.CSI_NODE).stream()
          .filter(p -> p.health().healthy()).count() == 20);

      say("scrape, 20 plugins, 0 volumes (reference): " + timed(base + "/metrics", 50));
      say("GET /api/v1/problems, 20 plugins, 0 volumes (reference): " + timed(base + "/api/v1/problems", 50));
      say("page to first render / paint, 20 plugins, 0 volumes (reference): " + pageTimes(base + "/ui/#volumes",
          dir.resolve("chromium-reference"), 10));
      mount(agent, 1000, 20);
      agent.volumes().list().forEach(r -> agent.volumes().stats(r.pluginId(), r.volumeId(), java.util.Optional.empty())
          .join());
      say("scrape, 20 plugins, 1000 volumes with stats: " + timed(base + "/metrics", 50));

      agent.reload(agent.currentConfig().withPlugins(specs));
      await().atMost(Duration.ofMinutes(3)).until(() -> agent.registry().list(PluginType.CSI_NODE).stream()
          .filter(p -> p.health().healthy()).count() == 200);
      for (String api : List.of("status", "plugins", "volumes", "problems")) {
        say("GET /api/v1/" + api + ", 200 plugins, 1000 volumes: " + timed(base + "/api/v1/" + api, 50));
      }
      say("csi-agent volume list --json in this JVM (reference), 1000 volumes: " + cliTimes(agent, 50));
      say("page to first render / paint, 200 plugins, 1000 volumes: " + pageTimes(base + "/ui/#volumes",
          dir.resolve("chromium"), 10));
    } finally {
      plugins.forEach(MockCsiPlugin::close);
      group.shutdownGracefully();
    }
  }

  private static void say(String line) {
    System.out.println("FIGURE " + line);
  }

  private static void mount(Agent agent, int volumes, int pluginCount) {
    List<CompletableFuture<?>> all = new ArrayList<>();
    for (int i = 0; i < volumes; i++) {
      String plugin = String.format("plugin-%03d", i % pluginCount);
      int n = i;
      all.add(agent.volumes().create(plugin, "vol-" + i, java.util.Optional.of(
          dev.csisupervisor.client.CapacityRange.atLeast(1L << 30)), List.of(RWO), Map.of(), Secrets.none())
          .thenCompose(v -> agent.volumes().mount(new VolumeClaim(plugin, v.volumeId(), "alloc-" + n, RWO, false,
              Map.of(), Map.of(), Secrets.none()))));
      if (all.size() == 50) {
        all.forEach(CompletableFuture::join);
        all.clear();
      }
    }
    all.forEach(CompletableFuture::join);
  }

  /** p50 / p99 / max of {@code n} GETs, and the size of the answer. */
  private String timed(String url, int n) throws Exception {
    long[] t = new long[n];
    int size = 0;
    for (int i = -5; i < n; i++) {
      long start = System.nanoTime();
      HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(URI.create(url)).build(),
          HttpResponse.BodyHandlers.ofByteArray());
      long took = System.nanoTime() - start;
      assertEquals(200, r.statusCode(), url);
      size = r.body().length;
      if (i >= 0) {
        t[i] = took;
      }
    }
    return stats(t) + ", " + size + " bytes";
  }

  private static String cliTimes(Agent agent, int n) {
    long[] t = new long[n];
    for (int i = -5; i < n; i++) {
      StringWriter out = new StringWriter();
      picocli.CommandLine cl = new picocli.CommandLine(AdminCommands.volume(file -> {
        throw new IllegalStateException();
      }));
      cl.setOut(new PrintWriter(out, true)).setErr(new PrintWriter(new StringWriter(), true));
      long start = System.nanoTime();
      int code = cl.execute("list", "--json", "--admin-socket", agent.config().adminSocket().toString());
      long took = System.nanoTime() - start;
      assertEquals(0, code);
      if (i >= 0) {
        t[i] = took;
      }
    }
    return stats(t);
  }

  private static String stats(long[] nanos) {
    long[] s = nanos.clone();
    Arrays.sort(s);
    return String.format(Locale.ROOT, "p50 %.1f ms, p99 %.1f ms, max %.1f ms", s[s.length / 2] / 1e6,
        s[(int) Math.ceil(s.length * 0.99) - 1] / 1e6, s[s.length - 1] / 1e6);
  }

  /**
   * Headless Chromium driven over its DevTools protocol: each run navigates to {@code url} and reads the page's own
   * {@code data-rendered-ms} (navigation to the first render with data) and {@code data-painted-ms} (the frame after).
   */
  private String pageTimes(String url, Path profile, int runs) throws Exception {
    Files.createDirectories(profile);
    Process p = new ProcessBuilder(Chromium.require().toString(), "--headless", "--no-sandbox", "--disable-gpu",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--remote-debugging-port=0", "--remote-allow-origins=*", "--user-data-dir=" + profile, "about:blank")
        .redirectErrorStream(true).start();
    try {
      BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String ws = null;
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.startsWith("DevTools listening on ")) {
          ws = line.substring("DevTools listening on ".length());
          break;
        }
      }
      String port = URI.create(ws).getPort() + "";
      JsonNode targets = new ObjectMapper().readTree(http.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/json/list")).build(), HttpResponse.BodyHandlers.ofString()).body());
      String page = null;
      for (JsonNode t : targets) {
        if (t.path("type").asText().equals("page")) {
          page = t.path("webSocketDebuggerUrl").asText();
        }
      }
      DevTools dt = new DevTools(http, page);
      long[] rendered = new long[runs];
      long[] painted = new long[runs];
      for (int i = -2; i < runs; i++) {
        dt.call("Page.navigate", Map.of("url", "about:blank"));
        dt.call("Page.navigate", Map.of("url", url));
        String v = "";
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (v.isEmpty() && System.nanoTime() < end) {
          JsonNode r = dt.call("Runtime.evaluate", Map.of("expression", "document.body && document.body.dataset"
              + ".paintedMs ? document.body.dataset.renderedMs + ' ' + document.body.dataset.paintedMs : ''",
              "returnByValue", true));
          v = r.path("result").path("result").path("value").asText("");
          if (v.isEmpty()) {
            Thread.sleep(20); // polling the browser for the page's own mark; the figure is the page's clock
          }
        }
        if (i >= 0) {
          rendered[i] = Long.parseLong(v.split(" ")[0]) * 1_000_000;
          painted[i] = Long.parseLong(v.split(" ")[1]) * 1_000_000;
        }
      }
      return "rendered " + stats(rendered) + "; painted " + stats(painted);
    } finally {
      p.destroy();
      p.waitFor(10, TimeUnit.SECONDS);
      p.destroyForcibly();
    }
  }

  /** The least of Chrome's DevTools protocol: a call and its answer, one at a time. */
  private static final class DevTools implements WebSocket.Listener {
    private final ObjectMapper json = new ObjectMapper();
    private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();
    private final StringBuilder partial = new StringBuilder();
    private final WebSocket socket;

    DevTools(HttpClient http, String url) {
      socket = http.newWebSocketBuilder().buildAsync(URI.create(url), this).join();
    }

    JsonNode call(String method, Map<String, Object> params) throws Exception {
      int id = ids.incrementAndGet();
      CompletableFuture<JsonNode> f = new CompletableFuture<>();
      pending.put(id, f);
      socket.sendText(json.writeValueAsString(Map.of("id", id, "method", method, "params", params)), true).join();
      return f.get(30, TimeUnit.SECONDS);
    }

    @Override
    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
      partial.append(data);
      if (last) {
        try {
          JsonNode n = json.readTree(partial.toString());
          CompletableFuture<JsonNode> f = pending.remove(n.path("id").asInt(-1));
          if (f != null) {
            f.complete(n);
          }
        } catch (Exception e) {
          pending.values().forEach(f -> f.completeExceptionally(e));
        }
        partial.setLength(0);
      }
      ws.request(1);
      return null;
    }
  }
}
