package dev.csisupervisor.volumes;

import java.time.Clock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The volume manager's listeners and the events it tells them, each on the executor its listener gave; one
 * that throws or whose executor refuses is logged and the others still hear. Thread-safe.
 */
final class VolumeEvents {
  private static final Logger log = LoggerFactory.getLogger(VolumeEvents.class);

  private record Listener(VolumeListener listener, Executor executor) {}

  private final Clock clock;
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();

  VolumeEvents(Clock clock) {
    this.clock = clock;
  }

  /** Adds {@code listener}; closing the result removes it. */
  AutoCloseable add(VolumeListener listener, Executor executor) {
    Listener l = new Listener(java.util.Objects.requireNonNull(listener, "listener"),
        java.util.Objects.requireNonNull(executor, "executor"));
    listeners.add(l);
    return () -> listeners.remove(l);
  }

  void emit(VolumeEvent.Kind kind, VolumeKey key, String allocId, String message) {
    VolumeEvent event = new VolumeEvent(kind, key.pluginId(), key.volumeId(), allocId, message, clock.instant());
    for (Listener l : listeners) {
      try {
        l.executor().execute(() -> {
          try {
            l.listener().onEvent(event);
          } catch (RuntimeException e) {
            log.warn("a volume listener threw on {}", event, e);
          }
        });
      } catch (RejectedExecutionException e) {
        log.debug("volume listener's executor refused {}", event);
      }
    }
  }
}
