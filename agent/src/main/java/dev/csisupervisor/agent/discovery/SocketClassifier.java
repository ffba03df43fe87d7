package dev.csisupervisor.agent.discovery;

import dev.csisupervisor.client.PluginKind;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

/**
 * Tells what kind of CSI plugin serves a socket. Must not block: the work happens in the
 * returned future.
 */
@FunctionalInterface
public interface SocketClassifier {
  /**
   * The plugin's kind, or a future failed with the reason it cannot be told (nothing accepting
   * on the socket, not a CSI server, neither controller nor node, ...).
   */
  CompletableFuture<PluginKind> classify(Path socket);
}
