package dev.csisupervisor.registry;

import dev.csisupervisor.registry.Batch.PendingEvent;
import dev.csisupervisor.registry.PluginEvent.Kind;
import dev.csisupervisor.state.StateChange;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * One caller's write to the registry: its effects on a {@link Batch}, then its outcome. {@link #compute} runs on the
 * committing thread only (the registry's lane of the node's group commit), one request after another, without the
 * registry's {@code stateLock} (see {@link Batch}); the committer sets the outcome ({@link #succeed}/{@link #fail})
 * before the lane's {@code submit} returns to the caller, who then reads it ({@link #get}).
 */
abstract class WriteRequest<R> {
  private volatile boolean outcomeSet;
  private volatile Throwable failure;

  /** The answer of a request that succeeded. */
  abstract R result();

  final void succeed() {
    outcomeSet = true;
  }

  final void fail(Throwable t) {
    failure = t;
    outcomeSet = true;
  }

  /** The outcome, once the lane's {@code submit} returned: the result, or the failure thrown. */
  final R get() {
    if (!outcomeSet) {
      throw new IllegalStateException("internal error: request finished without an outcome");
    }
    if (failure instanceof RuntimeException e) {
      throw e;
    }
    if (failure instanceof Error e) {
      throw e;
    }
    if (failure != null) {
      throw new IllegalStateException(failure);
    }
    return result();
  }

  /** Adds this request's effects to the batch; must throw before touching it, if at all. */
  abstract void compute(Batch batch);

  /** A request that changes at most one entry and answers with its event, if there was one. */
  abstract static class EventRequest extends WriteRequest<Optional<PluginEvent>> {
    PendingEvent event;

    @Override
    final Optional<PluginEvent> result() {
      return event == null ? Optional.empty() : Optional.of(event.event);
    }
  }

  static final class Register extends EventRequest {
    private final PluginInfo info;

    Register(PluginInfo info) {
      this.info = info;
    }

    @Override
    void compute(Batch batch) {
      Registration current = batch.lookup(info.key());
      if (current == null) {
        Registration entry = new Registration(info, batch.nextOrder);
        byte[] record = PluginRecordCodec.encode(entry.info(), entry.order());
        batch.nextOrder++;
        event = batch.put(entry, record, Kind.REGISTERED);
      } else if (current.info().sameContentAs(info)) {
        if (current.info().restored()) {
          event = batch.confirm(new Registration(current.info().withRestored(false), current.order()));
        }
      } else {
        // Health "since" is the time of the last health transition: keep it when flag and message are unchanged.
        PluginInfo next = current.info().health().sameStateAs(info.health()) ? info.withHealth(current.info().health()) : info;
        Registration entry = new Registration(next, current.order());
        byte[] record = PluginRecordCodec.encode(entry.info(), entry.order());
        event = batch.put(entry, record, Kind.UPDATED);
      }
    }
  }

  static final class Deregister extends EventRequest {
    private final PluginKey key;

    Deregister(PluginKey key) {
      this.key = key;
    }

    @Override
    void compute(Batch batch) {
      Registration current = batch.lookup(key);
      if (current != null) {
        event = batch.remove(current);
      }
    }
  }

  /** Reconcile ({@code live} given) or grace expiry ({@code live == null}: every unconfirmed entry goes). */
  static final class DropRestored extends WriteRequest<List<PluginEvent>> {
    private final Set<String> live;
    private final List<PendingEvent> events = new ArrayList<>();

    DropRestored(Set<String> live) {
      this.live = live;
    }

    @Override
    void compute(Batch batch) {
      List<Registration> drop = new ArrayList<>();
      for (Registration e : batch.current()) {
        if (e.info().restored() && (live == null || !live.contains(e.info().allocId()))) {
          drop.add(e);
        }
      }
      List<String> skippedToDrop = new ArrayList<>();
      if (live != null) {
        for (String key : batch.skippedKeys()) {
          if (batch.droppedSkippedKeys.contains(key) || batch.overwrittenSkippedKeys.contains(key)) {
            continue;
          }
          try {
            if (!live.contains(PluginKey.fromStoreKey(key).allocId())) {
              skippedToDrop.add(key);
            }
          } catch (IllegalArgumentException unparseable) {
            // A key we cannot attribute to an allocation is never dropped automatically.
          }
        }
      }
      for (Registration e : drop) {
        events.add(batch.remove(e));
      }
      for (String key : skippedToDrop) {
        batch.changes.add(new StateChange.Delete(key));
        batch.droppedSkippedKeys.add(key);
      }
    }

    @Override
    List<PluginEvent> result() {
      return events.stream().map(pe -> pe.event).toList();
    }
  }
}
