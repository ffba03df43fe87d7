package dev.csisupervisor.catalog;

import dev.csisupervisor.registry.PluginRegistry;
import java.time.Duration;

/**
 * A stand-in agent in its own JVM for the kill -9 test: a registry with the given plugins and a publisher.
 * Args: endpoint prefix nodeId ttlSeconds specs ("node:ebs,controller:ebs"). Prints "READY" once the node is in
 * etcd, then waits to be killed.
 */
public final class CatalogNodeMain {
  private CatalogNodeMain() {}

  public static void main(String[] args) throws Exception {
    PluginRegistry r = Plugins.registry();
    Plugins.registerAll(r, args[2], args[4]);
    CatalogPublisher p = CatalogPublisher.builder().registry(r).etcd(EtcdOptions.of(args[0])).prefix(args[1])
        .nodeId(args[2]).leaseTtl(Duration.ofSeconds(Long.parseLong(args[3]))).backoff(Duration.ofMillis(100), Duration.ofSeconds(1))
        .build();
    p.start();
    if (!p.awaitInSync(Duration.ofSeconds(20))) {
      System.out.println("TIMEOUT " + p.status());
      System.exit(1);
    }
    System.out.println("READY");
    System.out.flush();
    Thread.currentThread().join();
  }
}
