package dev.csisupervisor.agent.discovery;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiClientOptions;
import dev.csisupervisor.client.CsiException;
import dev.csisupervisor.client.CsiNodeInfo;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.client.SocketPathTooLongException;
import dev.csisupervisor.client.StatusCode;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;

/**
 * Classifies a socket by asking the plugin: the {@code CONTROLLER_SERVICE} plugin capability
 * makes it a controller; a valid {@code NodeGetInfo} answer makes it a node; both, a monolith.
 * {@code NodeGetInfo} answered with {@code UNIMPLEMENTED} means "no node service"; any other
 * failure is a failure of the classification (retried by the caller). One short-lived
 * {@link CsiClient} per call, closed on {@code closer} (closing may wait for the channel).
 *
 * <p>Thread-safe.
 */
public final class CsiSocketClassifier implements SocketClassifier {
  private final Duration callTimeout;
  private final Executor closer;

  public CsiSocketClassifier(Duration callTimeout, Executor closer) {
    this.callTimeout = requireNonNull(callTimeout, "callTimeout");
    this.closer = requireNonNull(closer, "closer");
  }

  @Override
  public CompletableFuture<PluginKind> classify(Path socket) {
    CsiClient client;
    try {
      client = CsiClient.create(socket, CsiClientOptions.defaults().withCallTimeout(callTimeout));
    } catch (SocketPathTooLongException | RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<Set<String>> caps = client.pluginCapabilitiesAsync();
    CompletableFuture<CsiNodeInfo> node = client.nodeInfoAsync();
    CompletableFuture<PluginKind> result = caps.handle((c, capsError) -> {
      if (capsError != null) {
        throw new CompletionException(Futures.unwrap(capsError));
      }
      return c;
    }).thenCombine(node.handle((n, nodeError) -> nodeError), (c, nodeError) -> {
      boolean controller = c.contains(CsiCapabilities.CONTROLLER_SERVICE);
      boolean isNode = nodeError == null;
      if (nodeError != null && !unimplemented(nodeError)) {
        throw new CompletionException(Futures.unwrap(nodeError));
      }
      if (controller && isNode) {
        return PluginKind.MONOLITH;
      }
      if (controller) {
        return PluginKind.CONTROLLER;
      }
      if (isNode) {
        return PluginKind.NODE;
      }
      throw new CompletionException(new IllegalStateException("it reports no CONTROLLER_SERVICE"
          + " capability and does not implement NodeGetInfo: neither a controller nor a node"
          + " plugin"));
    });
    result.whenComplete((k, e) -> closer.execute(client::close));
    return result;
  }

  private static boolean unimplemented(Throwable t) {
    return CsiException.find(t).filter(e -> e instanceof CsiStatusException s
        && s.code() == StatusCode.UNIMPLEMENTED).isPresent();
  }

}
