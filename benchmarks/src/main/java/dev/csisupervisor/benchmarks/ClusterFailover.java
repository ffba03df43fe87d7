package dev.csisupervisor.benchmarks;

import dev.csisupervisor.catalog.CatalogPublisher;
import dev.csisupervisor.catalog.ClusterEvent;
import dev.csisupervisor.catalog.ClusterView;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The cluster catalog through leader elections (issue 21): NODES simulated nodes (a registry and a
 * {@link CatalogPublisher} each, in this JVM, first connected to members in turn) × PLUGINS registrations on a
 * real three-member etcd ({@link EtcdCluster}), watched by a {@link ClusterView}. Then ELECTIONS times: kill -9
 * the leader, update one registration on a tenth of the nodes at once ("during"), wait until the view equals
 * every registry exactly and every publisher is in sync again (the convergence time), restart the killed member
 * and update again ("after").
 *
 * <p>Reported: convergence after a leader kill (p50, p99, max), publish lag of the updates made during the
 * election and after it (register() here to the view's event), and false lease expiries: a live node's key the
 * view saw removed, or a node's lease replaced (goal 0 for both). Args: {@code quick|full [NODES] [PLUGINS]
 * [ELECTIONS]} (quick: 100 × 5, 3 elections; full: 1000 × 5, 10 elections).
 */
final class ClusterFailover {
  private static final String PREFIX = "/failover";
  private static final Duration CONVERGE_WITHIN = Duration.ofSeconds(120);

  private ClusterFailover() {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    int nodes = args.length > 1 ? Integer.parseInt(args[1]) : (quick ? 100 : 1000);
    int perNode = args.length > 2 ? Integer.parseInt(args[2]) : 5;
    int elections = args.length > 3 ? Integer.parseInt(args[3]) : (quick ? 3 : 10);
    System.out.println(Env.describe());
    var etcdBin = dev.csisupervisor.catalog.testing.EtcdProcess.binary();
    if (etcdBin.isEmpty()) {
      System.out.println("RESULT cluster-failover | SKIPPED: no etcd (/usr/bin/etcd or $ETCD_BIN; apt-get install etcd-server)");
      return;
    }
    Path tmp = Files.createTempDirectory("cluster-failover");
    List<PluginRegistry> registries = new ArrayList<>();
    List<CatalogPublisher> publishers = new ArrayList<>();
    try (EtcdCluster etcd = EtcdCluster.start(etcdBin.get(), tmp, 3)) {
      List<EtcdCluster.Member> members = etcd.members();
      // Step 1: every node joins with its plugins; the view sees them all.
      for (int n = 0; n < nodes; n++) {
        PluginRegistry r = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
        for (int i = 0; i < perNode; i++) {
          r.register(ClusterCatalogLoad.plugin(n, i, 0));
        }
        CatalogPublisher p = CatalogPublisher.builder().registry(r).etcd(options(members, n % members.size()))
            .prefix(PREFIX).nodeId("node-" + n).leaseTtl(Duration.ofSeconds(15))
            .backoff(Duration.ofMillis(100), Duration.ofSeconds(2)).build();
        p.start();
        registries.add(r);
        publishers.add(p);
      }
      ClusterView view = ClusterView.builder().etcd(options(members, 0)).prefix(PREFIX).build();
      Watcher watcher = new Watcher();
      view.start();
      view.subscribe(watcher, Runnable::run);
      long t0 = System.nanoTime();
      awaitConverged(view, registries, publishers);
      System.out.printf(Locale.ROOT, "RESULT cluster-failover join | %d nodes x %d plugins on 3 members | converged in"
          + " %s ms%n", nodes, perNode, Stats.ms(System.nanoTime() - t0));

      Map<String, Long> leases = leases(publishers);
      long[] converge = new long[elections];
      Random random = new Random(21);
      for (int e = 0; e < elections; e++) {
        // Step 2: kill -9 the leader; a tenth of the nodes change one registration at once.
        EtcdCluster.Member leader = etcd.leader().orElseThrow(() -> new IllegalStateException("no leader"));
        watcher.phase = "during";
        long killed = System.nanoTime();
        etcd.kill(leader);
        update(registries, random, nodes / 10 + 1, perNode);
        awaitConverged(view, registries, publishers);
        converge[e] = System.nanoTime() - killed;
        System.out.printf(Locale.ROOT, "election %d: killed %s, converged in %s ms%n", e + 1, leader.name(),
            Stats.ms(converge[e]));
        // Step 3: the member back; changes after the election.
        etcd.restart(leader);
        watcher.phase = "after";
        update(registries, random, nodes / 10 + 1, perNode);
        awaitConverged(view, registries, publishers);
      }
      int regrants = 0;
      for (Map.Entry<String, Long> l : leases(publishers).entrySet()) {
        if (!l.getValue().equals(leases.get(l.getKey()))) {
          regrants++;
        }
      }
      System.out.printf(Locale.ROOT, "RESULT cluster-failover converge | %d leader kills (kill -9), %d nodes x %d plugins |"
          + " %s%n", elections, nodes, perNode, Stats.of(converge, elections).describeMillis());
      System.out.printf(Locale.ROOT, "RESULT cluster-failover lag | register() -> view event, during the elections %s |"
          + " after %s%n", watcher.lags("during"), watcher.lags("after"));
      System.out.printf(Locale.ROOT, "RESULT cluster-failover false-expiries | live keys removed %d, leases replaced %d"
          + " (goal 0)%n", watcher.removed.get(), regrants);
      view.close();
      // Before etcd stops: each node leaves with its lease revoked.
      publishers.forEach(CatalogPublisher::close);
    } finally {
      publishers.forEach(CatalogPublisher::close);
      registries.forEach(PluginRegistry::close);
    }
  }

