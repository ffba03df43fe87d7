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
  /**
   * Completes with the plugin's readiness (an absent {@code ready} field is ready), or
   * exceptionally with the reason it could not tell.
   */
  CompletableFuture<Boolean> probe();

  /**
   * The plugin's fingerprint, asked by capability (see {@code CsiClient#fingerprintAsync}): the
   * controller capabilities only of a plugin advertising CONTROLLER_SERVICE, a monolith's missing
   * Node service as empty node fields.
   */
  CompletableFuture<PluginFingerprint> fingerprint(PluginKind kind);

  /**
   * Calls {@code listener} whenever an established connection to the plugin is lost (the plugin's end closed
   * it), so that supervision probes at once rather than at its next tick. The listener must not block.
   */
  void onLost(Runnable listener);

  @Override
  void close();

  /** Opens a connection to a socket; must not block on the plugin (connect lazily). */
  @FunctionalInterface
  interface Connector {
    /**
     * @param probeTimeout       the deadline of each Probe
     * @param fingerprintTimeout the deadline of each fingerprint call
     */
    PluginConnection connect(Path socket, Duration probeTimeout, Duration fingerprintTimeout);
  }
}
