package dev.csisupervisor.benchmarks;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.PrestartRequest;
import dev.csisupervisor.supervisor.StopRequest;
import dev.csisupervisor.supervisor.TaskContext;
import dev.csisupervisor.supervisor.TaskEventEmitter;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Benchmark 1: time from "the plugin starts answering ready" to "a subscriber receives REGISTERED",
 * through the real supervisor hook (shared 2-thread scheduler, socket watcher, async CSI client,
 * default backoff 50 ms doubling to 5 s), a registry over the durable journal store (every registration is a durable
 * commit) and a subscriber on its own executor. The mock plugins share one 2-thread epoll loop.
 *
 * <p>Scenarios, each a fresh plugin task (prestart, poststart, ..., stop):
 * <ul>
 *   <li>{@code socket-appears}: poststart, a random wait (backoff runs against a missing socket),
 *       then the plugin binds its socket, ready. t0 = just before {@code start()}.</li>
 *   <li>{@code stale-socket}: a stale socket file (nobody listening, connect refused) is there before
 *       poststart; after a random wait the plugin replaces it and serves. t0 = before {@code start()}.</li>
 *   <li>{@code listen-before-accept}: the socket file appears and listens (connects queue in the
 *       backlog, the first probe waits) but nothing accepts; after a random wait the plugin starts
 *       accepting. t0 = the moment accepting starts.</li>
 *   <li>{@code ready-later}: the plugin serves from the start but reports not ready; after a random
 *       wait (0–1 s) it flips to ready. No file event marks that moment: the supervisor finds it at its
 *       next backoff probe. t0 = the flip.</li>
 * </ul>
 * Several plugins start at once ({@link #LANES} lanes), as on a node where a job brings up a few.
 */
final class TimeToRegister {
  private static final int LANES = 4;
  private static final boolean DEBUG = Boolean.getBoolean("bench.debug");

  private enum Scenario {
    SOCKET_APPEARS("socket-appears", 200),
    STALE_SOCKET("stale-socket", 300),
    LISTEN_BEFORE_ACCEPT("listen-before-accept", 100),
    READY_LATER("ready-later", 1000);

    final String tag;
    final int maxDelayMillis;

    Scenario(String tag, int maxDelayMillis) {
      this.tag = tag;
      this.maxDelayMillis = maxDelayMillis;
    }
  }

  private final Path root;
  private final StateStore store;
  private final PluginRegistry registry;
  private final ScheduledThreadPoolExecutor scheduler;
  private final CsiPluginSupervisor supervisor;
  private final EventLoopGroup pluginLoops;
  private final ExecutorService subscriberExecutor;
  private final Subscription subscription;
  private final Map<String, CompletableFuture<Long>> waiting = new ConcurrentHashMap<>();

  private TimeToRegister(Path root, boolean durable) {
    this.root = root;
    this.store = durable ? JournalStateStore.open(root.resolve("data")) : new InMemoryStateStore();
    this.registry = PluginRegistry.builder().stateStore(store).build();
    this.scheduler = new ScheduledThreadPoolExecutor(2, daemonThreads("csi-supervisor"));
    scheduler.setRemoveOnCancelPolicy(true);
    this.supervisor = CsiPluginSupervisor.builder()
        .csiRoot(root.resolve("csi"))
        .registry(registry)
        .scheduler(scheduler)
        .random(new Random(1))
        .build();
    this.pluginLoops = new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory("bench-plugins", true),
        EpollIoHandler.newFactory());
    this.subscriberExecutor = Executors.newSingleThreadExecutor(daemonThreads("bench-subscriber"));
    this.subscription = registry.subscribe(PluginType.CSI_NODE, new PluginListener() {
      @Override
      public void onEvent(PluginEvent event) {
        long now = System.nanoTime();
        if (event.kind() == PluginEvent.Kind.REGISTERED) {
          CompletableFuture<Long> f = waiting.get(event.plugin().name());
          if (f != null) {
            f.complete(now);
          }
        }
      }

      @Override
      public void onLagged(long lastDeliveredSequence) {
        System.err.println("subscriber lagged: the results are invalid");
      }
    }, subscriberExecutor);
  }

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    boolean durable = args.length < 2 || args[1].equals("durable");
    if (!durable && !args[1].equals("memory")) {
      throw new IllegalArgumentException("store must be durable or memory, got '" + args[1] + "'");
    }
    int perScenario = quick ? 100 : 500;
    int readyLater = quick ? 40 : 200;
    Path root = Files.createTempDirectory(Path.of("/tmp"), "csi-ttr-");
    System.out.println(Env.describe());
    System.out.printf("time-to-register (%s, %s store): %d starts per scenario (%d for ready-later), %d lanes, root %s%n",
        quick ? "quick" : "full", durable ? "durable" : "in-memory", perScenario, readyLater, LANES, root);
    TimeToRegister bench = new TimeToRegister(root, durable);
    try {
      bench.run(Scenario.SOCKET_APPEARS, 40, 1000); // warm-up (JIT, MapDB, first channels): not recorded
      int total = 0;
      for (Scenario s : Scenario.values()) {
        int n = s == Scenario.READY_LATER ? readyLater : perScenario;
        long start = System.nanoTime();
        long[][] result = bench.run(s, n, 0);
        total += n;
        Stats fromT0 = new Stats(result[0]);
        String line = String.format("RESULT time-to-register | %s store | %s | %s | %d of %d took >= 100 ms",
            durable ? "durable" : "memory", s.tag, fromT0.describeMillis(), fromT0.countAtLeast(100_000_000L), n);
        if (s == Scenario.SOCKET_APPEARS || s == Scenario.STALE_SOCKET) {
          // t0 is taken before start(): the socket appears inside it, so the supervisor may already be probing
          // when it returns. Its own cost is reported so it can be read out of the figure.
          line += " | of which start() p50 " + Stats.ms(new Stats(result[1]).p50()) + " ms";
        }
        line += String.format(" | scenario took %.1f s", (System.nanoTime() - start) / 1e9);
        System.out.println(line);
      }
      System.out.println("time-to-register: " + total + " plugin starts measured (load " + Env.loadAverage() + ")");
    } finally {
      bench.close();
      Fixtures.deleteRecursively(root);
    }
  }

  /** Runs {@code n} rounds of a scenario; returns {t0 to REGISTERED, start() duration} in ns. */
  private long[][] run(Scenario s, int n, int seedOffset) throws Exception {
    long[] fromT0 = new long[n];
    long[] startCost = new long[n];
    ExecutorService lanes = Executors.newFixedThreadPool(LANES, daemonThreads("bench-lane"));
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int idx = i;
        futures.add(lanes.submit(() -> {
          long[] r = round(s, idx + seedOffset, new Random(31L * (idx + seedOffset) + s.ordinal()));
          fromT0[idx] = r[0];
          startCost[idx] = r[1];
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } finally {
      lanes.shutdownNow();
    }
    return new long[][] {fromT0, startCost};
  }

  private long[] round(Scenario s, int i, Random rnd) throws Exception {
    String id = "ttr-" + s.tag + "-" + i;
    CompletableFuture<Long> registered = new CompletableFuture<>();
    waiting.put(id, registered);
    CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext("alloc-" + id, "plugin"),
        CsiPluginConfig.builder(id, PluginKind.NODE).build(), TaskEventEmitter.discarding(), reason -> { });
    hook.prestart(PrestartRequest.withEnv(Map.of()));
    Path socket = hook.socketPath();
    long delayMillis = rnd.nextInt(s.maxDelayMillis + 1);
    MockCsiPlugin plugin = null;
    MockCsiPlugin hidden = null;
    LateAcceptor acceptor = null;
    long t0;
    long started = 0;
    try {
      switch (s) {
        case SOCKET_APPEARS, STALE_SOCKET -> {
          if (s == Scenario.STALE_SOCKET) {
            leaveStaleSocket(socket);
          }
          hook.poststart(PoststartRequest.of());
          Thread.sleep(delayMillis);
          t0 = System.nanoTime();
          plugin = plugin(socket).start();
          started = System.nanoTime();
        }
        case LISTEN_BEFORE_ACCEPT -> {
          Path target = Files.createDirectories(root.resolve("hidden")).resolve(i + ".sock");
          hidden = plugin(target).start();
          hook.poststart(PoststartRequest.of());
          Thread.sleep(rnd.nextInt(50));
          acceptor = LateAcceptor.bind(socket, target); // the file appears; the supervisor connects and waits
          Thread.sleep(delayMillis);
          t0 = System.nanoTime();
          acceptor.startAccepting();
        }
        case READY_LATER -> {
          plugin = plugin(socket).neverReady().start();
          hook.poststart(PoststartRequest.of());
          Thread.sleep(delayMillis);
          t0 = System.nanoTime();
          plugin.setReady(true);
        }
        default -> throw new IllegalStateException(s.toString());
      }
      long done = registered.get(60, TimeUnit.SECONDS);
      if (DEBUG && done - t0 > 80_000_000L) {
        System.err.printf("slow round %s: delay %d ms, latency %.1f ms, probes seen by plugin %d%n", id, delayMillis,
            (done - t0) / 1e6, plugin != null ? plugin.probeCount() : hidden.probeCount());
      }
      return new long[] {done - t0, started == 0 ? 0 : started - t0};
    } finally {
      waiting.remove(id);
      hook.stop(StopRequest.because("benchmark round over"));
      if (plugin != null) {
        plugin.stop();
      }
      if (acceptor != null) {
        acceptor.close();
      }
      if (hidden != null) {
        hidden.stop();
      }
    }
  }

  private MockCsiPlugin.Builder plugin(Path socket) {
    return MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE).eventLoopGroup(pluginLoops);
  }

  /** A socket file nobody listens on: what a crashed plugin leaves behind (connect is refused). */
  private static void leaveStaleSocket(Path socket) throws IOException {
    try (ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      s.bind(UnixDomainSocketAddress.of(socket));
    }
  }

  private void close() throws InterruptedException {
    subscription.close();
    supervisor.close();
    registry.close();
    store.close();
    scheduler.shutdownNow();
    subscriberExecutor.shutdownNow();
    pluginLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
  }

  static java.util.concurrent.ThreadFactory daemonThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
