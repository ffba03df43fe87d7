package dev.csisupervisor.benchmarks;

import dev.csisupervisor.catalog.ClaimRequest;
import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumesSnapshot;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Cluster volumes at scale (issue 35): VOLUMES volumes and NODES simulated nodes through one real etcd (started
 * here), the nodes' claims made through the real client ({@link ClusterVolumes}; one client per 32 nodes, each claim
 * in its node's name), and a controller's view of them.
 *
 * <ol>
 *   <li>claims: one single-writer claim per volume, 16 at a time: each claim's time, p50/p99, claims per second;</li>
 *   <li>a controller round's read: today's direct read of everything (the reference, same run), the mirror's list,
 *       and the mirror's snapshot after one change (its decode);</li>
 *   <li>idle: what a controller round asks etcd every second while nothing changes (who leads, whether the plugin
 *       publishes, the snapshot), with the mirror and without it: etcd requests per second;</li>
 *   <li>a change acted on: from a claim's answer on a node to the controller's hint reading it in its mirror.</li>
 * </ol>
 * Args: {@code quick|full [VOLUMES] [NODES]} (quick: 2 000 × 200, full: 10 000 × 1 000).
 */
final class ClusterVolumesScale {
  private static final String PREFIX = "/scale";
  private static final String PLUGIN = "ebs.csi.example";

  private ClusterVolumesScale() {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    int volumes = args.length > 1 ? Integer.parseInt(args[1]) : (quick ? 2000 : 10_000);
    int nodes = args.length > 2 ? Integer.parseInt(args[2]) : (quick ? 200 : 1000);
    System.out.println(Env.describe());
    String etcdBin = System.getenv().getOrDefault("ETCD_BIN", "/usr/bin/etcd");
    if (!Files.isExecutable(Path.of(etcdBin))) {
      System.out.println("RESULT cluster-volumes-scale | SKIPPED: no etcd at " + etcdBin);
      return;
    }
    Path tmp = Files.createTempDirectory("cluster-volumes-scale");
    String ep = "http://127.0.0.1:" + ClusterCatalogLoad.freePort();
    String peer = "http://127.0.0.1:" + ClusterCatalogLoad.freePort();
    Process etcd = new ProcessBuilder(etcdBin, "--data-dir", tmp.resolve("etcd").toString(), "--listen-client-urls", ep,
        "--advertise-client-urls", ep, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
        "--initial-cluster", "default=" + peer, "--log-level", "warn", "--quota-backend-bytes", Long.toString(4L << 30))
        .redirectErrorStream(true).redirectOutput(tmp.resolve("etcd.log").toFile()).start();
    List<AutoCloseable> closeables = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(16);
    try {
      ClusterCatalogLoad.awaitHealthy(ep, etcd);
      EtcdOptions options = EtcdOptions.of(ep).withRequestTimeout(Duration.ofSeconds(30));
      ClusterVolumes admin = client(options, "admin", closeables);
      long t0 = System.nanoTime();
      List<Future<?>> done = new ArrayList<>();
      for (int i = 0; i < volumes; i++) {
        int v = i;
        done.add(pool.submit(() -> admin.register(new ClusterVolume(PLUGIN, "vol-" + v, 1L << 30,
            Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), List.of(), Map.of("type", "gp3"), Map.of()))));
      }
      for (Future<?> f : done) {
        f.get();
      }
      System.out.printf(Locale.ROOT, ">>> %d volumes registered in %d ms%n", volumes,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));

