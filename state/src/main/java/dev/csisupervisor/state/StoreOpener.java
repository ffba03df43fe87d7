package dev.csisupervisor.state;

import dev.csisupervisor.state.JournalReplay.Result;
import dev.csisupervisor.state.JournalReplay.Segment;
import dev.csisupervisor.state.JournalStateStore.Options;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One open of a {@link JournalStateStore}: takes the directory's lock file, restores (the newest checkpoint that
 * reads back + the journal records after it), repairs (in strict mode a failure that touches nothing; otherwise
 * what reads back is made durable in a new checkpoint and the damaged files are moved aside), migrates an earlier
 * version's files, and hands what it found ({@link Opened}) to a new store.
 *
 * <p>No object lock guards it: it runs on the opening thread only, before the store exists. The directory's lock
 * file keeps other processes and other stores out; a failed open releases it.
 */
final class StoreOpener {
  private static final Logger log = LoggerFactory.getLogger(StoreOpener.class);

  /**
   * What an open found on disk, the state the store starts from; the store takes the collections over.
   *
   * @param checkpoint the newest durable checkpoint, or null
   * @param checkpointSequence the journal sequence that checkpoint holds (0 without one)
   * @param lastSequence the sequence of the last acknowledged change
   * @param segments the journal segments after the checkpoint, oldest first
   * @param records every record as of {@code lastSequence}, for the first {@code loadAll()}
   * @param quarantinedTo where damaged files were moved, if they were
   */
  record Opened(Path checkpoint, long checkpointSequence, long lastSequence, List<Segment> segments,
      Map<String, byte[]> records, Optional<Path> quarantinedTo) {}

  private final StateDirectory dir;
  private final Options options;
  private final StateIo io;
  private final LegacyStateFiles legacy;
  private final List<Path> damaged = new ArrayList<>();
  private final List<String> damage = new ArrayList<>();

  private StoreOpener(StateDirectory dir, Options options, StateIo io, LegacyStateFiles legacy) {
    this.dir = dir;
    this.options = options;
    this.io = io;
    this.legacy = legacy;
  }

  /**
   * Opens (or creates) the store in {@code <dataDir>/state/}; see {@link JournalStateStore#open(Path, Options)}.
   * The caller checked that neither argument is null.
   */
  static JournalStateStore open(Path dataDir, Options options, StateIo io) {
    Path data = dataDir.toAbsolutePath().normalize();
    if (Files.exists(data) && !Files.isDirectory(data)) {
      throw new StateStoreException("data directory " + data + " exists and is not a directory");
    }
    StateDirectory dir = new StateDirectory(data.resolve(JournalStateStore.DIRECTORY), io);
    LegacyStateFiles legacy = new LegacyStateFiles(data);
    if (options.readOnly() && !Files.isDirectory(dir.path) && legacy.present()) {
      return openLegacyReadOnly(dir, options, legacy);
    }
    dir.prepare(options.readOnly());
    dir.lock();
    try {
      return new StoreOpener(dir, options, io, legacy).open();
    } catch (OutOfMemoryError e) {
      dir.unlock();
      throw new StateStoreException("ran out of memory while opening the state in " + dir.path
          + " (its files are untouched; give the JVM more heap)", e);
    } catch (IOException e) {
      dir.unlock();
      throw new StateStoreException("cannot open the state in " + dir.path + ": " + e, e);
    } catch (RuntimeException | Error e) {
      dir.unlock();
      throw e;
    }
  }

  private static JournalStateStore openLegacyReadOnly(StateDirectory dir, Options options, LegacyStateFiles legacy) {
    try {
      Map<String, byte[]> records = legacy.read();
      return new JournalStateStore(dir, options, StateIo.DEFAULT,
          new Opened(null, 0, 0, List.of(), records, Optional.empty()));
    } catch (IOException | StateStoreException e) {
      throw new StateFileCorruptException(legacy.file(), e);
    }
  }

