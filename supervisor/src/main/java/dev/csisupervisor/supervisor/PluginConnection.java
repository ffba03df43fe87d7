package dev.csisupervisor.supervisor;

import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.client.PluginKind;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * The calls supervision makes to one plugin, asynchronous so that no scheduler thread ever waits
 * on a plugin. The production implementation wraps a {@code CsiClient} (one channel, reused);
 * unit tests substitute completed futures to drive the state machine under a fake clock.
 */
interface PluginConnection extends AutoCloseable {
  /** Completes with the plugin's readiness, or exceptionally with the reason it could not tell. */
  CompletableFuture<Boolean> probe();

  /** Completes with the plugin's vendor version (GetPluginInfo), to notice a new build. */
  CompletableFuture<String> vendorVersion();

  CompletableFuture<PluginFingerprint> fingerprint(PluginKind kind);

  @Override
  void close();

  /** Opens a connection to a socket; must not block on the plugin (connect lazily). */
  @FunctionalInterface
  interface Connector {
    PluginConnection connect(Path socket, Duration callTimeout);
  }
}
