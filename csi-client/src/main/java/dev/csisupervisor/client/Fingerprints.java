package dev.csisupervisor.client;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** Helpers behind {@link CsiClient}'s default methods: combining futures, blocking on them. */
final class Fingerprints {
  private Fingerprints() {}

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