  private static EtcdOptions options(List<EtcdCluster.Member> members, int first) {
    List<String> order = new ArrayList<>();
    for (int k = 0; k < members.size(); k++) {
      order.add(members.get((first + k) % members.size()).endpoint());
    }
    return EtcdOptions.of(String.join(",", order)).withRequestTimeout(Duration.ofSeconds(2));
  }

  /** One registration on each of {@code count} random nodes, its version the time of the change. */
  private static void update(List<PluginRegistry> registries, Random random, int count, int perNode) {
    for (int k = 0; k < count; k++) {
      int n = random.nextInt(registries.size());
      registries.get(n).register(ClusterCatalogLoad.plugin(n, random.nextInt(perNode), ClusterCatalogLoad.epochNanos()));
    }
  }

  private static Map<String, Long> leases(List<CatalogPublisher> publishers) {
    Map<String, Long> m = new HashMap<>();
    publishers.forEach(p -> m.put(p.nodeId(), p.status().leaseId()));
    return m;
  }

  /** Until the view holds exactly the registries' content and every publisher is connected without backlog. */
  private static void awaitConverged(ClusterView view, List<PluginRegistry> registries, List<CatalogPublisher> publishers)
      throws InterruptedException {
    long deadline = System.nanoTime() + CONVERGE_WITHIN.toNanos();
    while (!converged(view, registries, publishers)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("not converged within " + CONVERGE_WITHIN + "; view " + view.freshness());
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
  }

  private static boolean converged(ClusterView view, List<PluginRegistry> registries, List<CatalogPublisher> publishers) {
    for (CatalogPublisher p : publishers) {
      if (!p.status().connected() || p.status().backlog() > 0) {
        return false;
      }
    }
    var snapshot = view.snapshot();
    int expected = 0;
    for (int n = 0; n < registries.size(); n++) {
      var onNode = snapshot.nodePlugins("node-" + n);
      List<PluginInfo> mine = new ArrayList<>();
      for (PluginType t : PluginType.values()) {
        mine.addAll(registries.get(n).listAll(t));
      }
      expected += mine.size();
      for (PluginInfo p : mine) {
        if (onNode.stream().noneMatch(e -> e.name().equals(p.name()) && e.type() == p.type()
            && e.allocId().equals(p.allocId()) && e.version().equals(p.version()))) {
          return false;
        }
      }
    }
    return snapshot.entries().size() == expected && snapshot.nodes().size() == registries.size();
  }

  /** The view's events: lag of each update (its version is its time) by phase; removals (none expected). */
  private static final class Watcher implements dev.csisupervisor.catalog.ClusterListener {
    volatile String phase = "join";
    final AtomicLong removed = new AtomicLong();
    private final Map<String, ConcurrentLinkedQueue<Long>> lags = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public void onEvent(ClusterEvent e) {
      if (e.kind() == ClusterEvent.Kind.PLUGIN_REMOVED || e.kind() == ClusterEvent.Kind.NODE_REMOVED) {
        removed.incrementAndGet();
      } else if (e.kind() == ClusterEvent.Kind.PLUGIN_UPDATED && e.plugin().version().startsWith("t")) {
        long lag = ClusterCatalogLoad.epochNanos() - Long.parseLong(e.plugin().version().substring(1));
        lags.computeIfAbsent(phase, k -> new ConcurrentLinkedQueue<>()).add(lag);
      }
    }

    String lags(String phase) {
      var q = lags.get(phase);
      if (q == null || q.isEmpty()) {
        return "(none)";
      }
      return new Stats(q.stream().mapToLong(Long::longValue).toArray()).describeMillis();
    }
  }
}
