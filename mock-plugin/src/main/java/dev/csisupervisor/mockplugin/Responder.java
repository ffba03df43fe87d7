package dev.csisupervisor.mockplugin;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Completes calls, after the scripted latency if there is one, and runs delayed calls.
 *
 * <p>Latency and delays are tasks scheduled on the plugin's event loop, never a sleeping thread: a slow mock
 * costs nothing while it waits, so a thousand slow plugins fit in one JVM. Thread-safe.
 */
final class Responder {

  private static final Logger log = LoggerFactory.getLogger(Responder.class);

  private final Script script;
  private final ScheduledExecutorService scheduler;

  Responder(Script script, ScheduledExecutorService scheduler) {
    this.script = script;
    this.scheduler = scheduler;
  }

  <T> void reply(StreamObserver<T> observer, T value) {
    deliver(() -> {
      observer.onNext(value);
      observer.onCompleted();
    });
  }

  /** Replies with what {@code call} returns, or fails with the status it throws. */
  <T> void answer(StreamObserver<T> observer, java.util.function.Supplier<T> call) {
    java.util.Optional<T> value = attempt(observer, call);
    value.ifPresent(v -> reply(observer, v));
  }

  /**
   * What {@code call} returns; empty if it threw, {@code observer} then failed with its status (INTERNAL for any
   * other exception). For a call that answers later.
   */
  <T> java.util.Optional<T> attempt(StreamObserver<?> observer, java.util.function.Supplier<T> call) {
    try {
      return java.util.Optional.of(call.get());
    } catch (io.grpc.StatusRuntimeException e) {
      fail(observer, e.getStatus());
    } catch (RuntimeException e) {
      log.warn("mock driver call failed", e);
      fail(observer, Status.INTERNAL.withDescription(e.toString()));
    }
    return java.util.Optional.empty();
  }

  void fail(StreamObserver<?> observer, Status status) {
    deliver(() -> observer.onError(status.asRuntimeException()));
  }

  /**
   * Runs {@code task} on the event loop after {@code nanos}: a slow plugin that does the work
   * late. It runs even if the client gave up meanwhile (as a real driver finishes what it started);
   * if the plugin is stopping, it is dropped with the call.
   */
  void after(long nanos, Runnable task) {
    try {
      scheduler.schedule(() -> runQuietly(task), nanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      log.debug("mock plugin stopping, delayed call dropped");
    }
  }

  private void deliver(Runnable completion) {
    long latency = script.latencyNanos();
    if (latency == 0) {
      runQuietly(completion);
      return;
    }
    try {
      scheduler.schedule(() -> runQuietly(completion), latency, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // The event loop is shutting down with the plugin: the call dies with its connection.
      log.debug("mock plugin stopping, delayed reply dropped");
    }
  }

  private static void runQuietly(Runnable completion) {
    try {
      completion.run();
    } catch (RuntimeException e) {
      // The client gave up (deadline, cancel) or the server is going down: nothing to answer.
      log.debug("reply not delivered: {}", e.toString());
    }
  }
}
