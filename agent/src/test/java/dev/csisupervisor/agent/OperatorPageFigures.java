package dev.csisupervisor.agent;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

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
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
   * Each of {@code runs} loads of {@code url} (after two warm-ups) read from the page's own marks:
   * {@code data-rendered-ms} (navigation to the first render with data) and {@code data-painted-ms} (the frame after).
   */
  private static String pageTimes(String url, Path profile, int runs) throws Exception {
    try (Chromium.Session browser = Chromium.session(profile)) {
      long[] rendered = new long[runs];
      long[] painted = new long[runs];
      for (int i = -2; i < runs; i++) {
        browser.navigate("about:blank");
        browser.navigate(url);
        String v = browser.await("document.body && document.body.dataset.paintedMs ? document.body.dataset.renderedMs"
            + " + ' ' + document.body.dataset.paintedMs : ''", Duration.ofSeconds(30));
        if (i >= 0) {
          rendered[i] = Long.parseLong(v.split(" ")[0]) * 1_000_000;
          painted[i] = Long.parseLong(v.split(" ")[1]) * 1_000_000;
        }
      }
      return "rendered " + stats(rendered) + "; painted " + stats(painted);
    }
  }
}
