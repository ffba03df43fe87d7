package dev.csisupervisor.registry;

import dev.csisupervisor.registry.PluginEvent.Kind;
import dev.csisupervisor.state.StateChange;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The effects of one group-commit batch ({@link WriteRequest}s one after another), computed before the commit and
 * applied to the registry's memory only after it succeeded.
 *
 * <p>Only the committer makes and uses a batch (one committer at a time, handed over through the group commit's
 * lock). It reads the registry's memory ({@code entries}, {@code skippedKeys}) without the registry's
 * {@code stateLock}: that is safe because only the committer changes that memory, and it never changes it here.
 */
final class Batch {
  private final Map<PluginKey, Registration> entries; // the registry's memory: read only, never changed here
  private final Set<String> skippedKeys; // the registry's skipped records: read only, never changed here

  final Map<PluginKey, Optional<Registration>> overlay = new LinkedHashMap<>();
  final List<StateChange> changes = new ArrayList<>();
  final List<PendingEvent> events = new ArrayList<>();
  final Set<String> droppedSkippedKeys = new LinkedHashSet<>();
  /** Skipped records that a registration of the same key overwrites: no longer skipped. */
  final Set<String> overwrittenSkippedKeys = new HashSet<>();
  long nextOrder;

  Batch(Map<PluginKey, Registration> entries, Set<String> skippedKeys, long nextOrder) {
    this.entries = entries;
    this.skippedKeys = skippedKeys;
    this.nextOrder = nextOrder;
  }

  /** The records that restore skipped and that are still in the store (as before this batch). */
  Set<String> skippedKeys() {
    return skippedKeys;
  }

  /** The entry as it will be after the earlier requests of this batch. */
  Registration lookup(PluginKey key) {
    Optional<Registration> o = overlay.get(key);
    if (o != null) {
      return o.orElse(null);
    }
    return entries.get(key); // safe without stateLock: only the committer changes it
  }

  /** Every entry as it will be after the earlier requests of this batch, oldest registration first. */
  List<Registration> current() {
    Map<PluginKey, Registration> view = new HashMap<>(entries);
    overlay.forEach((k, e) -> {
      if (e.isPresent()) {
        view.put(k, e.get());
      } else {
        view.remove(k);
      }
    });
    List<Registration> list = new ArrayList<>(view.values());
    list.sort(Registration.BY_ORDER);
    return list;
  }

  PendingEvent put(Registration entry, byte[] record, Kind kind) {
    PluginKey key = entry.info().key();
    overlay.put(key, Optional.of(entry));
    changes.add(new StateChange.Put(key.storeKey(), record));
    if (skippedKeys.contains(key.storeKey())) {
      overwrittenSkippedKeys.add(key.storeKey());
    }
    return event(kind, entry.info());
  }

  PendingEvent remove(Registration entry) {
    PluginKey key = entry.info().key();
    overlay.put(key, Optional.empty());
    changes.add(new StateChange.Delete(key.storeKey()));
    return event(Kind.DEREGISTERED, entry.info());
  }

  /**
   * Confirming a restored entry: its record is unchanged (restored is not stored), but
   * subscribers hold it as restored, so they get an UPDATED event with restored=false (whose
   * sequence is committed like every event's).
   */
  PendingEvent confirm(Registration entry) {
    overlay.put(entry.info().key(), Optional.of(entry));
    return event(Kind.UPDATED, entry.info());
  }

  private PendingEvent event(Kind kind, PluginInfo info) {
    PendingEvent pe = new PendingEvent(kind, info);
    events.add(pe);
    return pe;
  }

  /** An event of the batch; numbered (its {@link #event} set) when the batch is applied to memory. */
  static final class PendingEvent {
    final Kind kind;
    final PluginInfo info;
    PluginEvent event; // set when the batch is applied

    PendingEvent(Kind kind, PluginInfo info) {
      this.kind = kind;
      this.info = info;
    }
  }
}
