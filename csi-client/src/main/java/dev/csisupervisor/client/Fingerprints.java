package dev.csisupervisor.client;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;

/** Helpers behind {@link CsiClient}'s default methods: combining futures, blocking on them. */
final class Fingerprints {
  private Fingerprints() {}

  /**
   * A plugin's fingerprint by capability: GetPluginInfo and GetPluginCapabilities (and, for a
   * kind with a node half, NodeGetCapabilities and NodeGetInfo) run concurrently;
   * ControllerGetCapabilities is asked only of a plugin whose GetPluginCapabilities advertises
   * {@code CONTROLLER_SERVICE}, whatever the configured kind says. For a {@link PluginKind#MONOLITH},
   * a Node service that answers {@code UNIMPLEMENTED} means "no node half" (empty node fields),
   * not a failure; for a {@link PluginKind#NODE} it is the failure it looks like.
   */
  static CompletableFuture<PluginFingerprint> gather(
      PluginKind kind,
      Supplier<CompletableFuture<CsiPluginInfo>> infoCall,
      Supplier<CompletableFuture<Set<String>>> pluginCall,
      Supplier<CompletableFuture<Set<String>>> controllerCall,
      Supplier<CompletableFuture<Set<String>>> nodeCall,
      Supplier<CompletableFuture<CsiNodeInfo>> nodeInfoCall) {
    CompletableFuture<CsiPluginInfo> info = infoCall.get();
    CompletableFuture<Set<String>> plugin = pluginCall.get();
    List<CompletableFuture<?>> calls = new CopyOnWriteArrayList<>(List.of(info, plugin));
    CompletableFuture<Set<String>> node = CompletableFuture.completedFuture(Set.of());
    CompletableFuture<CsiNodeInfo> nodeInfo = CompletableFuture.completedFuture(null);
    if (kind.hasNode()) {
      CompletableFuture<Set<String>> nodeCaps = nodeCall.get();
      CompletableFuture<CsiNodeInfo> nodeInf = nodeInfoCall.get();
      calls.add(nodeCaps);
      calls.add(nodeInf);
      node = kind == PluginKind.MONOLITH ? orIfUnimplemented(nodeCaps, Set.of()) : nodeCaps;
      nodeInfo = kind == PluginKind.MONOLITH ? orIfUnimplemented(nodeInf, null) : nodeInf;
    }
    CompletableFuture<Set<String>> controller = new CompletableFuture<>();
    plugin.whenComplete((caps, failure) -> {
      if (failure != null) {
        controller.completeExceptionally(failure);
      } else if (kind.hasController() && caps.contains(CsiCapabilities.CONTROLLER_SERVICE)) {
        CompletableFuture<Set<String>> call = controllerCall.get();
        calls.add(call);
        call.whenComplete((v, t) -> {
          if (t != null) {
            controller.completeExceptionally(t);
          } else {
            controller.complete(v);
          }
        });
        if (controller.isCancelled()) {
          call.cancel(false);
        }
      } else {
        controller.complete(Set.of());
      }
    });
    CompletableFuture<PluginFingerprint> result = combine(info, plugin, controller, node, nodeInfo);
    result.whenComplete((ignored, failure) -> {
      if (result.isCancelled()) {
        controller.cancel(false);
        List.copyOf(calls).forEach(call -> call.cancel(false));
      }
    });
    return result;
  }

  private static <T> CompletableFuture<T> orIfUnimplemented(CompletableFuture<T> call, T absent) {
    CompletableFuture<T> out = new CompletableFuture<>();
    call.whenComplete((v, t) -> {
      if (t == null) {
        out.complete(v);
      } else if (CsiException.find(t).filter(e -> e instanceof CsiStatusException s
          && s.code() == StatusCode.UNIMPLEMENTED).isPresent()) {
        out.complete(absent);
      } else {
        out.completeExceptionally(t);
      }
    });
    return out;
  }

  /** @param nodeInfo completes with null for a plugin without the Node service */
  static CompletableFuture<PluginFingerprint> combine(
      CompletableFuture<CsiPluginInfo> info,
      CompletableFuture<Set<String>> plugin,
      CompletableFuture<Set<String>> controller,
      CompletableFuture<Set<String>> node,
      CompletableFuture<CsiNodeInfo> nodeInfo) {
    // The order is the order failures are reported in: GetPluginInfo's error tells most.
    List<CompletableFuture<?>> parts = List.of(info, plugin, controller, node, nodeInfo);
    CompletableFuture<PluginFingerprint> result = new CompletableFuture<>();
    CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new))
        .whenComplete(
            (ignored, failure) -> {
              if (failure == null) {
                try {
                  result.complete(
                      PluginFingerprint.of(
                          info.join(), plugin.join(), controller.join(), node.join(),
                          Optional.ofNullable(nodeInfo.join())));
                } catch (RuntimeException e) {
                  result.completeExceptionally(e);
                }
                return;
              }
              for (CompletableFuture<?> part : parts) {
                if (part.isCompletedExceptionally()) {
                  result.completeExceptionally(failureOf(part));
                  return;
                }
              }
              result.completeExceptionally(failure);
            });
    result.whenComplete(
        (ignored, failure) -> {
          if (result.isCancelled()) {
            parts.forEach(part -> part.cancel(false));
          }
        });
    return result;
  }

  /** The exception a completed-exceptionally future holds, without the CompletionException wrapper. */
  private static Throwable failureOf(CompletableFuture<?> future) {
    try {
      future.join();
      throw new IllegalStateException("future did not fail: " + future);
    } catch (CompletionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      return CsiException.find(cause).<Throwable>map(x -> x).orElse(cause);
    } catch (CancellationException e) {
      return e;
    }
  }

  /** Waits for {@code future}; see {@link CsiClient} for the interrupt and failure rules. */
  static <T> T await(CsiClient client, CompletableFuture<T> future, String method) throws CsiException {
    try {
      return future.get();
    } catch (InterruptedException e) {
      future.cancel(true);
      Thread.currentThread().interrupt();
      throw new CallCancelledException(client.socket(), method, "the calling thread was interrupted");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      Optional<CsiException> csi = CsiException.find(cause);
      if (csi.isPresent()) {
        throw csi.get();
      }
      if (cause instanceof RuntimeException runtime) {
        throw runtime;
      }
      if (cause instanceof Error error) {
        throw error;
      }
      throw new IllegalStateException("unexpected failure of " + method + " on " + client.socket(), cause);
    } catch (CancellationException e) {
      throw new CallCancelledException(client.socket(), method, "the call's future was cancelled");
    }
  }
}