      // 1. Claims, one per volume, each in its node's name.
      int clients = Math.max(1, Math.min(nodes / 32, 32));
      List<ClusterVolumes> nodeClients = new ArrayList<>();
      for (int c = 0; c < clients; c++) {
        nodeClients.add(client(options, "nodes-" + c, closeables));
      }
      long[] claimNanos = new long[volumes];
      done.clear();
      t0 = System.nanoTime();
      for (int i = 0; i < volumes; i++) {
        int v = i;
        done.add(pool.submit(() -> {
          int node = v % nodes;
          long s = System.nanoTime();
          nodeClients.get(node % clients).claim(claim(v, node));
          claimNanos[v] = System.nanoTime() - s;
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
      long claimsWall = System.nanoTime() - t0;
      Stats claimStats = new Stats(claimNanos);

      // 2. A round's read: today's direct read (the reference), the mirror's list, its decode after a change.
      ClusterVolumes direct = client(options, "direct", closeables);
      long[] directNanos = new long[5];
      for (int i = 0; i < directNanos.length; i++) {
        long s = System.nanoTime();
        VolumesSnapshot snap = direct.read();
        directNanos[i] = System.nanoTime() - s;
        if (snap.claims().size() != volumes) {
          throw new IllegalStateException("expected " + volumes + " claims, read " + snap.claims().size());
        }
      }
      ClusterVolumes controller = client(options, "controller", closeables);
      Map<String, Long> seen = new ConcurrentHashMap<>();
      AtomicInteger watchedAlloc = new AtomicInteger(-1);
      long s = System.nanoTime();
      Map<String, Long> decodes = new ConcurrentHashMap<>();
      closeables.add(controller.watchChanges(() -> {
        int alloc = watchedAlloc.get();
        if (alloc < 0) {
          return;
        }
        long r = System.nanoTime();
        VolumesSnapshot now = controller.read(); // the first read after a change decodes the mirror
        long took = System.nanoTime() - r;
        if (now.claimsOf(PLUGIN, "vol-" + alloc).stream().anyMatch(c -> c.allocId().equals("again-" + alloc))) {
          seen.putIfAbsent("again-" + alloc, System.nanoTime());
          decodes.putIfAbsent("again-" + alloc, took);
        }
      }));
      long mirrorList = System.nanoTime() - s; // the open lists synchronously, then watches
      long afterOpen = controller.etcdRequests();
      VolumesSnapshot first = controller.read();
      if (first.claims().size() != volumes || controller.etcdRequests() != afterOpen) {
        throw new IllegalStateException("the mirror is not in sync after its open: " + first.claims().size()
            + " claims, " + (controller.etcdRequests() - afterOpen) + " request(s) for the read");
      }
      ClusterVolumes.Leadership lead = controller.lead(PLUGIN).orElseThrow();
      controller.rememberCapabilities(lead, Set.of("PUBLISH_UNPUBLISH_VOLUME"));

      // 4. (and 2's decode) Changes acted on: release a claim and claim it again under another alloc.
      int changes = quick ? 100 : 200;
      long[] seenNanos = new long[changes];
      long[] decodeNanos = new long[changes];
      for (int k = 0; k < changes; k++) {
        int v = (k * 37) % volumes;
        int node = v % nodes;
        ClusterVolumes nc = nodeClients.get(node % clients);
        ClaimRequest original = claim(v, node);
        nc.release(PLUGIN, "vol-" + v, original.nodeId(), original.allocId());
        watchedAlloc.set(v);
        nc.claim(new ClaimRequest(PLUGIN, "vol-" + v, original.nodeId(), "again-" + v,
            VolumeAccessMode.SINGLE_NODE_WRITER, false, original.nodeId(), Map.of()));
        long answered = System.nanoTime();
        long deadline = answered + TimeUnit.SECONDS.toNanos(10);
        while (!seen.containsKey("again-" + v) && System.nanoTime() < deadline) {
          Thread.sleep(0, 100_000);
        }
        Long at = seen.get("again-" + v);
        seenNanos[k] = at == null ? TimeUnit.SECONDS.toNanos(10) : Math.max(0, at - answered);
        decodeNanos[k] = decodes.getOrDefault("again-" + v, 0L);
        // put it back as it was, for the next rounds
        nc.release(PLUGIN, "vol-" + v, original.nodeId(), "again-" + v);
        nc.claim(original);
      }
      watchedAlloc.set(-1);

      // 3. Idle rounds, once a second, with the mirror and without.
      int idleSeconds = quick ? 5 : 10;
      Thread.sleep(1500); // the last changes' events in
      double mirrorRate = idleRequests(controller, idleSeconds);
      double directRate = idleRequests(direct, idleSeconds);

      Stats seenStats = new Stats(seenNanos);
      Stats decodeStats = new Stats(decodeNanos);
      Stats directStats = new Stats(directNanos);
      System.out.printf(Locale.ROOT, "RESULT cluster-volumes-scale | volumes %d nodes %d (%d clients) | claim p50 %s p99 %s"
          + " ms (%.0f claims/s, 16 at a time) | round read: direct %s ms (today's, every round), mirror list %s ms"
          + " (once), mirror snapshot after a change %s ms p99 %s | idle etcd requests/s: mirror %.2f vs direct %.2f"
          + " | change to controller p50 %s p99 %s ms | claims %d%n",
          volumes, nodes, clients, Stats.ms(claimStats.p50()), Stats.ms(claimStats.percentile(99)),
          volumes / (claimsWall / 1e9), Stats.ms(directStats.p50()), Stats.ms(mirrorList),
          Stats.ms(decodeStats.p50()), Stats.ms(decodeStats.percentile(99)), mirrorRate, directRate,
          Stats.ms(seenStats.p50()), Stats.ms(seenStats.percentile(99)), first.claims().size());
    } finally {
      pool.shutdownNow();
      for (int i = closeables.size() - 1; i >= 0; i--) {
        try {
          closeables.get(i).close();
        } catch (Exception e) {
          // best effort
        }
      }
      etcd.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      try (var walk = Files.walk(tmp)) {
        walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  /** etcd requests per second of a controller round's reads, once a second for {@code seconds}. */
  private static double idleRequests(ClusterVolumes v, int seconds) throws InterruptedException {
    long before = v.etcdRequests();
    long start = System.nanoTime();
    for (int i = 0; i < seconds; i++) {
      v.lead(PLUGIN);
      v.controllerPublishes(PLUGIN);
      v.read();
      Thread.sleep(1000);
    }
    return (v.etcdRequests() - before) / ((System.nanoTime() - start) / 1e9);
  }

  private static ClaimRequest claim(int v, int node) {
    return new ClaimRequest(PLUGIN, "vol-" + v, "node-" + node, "alloc-" + v, VolumeAccessMode.SINGLE_NODE_WRITER,
        false, "node-" + node, Map.of());
  }

  private static ClusterVolumes client(EtcdOptions options, String nodeId, List<AutoCloseable> closeables) {
    ClusterVolumes v = ClusterVolumes.builder().etcd(options).prefix(PREFIX).nodeId(nodeId)
        .leaseTtl(Duration.ofSeconds(10)).build();
    closeables.add(v);
    return v;
  }
}
