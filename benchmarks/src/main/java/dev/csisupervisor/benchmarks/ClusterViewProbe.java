package dev.csisupervisor.benchmarks;

import dev.csisupervisor.catalog.ClusterEvent;
import dev.csisupervisor.catalog.ClusterView;
import dev.csisupervisor.catalog.EtcdOptions;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

/**
 * The "other process" of {@link ClusterCatalogLoad}: a {@link ClusterView} that prints one line per plugin change
 * it sees: {@code E <kind> <lag nanos>}, the lag from the registration's time (carried in its version,
 * {@code t<epoch nanos>}) to this process seeing it. {@code HEAP} on stdin: prints the heap in use after a GC.
 */
final class ClusterViewProbe {
  private ClusterViewProbe() {}

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    ClusterView v = ClusterView.builder().etcd(EtcdOptions.of(args[0])).prefix(args[1]).build();
    Object lock = new Object();
    v.start();
    v.subscribe(e -> {
      if (e.plugin() == null) {
        return;
      }
      long lag = -1;
      String version = e.plugin().version();
      if (e.kind() != ClusterEvent.Kind.PLUGIN_REMOVED && version.startsWith("t")) {
        Instant now = Instant.now();
        long nowNanos = now.getEpochSecond() * 1_000_000_000L + now.getNano();
        lag = nowNanos - Long.parseLong(version.substring(1));
      }
      synchronized (lock) {
        out.println("E " + e.kind() + " " + lag);
        out.flush();
      }
    }, Runnable::run);
    if (!v.awaitSynced(Duration.ofSeconds(30))) {
      throw new IllegalStateException("view did not sync");
    }
    synchronized (lock) {
      out.println("READY");
      out.flush();
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.equals("HEAP")) {
        System.gc();
        Runtime rt = Runtime.getRuntime();
        synchronized (lock) {
          out.println("HEAP " + (rt.totalMemory() - rt.freeMemory()) + " " + v.snapshot().entries().size());
          out.flush();
        }
      }
    }
    v.close();
  }
}