  /** Restore, repair, migrate; the caller holds the directory's lock file and releases it if this throws. */
  private JournalStateStore open() throws IOException {
    long started = System.nanoTime();
    List<Path> checkpoints = dir.checkpoints();
    List<Segment> segments = dir.segments();
    if (legacy.present()) {
      if (checkpoints.isEmpty() && segments.isEmpty()) {
        if (!options.readOnly()) {
          dir.deleteTemporaryFiles();
        }
        return migrate();
      }
      if (!options.readOnly()) {
        log.warn("deleting the earlier version's state files {}: this store already holds their records (an"
            + " earlier migration stopped before deleting them)", legacy.allFiles());
        dir.delete(legacy.allFiles()); // and force the data directory
      }
    }

    Map<String, byte[]> records = new HashMap<>();
    Path used = null;
    long base = 0;
    for (Path cp : checkpoints) {
      if (used != null) {
        break;
      }
      try {
        Checkpoint.Image image = Checkpoint.read(cp);
        if (image.sequence() != StateDirectory.checkpointSequence(cp)) {
          throw new StateStoreException("checkpoint " + cp + " holds sequence " + image.sequence()
              + ", not the one its name says");
        }
        records = image.records();
        base = image.sequence();
        used = cp;
      } catch (StateStoreException e) {
        corrupt(cp, e.getMessage(), e);
        damaged.add(cp);
      }
    }
    Result replay = JournalReplay.replay(records, base, segments, Long.MAX_VALUE);
    List<Segment> live = new ArrayList<>(segments);
    if (replay.corruption() != null) {
      Path bad = replay.corruption().segment();
      corrupt(bad, replay.corruption().describe(), null);
      for (Segment s : segments) {
        if (s.firstSequence() >= segmentOf(segments, bad).firstSequence()) {
          damaged.add(s.path());
          live.remove(s);
        }
      }
    }
    if (replay.tornTail() != null) {
      log.warn("state journal: {}", replay.tornTail());
    }
    long last = replay.lastSequence();
    Optional<Path> quarantined = Optional.empty();
    if (!damaged.isEmpty() && !options.readOnly()) {
      // Keep what reads back, durably, before anything is moved: then a crash here loses nothing more.
      Path keep = dir.checkpointPath(last);
      Checkpoint.write(keep, last, records, dir);
      dir.delete(live.stream().map(Segment::path).toList());
      live.clear();
      damaged.remove(keep);
      quarantined = Optional.of(dir.quarantine(damaged, options.clock()));
      log.error("STATE DAMAGED: {}. Kept the {} record(s) up to sequence {} that read back (checkpoint {}); moved"
          + " {} to {} for inspection. Plugins whose changes were lost are re-registered by their supervisors.",
          String.join("; ", damage), records.size(), last, keep, damaged, quarantined.get());
      used = keep;
      base = last;
    }
    if (!options.readOnly()) {
      dir.deleteTemporaryFiles(); // half-made files a crash left; after the checks, so a strict failure touches nothing
      List<Path> older = new ArrayList<>(dir.checkpoints());
      older.remove(used);
      if (!older.isEmpty()) {
        dir.delete(older); // older ones a crash left before deleting them
      }
    }
    JournalStateStore store = new JournalStateStore(dir, options, io,
        new Opened(used, base, last, live, records, quarantined));
    log.info("opened state in {}: {} record(s) (checkpoint {} + {} journal segment(s)) in {} ms", dir.path,
        records.size(), used == null ? "none" : used.getFileName(), live.size(),
        (System.nanoTime() - started) / 1_000_000);
    if (!live.isEmpty() && !options.readOnly()) {
      store.checkpointInBackground(); // an unclean stop left a journal: fold it into a checkpoint
    }
    return store;
  }

  private void corrupt(Path file, String message, Throwable cause) {
    if (options.strict()) {
      throw new StateFileCorruptException(file, new StateStoreException(message, cause));
    }
    damage.add(message);
  }

  private JournalStateStore migrate() throws IOException {
    Map<String, byte[]> records;
    Optional<Path> quarantined = Optional.empty();
    try {
      records = legacy.read();
    } catch (StateStoreException e) {
      if (options.strict()) {
        throw new StateFileCorruptException(legacy.file(), e);
      }
      records = new HashMap<>();
      if (!options.readOnly()) {
        quarantined = Optional.of(dir.quarantine(legacy.allFiles(), options.clock()));
        log.error("STATE FILE CORRUPT: {}; moved the earlier version's files to {} and starting with an EMPTY state"
            + " store. Registered plugins will be re-registered by their supervisors.", e.getMessage(),
            quarantined.get());
      }
    }
    Path used = null;
    if (!options.readOnly()) {
      if (quarantined.isEmpty()) {
        used = dir.checkpointPath(0);
        Checkpoint.write(used, 0, records, dir);
        List<Path> old = legacy.allFiles();
        dir.delete(old); // and force the data directory: the old files must not come back
        log.info("migrated {} record(s) from the earlier state files {} into {} (journal + checkpoints); the old"
            + " files are deleted", records.size(), old, dir.path);
      }
    }
    return new JournalStateStore(dir, options, io, new Opened(used, 0, 0, List.of(), records, quarantined));
  }

  private static Segment segmentOf(List<Segment> segments, Path path) {
    return segments.stream().filter(s -> s.path().equals(path)).findFirst().orElseThrow();
  }
}
