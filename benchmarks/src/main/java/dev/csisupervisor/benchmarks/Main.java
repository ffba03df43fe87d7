package dev.csisupervisor.benchmarks;

import java.util.Arrays;
import java.util.Locale;

/**
 * Entry point of {@code target/csi-benchmarks.jar}: {@code java -jar csi-benchmarks.jar <benchmark> [args]}.
 * {@code benchmarks/run.sh} is the usual way in; see {@code benchmarks/README.md}.
 *
 * <pre>
 * env                                  machine description for the results table
 * jmh quick|full [regex]               the JMH benchmarks (2 registry change cost, 2 concurrent writers,
 *                                      3 fan-out, 6 probe round trip), then a summary
 * time-to-register quick|full [durable|memory]  1: ready plugin -> subscriber sees REGISTERED
 * restore quick|full SIZE              4: open a state store with SIZE registrations
 * supervision quick|full [N] [SECONDS] [durable|memory]  5: N supervised plugins (child JVM serves them)
 * fanout-stuck quick|full              3b: register latency with and without a stuck subscriber
 * plugin-farm CSI_ROOT COUNT THREADS   (child process of "supervision")
 * crash-loop [KILLS] [SEED]            the durable store under 1 000 SIGKILLs (not in CI)
 * cluster-catalog quick|full [NODES] [PLUGINS]  7: simulated nodes through one etcd to a view in another process
 * cluster-view-probe ENDPOINT PREFIX   (child process of "cluster-catalog")
 * cluster-failover quick|full [NODES] [PLUGINS] [ELECTIONS]  7b: leader kills on a 3-member etcd
 * cluster-volumes-scale quick|full [VOLUMES] [NODES]  19d: claims, a controller's reads, idle requests, at scale
 * cluster-requests quick|full [N] [KILLS]  20: snapshot and restore requests through the controller agent, its kill
 * volumes quick|full                   8: node volume mounts: overhead vs direct RPCs, 1000 concurrent, restart
 * volume-crash-loop [KILLS] [SEED]     8b: the volume manager under 1 000 SIGKILLs (not in CI)
 * volume-crash-child ...               (child process of "volume-crash-loop")
 * plugin-death quick|full [ROUNDS]     9a: kill -9 of an external plugin -> unhealthy, restart -> healthy
 * journal-roll quick|full              9b: commit latency under 16 writers across 20+ segment rolls
 * </pre>
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    // Before any logger exists: per-plugin INFO lines would cost time on the measured threads.
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    if (args.length == 0) {
      usage();
      System.exit(2);
    }
    String[] rest = Arrays.copyOfRange(args, 1, args.length);
    switch (args[0]) {
      case "env" -> Env.main(rest);
      case "jmh" -> JmhSuite.main(rest);
      case "time-to-register" -> TimeToRegister.main(rest);
      case "restore" -> Restore.main(rest);
      case "supervision" -> SupervisionAtScale.main(rest);
      case "fanout-stuck" -> FanOutStuckSubscriber.main(rest);
      case "plugin-farm" -> PluginFarm.main(rest);
      case "crash-loop" -> CrashLoop.main(rest);
      case "volumes" -> VolumeMounts.main(rest);
      case "volume-crash-loop" -> VolumeCrashLoop.main(rest);
      case "volume-crash-child" -> VolumeCrashLoop.child(rest);
      case "cluster-catalog" -> ClusterCatalogLoad.main(rest);
      case "cluster-view-probe" -> ClusterViewProbe.main(rest);
      case "plugin-death" -> PluginDeath.main(rest);
      case "journal-roll" -> JournalRoll.main(rest);
      case "cluster-failover" -> ClusterFailover.main(rest);
      case "cluster-volumes-scale" -> ClusterVolumesScale.main(rest);
      case "cluster-requests" -> ClusterRequests.main(rest);
      default -> {
        System.err.println("unknown benchmark '" + args[0] + "'");
        usage();
        System.exit(2);
      }
    }
  }

  private static void usage() {
    System.err.println("usage: java -jar csi-benchmarks.jar env | jmh quick|full [regex] | time-to-register quick|full [durable|memory]"
        + " | restore quick|full SIZE | supervision quick|full [PLUGINS] [SECONDS] | fanout-stuck quick|full"
        + " | crash-loop [KILLS] [SEED] | cluster-catalog quick|full [NODES] [PLUGINS] | cluster-failover quick|full [NODES] [PLUGINS] [ELECTIONS] | cluster-volumes-scale quick|full [VOLUMES] [NODES] | cluster-requests quick|full [N] [KILLS] | volumes quick|full");
  }

  /** Parses "quick" / "full" (the first argument of every harness). */
  static boolean isQuick(String[] args) {
    if (args.length == 0) {
      throw new IllegalArgumentException("mode must be 'quick' or 'full', got nothing");
    }
    return switch (args[0].toLowerCase(Locale.ROOT)) {
      case "quick" -> true;
      case "full" -> false;
      default -> throw new IllegalArgumentException("mode must be 'quick' or 'full', got '" + args[0] + "'");
    };
  }
}
