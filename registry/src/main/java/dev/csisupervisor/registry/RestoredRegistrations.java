package dev.csisupervisor.registry;

import dev.csisupervisor.registry.PluginRecordCodec.RecordFormatException;
import dev.csisupervisor.state.StateStore;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Restore: the registry's memory decoded from the records of its state store, once, when the registry is built.
 * Records that cannot be decoded are skipped (kept in the store, listed as {@link RestoreProblem}s) and never fail
 * the restore.
 *
 * <p>No lock guards it: it runs in the registry's constructor, before the registry is shared, and the registry
 * takes its collections over as its own memory (from then on guarded by the registry's {@code stateLock} and
 * written only by the committer).
 */
final class RestoredRegistrations {
  private static final Logger log = LoggerFactory.getLogger(RestoredRegistrations.class);

  /** Below this many records a restore decodes on the calling thread only. */
  private static final int PARALLEL_RESTORE_MIN = 4096;

  /** The restored registrations by key, every one marked restored (unconfirmed). */
  final Map<PluginKey, Registration> entries;
  /** The store keys of the registration records that could not be decoded. */
  final Set<String> skippedKeys = new LinkedHashSet<>();
  /** The last event sequence of every type (0 for a type without a stored sequence). */
  final Map<PluginType, Long> sequences = new EnumMap<>(PluginType.class);
  /** Every record that could not be restored, sorted by key. */
  final List<RestoreProblem> problems = new ArrayList<>();
  /** The registration order the next new registration gets: one past the highest restored. */
  final long nextOrder;

  private RestoredRegistrations(Map<String, byte[]> records, StateStore source) {
    for (PluginType t : PluginType.values()) {
      sequences.put(t, 0L);
    }
    this.entries = new HashMap<>(Math.max(16, (int) (records.size() / 0.75f) + 1));
    this.nextOrder = restore(records, source);
  }

  /** Decodes {@code records}, the whole content of {@code source} (named in the log lines). */
  static RestoredRegistrations of(Map<String, byte[]> records, StateStore source) {
    return new RestoredRegistrations(records, source);
  }

  /** Fills the collections; returns the next registration order. */
  private long restore(Map<String, byte[]> records, StateStore source) {
    long maxOrder = 0;
    // Decode in slices, in parallel for a large state (each slice with its own interner), then index in order.
    List<Map.Entry<String, byte[]>> all = List.copyOf(records.entrySet());
    Object[] decoded = new Object[all.size()]; // a Decoded, or the RecordFormatException, or null: not a plugin
    int slices = all.size() < PARALLEL_RESTORE_MIN ? 1 : Math.min(4, Runtime.getRuntime().availableProcessors());
    IntStream range = IntStream.range(0, slices);
    (slices > 1 ? range.parallel() : range).forEach(slice -> {
      Interner interner = new Interner();
      for (int i = slice * all.size() / slices, to = (slice + 1) * all.size() / slices; i < to; i++) {
        String key = all.get(i).getKey();
        if (key.startsWith(PluginKey.STORE_PREFIX)) {
          try {
            decoded[i] = PluginRecordCodec.decodeRestored(key, all.get(i).getValue(), interner);
          } catch (RecordFormatException e) {
            decoded[i] = e;
          }
        }
      }
    });
    for (int i = 0; i < all.size(); i++) {
      String key = all.get(i).getKey();
      try {
        if (decoded[i] instanceof PluginRecordCodec.Decoded d) {
          entries.put(d.info().key(), new Registration(d.info(), d.registrationOrder()));
          maxOrder = Math.max(maxOrder, d.registrationOrder());
        } else if (decoded[i] instanceof RecordFormatException e) {
          throw e;
        } else if (key.startsWith(SequenceRecord.PREFIX)) {
          Optional<PluginType> type = SequenceRecord.typeOf(key);
          if (type.isEmpty()) {
            throw new RecordFormatException("not a plugin type this agent knows");
          }
          sequences.merge(type.get(), SequenceRecord.decode(all.get(i).getValue()), Math::max);
        } else {
          log.debug("ignoring state record {}: not a plugin registration", key);
        }
      } catch (RecordFormatException e) {
        // Skipped, not deleted: it may be a newer agent's record (survives a downgrade) or evidence for an
        // operator. reconcile() drops it once its allocation is known dead.
        problems.add(new RestoreProblem(key, e.getMessage()));
        if (key.startsWith(PluginKey.STORE_PREFIX)) {
          skippedKeys.add(key);
        }
      }
    }
    // Sorted only for the log and the problem list (stable output); the records were decoded once, unsorted.
    problems.sort(Comparator.comparing(RestoreProblem::key));
    for (RestoreProblem p : problems) {
      log.error("STATE RECORD SKIPPED: {} cannot be restored ({}); it stays in the state store untouched and is"
          + " not registered", p.key(), p.reason());
    }
    if (!entries.isEmpty() || !problems.isEmpty()) {
      log.info("restored {} plugin registration(s) from {} ({} skipped; event sequences go on from {})",
          entries.size(), source, problems.size(), sequences);
    }
    return maxOrder + 1;
  }
}
