package dev.csisupervisor.supervisor;

import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiClientOptions;
import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.client.ProbeResult;
import dev.csisupervisor.client.SocketPathTooLongException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** {@link PluginConnection} over one {@link CsiClient}: one channel, reused for every call. */
final class CsiClientConnection implements PluginConnection {
  private final CsiClient client;

  private CsiClientConnection(CsiClient client) {
    this.client = client;
  }

  static PluginConnection open(Path socket, Duration probeTimeout, Duration fingerprintTimeout) {
    try {
      return new CsiClientConnection(CsiClient.create(socket, CsiClientOptions.defaults()
          .withCallTimeout(probeTimeout).withFingerprintTimeout(fingerprintTimeout)));
    } catch (SocketPathTooLongException e) {
      // Every socket is length-checked before a connection is opened (an external one by
      // CsiPluginConfig, a derived one by the hook's constructor): reaching here is a bug.
      throw new IllegalArgumentException(e.getMessage(), e);
    }
  }

  @Override
  public CompletableFuture<Boolean> probe() {
    return client.probeAsync().thenApply(ProbeResult::ready);
  }

  @Override
  public CompletableFuture<PluginFingerprint> fingerprint(PluginKind kind) {
    return client.fingerprintAsync(kind);
  }

  @Override
  public void onLost(Runnable listener) {
    client.onConnectionLost(listener);
  }

  @Override
  public void close() {
    client.close();
  }
}
