package dev.csisupervisor.benchmarks;

import dev.csisupervisor.catalog.CatalogPublisher;
import dev.csisupervisor.catalog.ClusterSnapshot;
import dev.csisupervisor.catalog.ClusterView;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Load of the cluster catalog: NODES simulated nodes (each its own registry and {@link CatalogPublisher}, all in
 * this JVM) × PLUGINS registrations, through one real etcd (started here), watched by a {@link ClusterView} in
 * another process ({@link ClusterViewProbe}).
 *
 * <ol>
 *   <li>join: every node starts with its plugins registered; time until the other process sees them all;</li>
 *   <li>latency: single updates at a steady rate; time from {@code register()} here to the event there;</li>
 *   <li>burst: every registration updated at once; updates per second through to the other process;</li>
 *   <li>size: etcd keys, etcd RSS and database size, heap per node on both sides.</li>
 * </ol>
 * Args: {@code quick|full [NODES] [PLUGINS]} (quick: 200 × 5, full: 1000 × 5). etcd: {@code /usr/bin/etcd} or
 * {@code $ETCD_BIN}.
 */
final class ClusterCatalogLoad {
  private static final String PREFIX = "/bench";

  private ClusterCatalogLoad() {}

  static long epochNanos() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  /** Registration {@code i} of simulated node {@code node}, its version {@code t<t>}. */
  static PluginInfo plugin(int node, int i, long t) {
    PluginType type = i == 0 ? PluginType.CSI_CONTROLLER : PluginType.CSI_NODE;
    Fingerprint f = new Fingerprint("p" + i + ".csi.example", "1.0.0", Map.of(), Set.of("CONTROLLER_SERVICE"),
        Set.of("CREATE_DELETE_VOLUME"), Set.of("STAGE_UNSTAGE_VOLUME"), "node-" + node, 16, Map.of("zone", "z" + node % 3));
    return new PluginInfo(type, "p" + i, "t" + t, "alloc-" + node + "-" + i,
        Path.of("/var/lib/csi-agent/csi/p" + i + "/csi.sock"), Map.of(), f, PluginHealth.healthy(Instant.now()), false);
  }

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    int nodes = args.length > 1 ? Integer.parseInt(args[1]) : (quick ? 200 : 1000);
    int perNode = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    int latencySamples = quick ? 500 : 2000;
    int ratePerSecond = 200;
    System.out.println(Env.describe());
    String etcdBin = System.getenv().getOrDefault("ETCD_BIN", "/usr/bin/etcd");
    if (!Files.isExecutable(Path.of(etcdBin))) {
      System.out.println("RESULT cluster-catalog | SKIPPED: no etcd at " + etcdBin + " (apt-get install etcd-server)");
      return;
    }
    Path tmp = Files.createTempDirectory("cluster-bench");
    int clientPort = freePort();
    int peerPort = freePort();
    String ep = "http://127.0.0.1:" + clientPort;
    String peer = "http://127.0.0.1:" + peerPort;
    Process etcd = new ProcessBuilder(etcdBin, "--data-dir", tmp.resolve("etcd").toString(), "--listen-client-urls", ep,
        "--advertise-client-urls", ep, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
        "--initial-cluster", "default=" + peer, "--log-level", "warn", "--quota-backend-bytes", Long.toString(4L << 30))
        .redirectErrorStream(true).redirectOutput(tmp.resolve("etcd.log").toFile()).start();
    Process probe = null;
    List<CatalogPublisher> publishers = new ArrayList<>();
    List<PluginRegistry> registries = new ArrayList<>();
    try {
      awaitHealthy(ep, etcd);
      long etcdRss0 = rssKb(etcd.pid());

      // The other process.
      probe = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
          "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"),
          Main.class.getName(), "cluster-view-probe", ep, PREFIX).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      BufferedReader probeOut = new BufferedReader(new InputStreamReader(probe.getInputStream(), StandardCharsets.UTF_8));
      PrintWriter probeIn = new PrintWriter(probe.getOutputStream(), true, StandardCharsets.UTF_8);
      if (!"READY".equals(probeOut.readLine())) {
        throw new IllegalStateException("probe did not start");
      }
      ProbeReader reader = new ProbeReader(probeOut);
      reader.start();

      // Step 1: join.
      System.gc();
      long heap0 = usedHeap();
      long t0 = epochNanos();
      for (int n = 0; n < nodes; n++) {
        PluginRegistry r = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
        for (int i = 0; i < perNode; i++) {
          r.register(plugin(n, i, t0));
        }
        registries.add(r);
      }
      long joinStart = System.nanoTime();
      for (int n = 0; n < nodes; n++) {
        CatalogPublisher p = CatalogPublisher.builder().registry(registries.get(n)).etcd(EtcdOptions.of(ep))
            .prefix(PREFIX).nodeId("node-" + n).leaseTtl(Duration.ofSeconds(15)).build();
        p.start();
        publishers.add(p);
      }
      long total = (long) nodes * perNode;
      reader.awaitCount("PLUGIN_ADDED", total, Duration.ofMinutes(10));
      double joinSeconds = (System.nanoTime() - joinStart) / 1e9;
      System.gc();
      long heapPerNode = (usedHeap() - heap0) / nodes;
      System.out.printf(Locale.ROOT, "RESULT cluster-catalog join | %d nodes x %d plugins | all %d visible in the other"
              + " process after %.1f s (%.0f registrations/s incl. %d leases, node keys, reconciles) | %d threads here%n",
          nodes, perNode, total, joinSeconds, total / joinSeconds, nodes, Thread.activeCount());

      // Step 2: latency of single updates at a steady rate.
      Random random = new Random(13);
      reader.resetLags();
      long updatedBefore = reader.count("PLUGIN_UPDATED");
      long interval = 1_000_000_000L / ratePerSecond;
      long next = System.nanoTime();
      for (int s = 0; s < latencySamples; s++) {
        LockSupport.parkNanos(Math.max(0, next - System.nanoTime()));
        next += interval;
        int n = random.nextInt(nodes);
        int i = random.nextInt(perNode);
        registries.get(n).register(plugin(n, i, epochNanos()));
      }
      reader.awaitCount("PLUGIN_UPDATED", updatedBefore + latencySamples, Duration.ofMinutes(5));
      Stats lat = reader.lags();
      System.out.printf(Locale.ROOT, "RESULT cluster-catalog latency | register() in this JVM -> ClusterView event in"
              + " another process, %d updates at %d/s over %d nodes | %s%n",
          latencySamples, ratePerSecond, nodes, lat.describeMillis());

      // Step 3: burst: every registration updated at once.
      updatedBefore = reader.count("PLUGIN_UPDATED");
      reader.resetLags();
      long burstStart = System.nanoTime();
      long tb = epochNanos();
      for (int n = 0; n < nodes; n++) {
        for (int i = 0; i < perNode; i++) {
          registries.get(n).register(plugin(n, i, tb + 1));
        }
      }
      long registeredNs = System.nanoTime() - burstStart;
      reader.awaitCount("PLUGIN_UPDATED", updatedBefore + total, Duration.ofMinutes(10));
      double burstSeconds = (System.nanoTime() - burstStart) / 1e9;
      long errors = publishers.stream().mapToLong(p -> p.status().etcdErrors()).sum();
      System.out.printf(Locale.ROOT, "RESULT cluster-catalog burst | %d updates registered in %.2f s | all seen by the"
              + " other process after %.2f s: %.0f updates/s | lag %s | etcd errors %d%n",
          total, registeredNs / 1e9, burstSeconds, total / burstSeconds, reader.lags().describeMillis(), errors);

      // Step 4: sizes.
      ClusterSnapshot snap = ClusterView.read(EtcdOptions.of(ep), PREFIX);
      long keys = snap.entries().size() + snap.nodes().size();
      long etcdRss = rssKb(etcd.pid());
      probeIn.println("HEAP");
      String heapLine = reader.awaitHeap(Duration.ofSeconds(30));
      long probeHeap = Long.parseLong(heapLine.split(" ")[1]);
      System.out.printf(Locale.ROOT, "RESULT cluster-catalog size | %d etcd keys (%d per node) | etcd RSS %d MiB"
              + " (+%.1f KiB per node) | db %s | publisher side heap %.1f KiB per node | view process heap %.1f KiB per"
              + " node (%d MiB in all)%n",
          keys, keys / nodes, etcdRss / 1024, (etcdRss - etcdRss0) / (double) nodes, dbSize(ep),
          heapPerNode / 1024.0, probeHeap / 1024.0 / nodes, probeHeap >> 20);
      // The reference, same run: etcd's own WAL fsync and backend commit times (its /metrics).
      System.out.printf(Locale.ROOT, "RESULT cluster-catalog reference | etcd WAL fsync %s | etcd backend commit %s%n",
          histogramMean(ep, "etcd_disk_wal_fsync_duration_seconds"),
          histogramMean(ep, "etcd_disk_backend_commit_duration_seconds"));
    } finally {
      for (CatalogPublisher p : publishers) {
        p.close();
      }
      registries.forEach(PluginRegistry::close);
      if (probe != null) {
        probe.destroy();
        probe.waitFor(10, TimeUnit.SECONDS);
      }
      etcd.destroy();
      if (!etcd.waitFor(10, TimeUnit.SECONDS)) {
        etcd.destroyForcibly();
      }
      deleteTree(tmp);
    }
  }

  /** Reads the probe's lines in the background. */
  private static final class ProbeReader extends Thread {
    private final BufferedReader in;
    private final Map<String, AtomicLong> counts = new java.util.concurrent.ConcurrentHashMap<>();
    private final List<Long> lags = new ArrayList<>();
    private volatile String heap;

    ProbeReader(BufferedReader in) {
      super("probe-reader");
      setDaemon(true);
      this.in = in;
    }

    @Override
    public void run() {
      try {
        String line;
        while ((line = in.readLine()) != null) {
          if (line.startsWith("E ")) {
            String[] f = line.split(" ");
            long lag = Long.parseLong(f[2]);
            synchronized (this) {
              if (lag >= 0) {
                lags.add(lag);
              }
              counts.computeIfAbsent(f[1], k -> new AtomicLong()).incrementAndGet();
              notifyAll();
            }
          } else if (line.startsWith("HEAP ")) {
            synchronized (this) {
              heap = line;
              notifyAll();
            }
          }
        }
      } catch (IOException e) {
        // probe gone
      }
    }

    synchronized long count(String kind) {
      AtomicLong c = counts.get(kind);
      return c == null ? 0 : c.get();
    }

    synchronized void resetLags() {
      lags.clear();
    }

    synchronized Stats lags() {
      return new Stats(lags.stream().mapToLong(Long::longValue).toArray());
    }

    synchronized void awaitCount(String kind, long n, Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (count(kind) < n) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new IllegalStateException("probe saw " + count(kind) + " " + kind + " of " + n + " within " + timeout);
        }
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
    }

    synchronized String awaitHeap(Duration timeout) throws InterruptedException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (heap == null) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new IllegalStateException("no HEAP answer");
        }
        TimeUnit.NANOSECONDS.timedWait(this, left);
      }
      return heap;
    }
  }

  private static long usedHeap() {
    Runtime rt = Runtime.getRuntime();
    return rt.totalMemory() - rt.freeMemory();
  }

  static long rssKb(long pid) {
    try {
      for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
        if (l.startsWith("VmRSS:")) {
          return Long.parseLong(l.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux
    }
    return 0;
  }

  /** "mean 1.23 ms over N" of a Prometheus histogram from etcd's /metrics. */
  private static String histogramMean(String ep, String name) {
    try {
      HttpURLConnection c = (HttpURLConnection) URI.create(ep + "/metrics").toURL().openConnection();
      String body = new String(c.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      double sum = 0;
      double count = 0;
      for (String l : body.split("\n")) {
        if (l.startsWith(name + "_sum ")) {
          sum = Double.parseDouble(l.substring(l.indexOf(' ') + 1).strip());
        } else if (l.startsWith(name + "_count ")) {
          count = Double.parseDouble(l.substring(l.indexOf(' ') + 1).strip());
        }
      }
      return count == 0 ? "n/a" : String.format(Locale.ROOT, "mean %.2f ms over %.0f", sum / count * 1000, count);
    } catch (IOException | RuntimeException e) {
      return "n/a (" + e + ")";
    }
  }

  private static String dbSize(String ep) {
    try {
      Process p = new ProcessBuilder("etcdctl", "--endpoints", ep, "endpoint", "status", "-w", "table")
          .redirectErrorStream(true).start();
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      p.waitFor(10, TimeUnit.SECONDS);
      for (String l : out.split("\n")) {
        if (l.contains(ep)) {
          String[] cols = l.split("\\|");
          return cols.length > 4 ? cols[4].strip() : "?";
        }
      }
      return "?";
    } catch (IOException | InterruptedException e) {
      return "n/a (no etcdctl)";
    }
  }

  static void awaitHealthy(String ep, Process etcd) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      if (!etcd.isAlive()) {
        throw new IllegalStateException("etcd exited with " + etcd.exitValue());
      }
      try {
        HttpURLConnection c = (HttpURLConnection) URI.create(ep + "/health").toURL().openConnection();
        c.setConnectTimeout(200);
        if (c.getResponseCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not yet
      }
      etcd.waitFor(50, TimeUnit.MILLISECONDS);
    }
    throw new IllegalStateException("etcd not healthy in 20 s");
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static void deleteTree(Path root) throws IOException {
    try (var paths = Files.walk(root)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
