package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.HTreeMap;
import org.mapdb.Serializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link StateStore} in two MapDB files: {@code <dataDir>/registry.db} (by default) and its mirror
 * {@code <dataDir>/registry.db.mirror}, which hold the same records.
 *
 * <p><b>Durability.</b> MapDB always runs with its write-ahead log ({@code transactionEnable()}); every
 * {@code put}/{@code delete}/{@code apply} is one MapDB commit of the state file and then one of the mirror, and is
 * durable when it returns. Records live in a hash map, so a commit rewrites only the touched keys' buckets.
 *
 * <p><b>Why a mirror.</b> MapDB 3.1's write-ahead log does not make a commit atomic on disk: a commit first seals
 * its log, then writes the index, free-space lists and records into the file, then deletes the log; on open the
 * log is never replayed. A kill -9 during those writes (about one kill in 45 under a multi-record write load) leaves
 * a file that fails to open, fails while being read, or passes a full read and breaks a later commit. Such a file
 * always still has its log files ({@code <file>.wal.*}): the log of a commit is deleted only after the file was
 * written completely. The two files are never in a commit at the same time, so a kill can catch at most one of
 * them. On open:
 * <ul>
 *   <li>the state file is the source if it has no log files and every record reads back: it was written first, so
 *       it holds every acknowledged change (and possibly the one change in flight at the kill);
 *   <li>otherwise the mirror is the source if it has no log files and reads back: the kill caught the state file's
 *       commit, so the mirror holds every change acknowledged before it;
 *   <li>otherwise (a store written before the mirror existed, or damage not left by a kill) whichever of the two
 *       reads back, the state file first;
 * </ul>
 * then every file that is not a cleanly closed copy of the source is rebuilt from the source's records in a new
 * file ({@code <file>.rebuild}) that atomically replaces it, the other file before the source, so that at every
 * instant one cleanly closed file holds the records.
 *
 * <p><b>One process at a time.</b> {@link #open} takes an exclusive lock on {@code <file>.lock}; a second
 * opener, in another process or in this one, gets {@link StateFileLockedException} at once. The store
 * uses its own lock file rather than MapDB's lock on the data file because MapDB does not release its lock
 * when opening a corrupt file fails, which would make the quarantine below (and a retry) report "locked".
 * The lock is released by {@link #close()} or by the death of the process.
 *
 * <p><b>Opening a damaged store.</b> If neither file can be opened and read back (truncated, random bytes, a broken
 * record), both files and their write-ahead-log files are moved aside as {@code <file>.corrupt-<UTC timestamp>}
 * and {@code <file>.corrupt-<UTC timestamp>.mirror} (logged at ERROR) and an empty store is opened — unless
 * {@link Options#strict()} is set, in which case open fails with {@link StateFileCorruptException} and the files
 * are left untouched. One damaged file is not an error in either mode: it is rebuilt from the other (logged at
 * WARN). A zero-byte file with no log files is not treated as corrupt: MapDB writes its header when it creates the
 * file, before any commit, so a zero-byte file cannot hold a committed record; it is replaced with a WARN in both
 * modes. A file the process cannot read or write is an error, never quarantined.
 *
 * <p><b>Failed commits.</b> If a commit fails before MapDB starts writing the state file, it is rolled back and
 * the store stays usable. If it fails later (in either file), the call throws and the store refuses further use:
 * MapDB may have half-written a file, and only the next {@link #open} can tell which file to trust. If only the
 * mirror's commit failed, the change is first taken back out of the state file, so nothing changed; otherwise the
 * exception says that the change may or may not be present after reopening (always all of it or none).
 *
 * <p><b>Permissions.</b> A data directory that the store creates gets mode 0700; the state file, its mirror and
 * the lock file get 0600. MapDB creates each write-ahead-log file inside a commit and deletes it when the commit
 * completes, with the process umask, so keep the data directory private (the store warns if others may read it).
 *
 * <p>Thread-safe: calls are serialized on one lock, each mutating call is its own commit (of both files).
 */
public final class MapDbStateStore implements StateStore {

  /** The default state file name inside the data directory. */
  public static final String DEFAULT_FILE_NAME = "registry.db";

  private static final Logger log = LoggerFactory.getLogger(MapDbStateStore.class);
  private static final String MAP_NAME = "records";
  private static final String MIRROR_SUFFIX = ".mirror";
  private static final String REBUILD_SUFFIX = ".rebuild";
  private static final String UNKNOWN_OUTCOME = "MapDB may have written part of it; the store refuses further use until"
      + " reopened, and after reopening the change is either wholly present or wholly absent";
  private static final Set<PosixFilePermission> FILE_MODE = PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> DIR_MODE = PosixFilePermissions.fromString("rwx------");
  private static final DateTimeFormatter QUARANTINE_STAMP =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss.SSS'Z'").withZone(ZoneOffset.UTC);

  /**
   * How to open the store.
   *
   * @param strict fail with {@link StateFileCorruptException} instead of moving a corrupt file aside
   * @param fileName the state file's name inside the data directory (no path separators)
   * @param clock the clock for the quarantine file name's timestamp
   */
  public record Options(boolean strict, String fileName, Clock clock) {
    public Options {
      if (fileName == null || fileName.isBlank() || fileName.contains("/") || fileName.contains("\\")
          || fileName.equals(".") || fileName.equals("..")) {
        throw new IllegalArgumentException("fileName must be a plain file name, got " + (fileName == null ? "null" : "'" + fileName + "'"));
      }
      if (clock == null) {
        throw new IllegalArgumentException("clock must not be null");
      }
    }

    /** Not strict, {@value #DEFAULT_FILE_NAME}, the UTC system clock. */
    public static Options defaults() {
      return new Options(false, DEFAULT_FILE_NAME, Clock.systemUTC());
    }

    public Options withStrict(boolean strict) {
      return new Options(strict, fileName, clock);
    }

    public Options withFileName(String fileName) {
      return new Options(strict, fileName, clock);
    }

    public Options withClock(Clock clock) {
      return new Options(strict, fileName, clock);
    }
  }

  private final Path file;
  private final FileChannel lockChannel;
  private final FileLock fileLock;
  private final MapFile primary;
  private final MapFile mirror;
  private final Optional<Path> quarantinedTo;
  private final Object lock = new Object();
  private boolean closed; // guarded by lock
  private boolean broken; // guarded by lock: a commit failed half-way, only a reopen can tell which file to trust
  /**
   * The records open() already read back to validate the files, kept for the first loadAll() (a restore, right
   * after open) so that it does not read the whole file a second time; dropped at the first change or read.
   */
  private Map<String, byte[]> openedRecords; // guarded by lock

  private MapDbStateStore(Path file, FileChannel lockChannel, FileLock fileLock, MapFile primary, MapFile mirror,
      Optional<Path> quarantinedTo, Map<String, byte[]> openedRecords) {
    this.openedRecords = new HashMap<>(openedRecords);
    this.file = file;
    this.lockChannel = lockChannel;
    this.fileLock = fileLock;
    this.primary = primary;
    this.mirror = mirror;
    this.quarantinedTo = quarantinedTo;
  }

  /** Opens (or creates) {@code <dataDir>/registry.db} with {@link Options#defaults()}. */
  public static MapDbStateStore open(Path dataDir) {
    return open(dataDir, Options.defaults());
  }

  /**
   * Opens (or creates) the state file and its mirror in {@code dataDir}, creating the directory (mode 0700) if
   * needed, and repairs whichever of the two a crash left damaged from the other.
   *
   * @throws StateFileLockedException if another process or another open store holds the file
   * @throws StateFileCorruptException in strict mode, if neither the file nor its mirror can be opened and read back
   * @throws StateStoreException if the directory or files cannot be used (permissions, not a directory, I/O)
   */
  public static MapDbStateStore open(Path dataDir, Options options) {
    if (dataDir == null) {
      throw new IllegalArgumentException("dataDir must not be null");
    }
    if (options == null) {
      throw new IllegalArgumentException("options must not be null");
    }
    Path dir = dataDir.toAbsolutePath().normalize();
    prepareDirectory(dir);
    Path file = dir.resolve(options.fileName());
    Path mirrorFile = dir.resolve(options.fileName() + MIRROR_SUFFIX);
    Path lockFile = dir.resolve(options.fileName() + ".lock");

    FileChannel lockChannel = openLockFile(lockFile);
    FileLock fileLock;
    try {
      fileLock = lockChannel.tryLock();
    } catch (OverlappingFileLockException e) {
      fileLock = null;
    } catch (IOException e) {
      closeQuietly(lockChannel);
      throw new StateStoreException("cannot lock state file " + file + " (lock file " + lockFile + "): " + e, e);
    }
    if (fileLock == null) {
      closeQuietly(lockChannel);
      throw new StateFileLockedException(file);
    }

    Inspection p = null;
    Inspection m = null;
    MapFile primary = null;
    MapFile mirror = null;
    try {
      checkUsableFile(file);
      checkUsableFile(mirrorFile);
      discardZeroByteFile(file);
      discardZeroByteFile(mirrorFile);
      // A rebuild interrupted by a crash: never a source, its target is still in place.
      deleteWithLog(rebuildFile(file));
      deleteWithLog(rebuildFile(mirrorFile));

      Optional<Path> quarantinedTo = Optional.empty();
      p = inspect(file);
      m = inspect(mirrorFile);
      Map<String, byte[]> records;
      if (!p.exists && !m.exists && !p.interrupted && !m.interrupted) {
        records = Map.of();
        rebuild(file, records);
        rebuild(mirrorFile, records);
      } else {
        Inspection source = p.clean() ? p : m.clean() ? m : p.readable() ? p : m.readable() ? m : null;
        if (source == null) {
          StateStoreException cause = new StateStoreException("neither state file " + file + " (" + p.problem()
              + ") nor its mirror " + mirrorFile + " (" + m.problem() + ") can be read back", p.failure);
          if (p.failure != null && m.failure != null) {
            cause.addSuppressed(m.failure);
          }
          if (options.strict()) {
            throw new StateFileCorruptException(file, cause);
          }
          Path target = quarantine(file, mirrorFile, options.clock());
          log.error("STATE FILE CORRUPT: {}; moved it to {} (and the mirror to {}{}) and starting with an EMPTY state"
              + " store. Registered plugins will be re-registered by their supervisors; inspect or delete the moved"
              + " files.", cause.getMessage(), target, target, MIRROR_SUFFIX, cause);
          quarantinedTo = Optional.of(target);
          records = Map.of();
          try {
            rebuild(file, records);
            rebuild(mirrorFile, records);
          } catch (RuntimeException e2) {
            throw new StateStoreException("cannot create a new state file " + file + " after moving the corrupt one to "
                + target + ": " + e2, e2);
          }
        } else {
          records = source.records;
          Inspection other = source == p ? m : p;
          if (source == m) {
            log.warn("state file {} {}; restoring its {} records from the mirror {}, which {}", file, p.state(),
                records.size(), mirrorFile, m.clean() ? "holds every acknowledged change"
                    : "reads back but was not closed cleanly either");
          } else if (!p.clean()) {
            log.warn("state file {} {} and its mirror {} {}; keeping the state file's {} records, which read back, and"
                + " rewriting both files", file, p.state(), mirrorFile, m.state(), records.size());
          }
          // The other file first: until it is replaced, the source is still the one clean copy.
          if (!other.clean() || !sameRecords(other.records, records)) {
            if (other == m && p.clean()) {
              log.info("mirror {} {}; writing it from {}", mirrorFile, m.clean() ? "differs from the state file" : m.state(), file);
            }
            other.closeHandle();
            rebuild(other.file, records);
          }
          if (!source.clean()) {
            source.closeHandle();
            rebuild(source.file, records);
          }
        }
      }
      restrictPermissions(file);
      restrictPermissions(mirrorFile);
      primary = p.takeHandleOrOpen();
      mirror = m.takeHandleOrOpen();
      log.info("opened state file {} and its mirror ({} records)", file, records.size());
      return new MapDbStateStore(file, lockChannel, fileLock, primary, mirror, quarantinedTo, records);
    } catch (RuntimeException | Error e) {
      for (Inspection i : new Inspection[] {p, m}) {
        if (i != null && i.handle != null) {
          i.handle.closeQuietly(e);
        }
      }
      for (MapFile f : new MapFile[] {primary, mirror}) {
        if (f != null) {
          f.closeQuietly(e);
        }
      }
      releaseLock(fileLock, lockChannel);
      throw e;
    }
  }

  /** The state file. */
  public Path file() {
    return file;
  }

  /** The state file's mirror, which holds the same records. */
  public Path mirrorFile() {
    return mirror.path;
  }

  /** Where a corrupt state file was moved when this store opened, if that happened. */
  public Optional<Path> quarantinedFile() {
    return quarantinedTo;
  }

  @Override
  public void put(String key, byte[] value) {
    Keys.checkValue(Keys.check(key), value);
    commit(List.of(new StateChange.Put(key, value)));
  }

  @Override
  public void delete(String key) {
    Keys.check(key);
    synchronized (lock) {
      ensureUsable();
      if (!primary.map.containsKey(key)) {
        return; // nothing to change, nothing to commit: the absence is already durable
      }
      commit(List.of(new StateChange.Delete(key)));
    }
  }

  @Override
  public Optional<byte[]> get(String key) {
    Keys.check(key);
    synchronized (lock) {
      ensureUsable();
      byte[] value = primary.map.get(key);
      return value == null ? Optional.empty() : Optional.of(value.clone());
    }
  }

  @Override
  public Map<String, byte[]> loadAll() {
    synchronized (lock) {
      ensureUsable();
      if (openedRecords != null) {
        // Nothing changed since open() read every record: hand those out (nobody else holds them).
        Map<String, byte[]> restored = openedRecords;
        openedRecords = null;
        return restored;
      }
      Map<String, byte[]> copy = new HashMap<>();
      for (Map.Entry<String, byte[]> e : primary.map.entrySet()) {
        copy.put(e.getKey(), e.getValue().clone());
      }
      return copy;
    }
  }

  @Override
  public void apply(List<StateChange> changes) {
    Keys.checkChanges(changes);
    if (changes.isEmpty()) {
      return;
    }
    commit(changes);
  }

  /**
   * Commits the changes to the state file, then to the mirror. The order is what {@link #open} relies on: while
   * the mirror's commit runs, the state file already holds the change.
   */
  private void commit(List<StateChange> changes) {
    synchronized (lock) {
      ensureUsable();
      openedRecords = null;
      // The previous values, to take the change back out of the state file if the mirror's commit fails.
      Map<String, byte[]> before = new HashMap<>();
      for (StateChange change : changes) {
        if (!before.containsKey(change.key())) {
          before.put(change.key(), primary.map.get(change.key()));
        }
      }
      try {
        primary.stage(changes);
      } catch (RuntimeException e) {
        // Only the write-ahead log was written: a rollback restores the state file's view exactly.
        rollbackAfter(primary, e);
        throw failed(changes, e, "nothing was changed");
      }
      try {
        primary.db.commit();
      } catch (RuntimeException e) {
        broken = true;
        rollbackAfter(primary, e);
        throw failed(changes, e, UNKNOWN_OUTCOME);
      }
      try {
        mirror.stage(changes);
        mirror.db.commit();
      } catch (RuntimeException e) {
        broken = true;
        rollbackAfter(mirror, e);
        boolean undone = undo(before, e);
        throw failed(changes, e, undone ? "nothing was changed (the mirror's commit failed, the state file's was"
            + " taken back); the store refuses further use until reopened" : UNKNOWN_OUTCOME);
      }
    }
  }

  private boolean undo(Map<String, byte[]> before, RuntimeException cause) {
    try {
      List<StateChange> inverse = new ArrayList<>();
      before.forEach((key, value) -> inverse.add(value == null ? new StateChange.Delete(key) : new StateChange.Put(key, value)));
      primary.stage(inverse);
      primary.db.commit();
      return true;
    } catch (RuntimeException e) {
      cause.addSuppressed(e);
      log.error("taking a change back out of state file {} after its mirror's commit failed also failed", file, e);
      return false;
    }
  }

  private StateStoreException failed(List<StateChange> changes, RuntimeException e, String outcome) {
    return new StateStoreException("commit of " + changes.size() + " change(s) to state file " + file + " failed; "
        + outcome + ": " + e, e);
  }

  private void rollbackAfter(MapFile target, RuntimeException cause) {
    try {
      target.db.rollback();
    } catch (RuntimeException e) {
      // MapDB's view may now hold half a change; refuse further use instead of committing it later.
      broken = true;
      cause.addSuppressed(e);
      log.error("rollback of a failed commit to {} failed; the store refuses further use until reopened", target.path, e);
    }
  }

  private void ensureUsable() {
    if (closed) {
      throw new IllegalStateException("state store " + file + " is closed");
    }
    if (broken) {
      throw new StateStoreException("state store " + file + " is unusable after a failed commit; close and reopen it");
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      try {
        primary.db.close();
      } catch (RuntimeException e) {
        log.warn("closing state file {} failed (committed changes are safe)", file, e);
      }
      try {
        mirror.db.close();
      } catch (RuntimeException e) {
        log.warn("closing mirror {} failed (committed changes are safe)", mirror.path, e);
      } finally {
        releaseLock(fileLock, lockChannel);
      }
    }
  }

  @Override
  public String toString() {
    return "MapDbStateStore[" + file + "]";
  }

  // ---- the two MapDB files ----

  /** One open MapDB file and its map. */
  private static final class MapFile {
    final Path path;
    final DB db;
    final HTreeMap<String, byte[]> map;

    private MapFile(Path path, DB db, HTreeMap<String, byte[]> map) {
      this.path = path;
      this.db = db;
      this.map = map;
    }

    /** Opens an existing file that holds the map; fails if it does not. */
    static MapFile open(Path path) {
      DB db = DBMaker.fileDB(path.toFile()).transactionEnable().fileLockDisable().make();
      try {
        return new MapFile(path, db, db.hashMap(MAP_NAME, Serializer.STRING, Serializer.BYTE_ARRAY).open());
      } catch (RuntimeException | Error e) {
        try {
          db.close();
        } catch (RuntimeException | Error suppressed) {
          e.addSuppressed(suppressed);
        }
        throw e;
      }
    }

    /** Writes the changes into MapDB's write-ahead log, not yet into the file. */
    void stage(List<StateChange> changes) {
      for (StateChange change : changes) {
        if (change instanceof StateChange.Put put) {
          map.put(put.key(), put.valueUnsafe().clone());
        } else {
          map.remove(change.key());
        }
      }
    }

    void closeQuietly(Throwable cause) {
      try {
        db.close();
      } catch (RuntimeException | Error e) {
        cause.addSuppressed(e);
      }
    }
  }

  // ---- opening ----

  /** What {@link #open} found in one file before changing anything. Not thread-safe: used by one open. */
  private static final class Inspection {
    final Path file;
    final boolean exists;
    /** MapDB's write-ahead-log files are present: a commit began and did not complete. */
    final boolean interrupted;
    /** Every record, if the file opened and every record read back; otherwise null. */
    final Map<String, byte[]> records;
    /** Why the file could not be read back, if it exists and could not. */
    final Throwable failure;
    /** The file, still open, if it read back; handed to the store if the file is kept as it is. */
    MapFile handle;

    Inspection(Path file, boolean exists, boolean interrupted, Map<String, byte[]> records, Throwable failure,
        MapFile handle) {
      this.file = file;
      this.exists = exists;
      this.interrupted = interrupted;
      this.records = records;
      this.failure = failure;
      this.handle = handle;
    }

    boolean readable() {
      return records != null;
    }

    /** Closed after a complete commit, and readable: every change committed to it is in it, exactly. */
    boolean clean() {
      return exists && !interrupted && records != null;
    }

    /** Closes the file before it is replaced. */
    void closeHandle() {
      if (handle != null) {
        MapFile h = handle;
        handle = null;
        h.db.close();
      }
    }

    MapFile takeHandleOrOpen() {
      MapFile h = handle;
      handle = null;
      return h != null ? h : MapFile.open(file);
    }

    String state() {
      if (!exists) {
        return interrupted ? "is missing but has write-ahead-log files" : "is missing";
      }
      if (records == null) {
        return "cannot be read back: " + describe(failure);
      }
      return interrupted ? "was left in the middle of a commit (its write-ahead-log files are present)" : "is intact";
    }

    String problem() {
      return exists && records == null ? describe(failure) : state();
    }
  }

  /**
   * Looks for the file's write-ahead-log files, then opens the file and reads every record back. The open does not
   * commit, and MapDB writes into the file only inside a commit (what it writes before goes into new log files), so
   * inspecting a file can neither change it nor remove the log files that mark an interrupted commit.
   */
  private static Inspection inspect(Path file) {
    boolean interrupted;
    try {
      interrupted = !walFiles(file).isEmpty();
    } catch (IOException e) {
      throw new StateStoreException("cannot list the write-ahead-log files of " + file + ": " + e, e);
    }
    if (!Files.exists(file)) {
      return new Inspection(file, false, interrupted, null, null, null);
    }
    MapFile handle = null;
    try {
      handle = MapFile.open(file);
      Map<String, byte[]> records = new HashMap<>();
      for (Map.Entry<String, byte[]> e : handle.map.entrySet()) {
        if (e.getKey() == null || e.getValue() == null) {
          throw new IllegalStateException("record " + records.size() + " has a null key or value");
        }
        records.put(e.getKey(), e.getValue());
      }
      return new Inspection(file, true, interrupted, records, null, handle);
    } catch (RuntimeException | AssertionError | OutOfMemoryError | StackOverflowError e) {
      // Errors are caught too: a broken record can make MapDB decode a garbage length and allocate or
      // recurse without bound. Whatever MapDB throws while reading the file, the file is what is broken.
      if (handle != null) {
        handle.closeQuietly(e);
      }
      return new Inspection(file, true, interrupted, null, e, null);
    }
  }

  private static boolean sameRecords(Map<String, byte[]> a, Map<String, byte[]> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (Map.Entry<String, byte[]> e : a.entrySet()) {
      if (!Arrays.equals(e.getValue(), b.get(e.getKey()))) {
        return false;
      }
    }
    return true;
  }

  private static Path rebuildFile(Path file) {
    return file.resolveSibling(file.getFileName() + REBUILD_SUFFIX);
  }

  /**
   * Replaces {@code target} with a new MapDB file holding exactly {@code records}: written and committed under
   * another name, then renamed over the target, then the target's stale write-ahead-log files are deleted. A crash
   * before the rename leaves the target as it was; one after it but before the deletion leaves the new file marked
   * as interrupted, which the next open rebuilds again.
   */
  private static void rebuild(Path target, Map<String, byte[]> records) {
    Path temp = rebuildFile(target);
    try {
      deleteWithLog(temp);
      DB db = DBMaker.fileDB(temp.toFile()).transactionEnable().fileLockDisable().make();
      try {
        HTreeMap<String, byte[]> map = db.hashMap(MAP_NAME, Serializer.STRING, Serializer.BYTE_ARRAY).createOrOpen();
        map.putAll(records);
        db.commit();
      } finally {
        db.close();
      }
      restrictPermissions(temp);
      Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      for (Path wal : walFiles(target)) {
        Files.delete(wal);
      }
      syncDirectory(target.getParent());
    } catch (IOException e) {
      throw new StateStoreException("cannot rebuild " + target + " from " + records.size() + " records: " + e, e);
    }
  }

  private static void deleteWithLog(Path file) {
    try {
      for (Path wal : walFiles(file)) {
        Files.delete(wal);
      }
      Files.deleteIfExists(file);
    } catch (IOException e) {
      throw new StateStoreException("cannot delete " + file + ": " + e, e);
    }
  }

  /** Makes the renames and deletions durable against a power loss, not just a crash of the process. */
  private static void syncDirectory(Path dir) {
    try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
      channel.force(true);
    } catch (IOException e) {
      log.debug("syncing directory {} failed (not supported on this file system?)", dir, e);
    }
  }

  /** The exception and its causes on one line: MapDB's own exceptions often carry no message. */
  static String describe(Throwable t) {
    StringBuilder b = new StringBuilder(t.toString());
    for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
      b.append(" <- ").append(c);
      if (b.length() > 500) {
        break;
      }
    }
    return b.toString();
  }

  private static void prepareDirectory(Path dir) {
    try {
      if (Files.exists(dir)) {
        if (!Files.isDirectory(dir)) {
          throw new StateStoreException("data directory " + dir + " exists and is not a directory");
        }
        warnIfOthersCanRead(dir);
        return;
      }
      Files.createDirectories(dir, posixAttribute(DIR_MODE));
    } catch (UnsupportedOperationException e) {
      try {
        Files.createDirectories(dir);
      } catch (IOException e2) {
        throw new StateStoreException("cannot create data directory " + dir + ": " + e2, e2);
      }
    } catch (IOException e) {
      throw new StateStoreException("cannot create data directory " + dir + ": " + e, e);
    }
  }

  private static void warnIfOthersCanRead(Path dir) {
    try {
      Set<PosixFilePermission> perms = Files.getPosixFilePermissions(dir);
      if (perms.contains(PosixFilePermission.GROUP_READ) || perms.contains(PosixFilePermission.OTHERS_READ)) {
        log.warn("data directory {} is readable by group/others ({}); the state file's transient write-ahead-log"
            + " files are created with the process umask", dir, PosixFilePermissions.toString(perms));
      }
    } catch (UnsupportedOperationException | IOException e) {
      // Not a POSIX file system or not readable: nothing useful to warn about here.
    }
  }

  private static FileChannel openLockFile(Path lockFile) {
    try {
      try {
        return FileChannel.open(lockFile, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), posixAttribute(FILE_MODE));
      } catch (FileAlreadyExistsException e) {
        return FileChannel.open(lockFile, StandardOpenOption.WRITE);
      } catch (UnsupportedOperationException e) {
        return FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      }
    } catch (IOException e) {
      throw new StateStoreException("cannot open lock file " + lockFile + ": " + e, e);
    }
  }

  private static void checkUsableFile(Path file) {
    if (!Files.exists(file)) {
      return;
    }
    if (!Files.isRegularFile(file)) {
      throw new StateStoreException("state file " + file + " exists and is not a regular file");
    }
    // An unreadable file is a permissions problem, not corruption: never move a good file aside for it.
    if (!Files.isReadable(file) || !Files.isWritable(file)) {
      throw new StateStoreException("state file " + file + " is not readable and writable by this process");
    }
  }

  private static void discardZeroByteFile(Path file) {
    try {
      if (Files.exists(file) && Files.size(file) == 0 && walFiles(file).isEmpty()) {
        log.warn("state file {} is empty (0 bytes, no write-ahead log): no commit ever reached it; replacing it with"
            + " a new store", file);
        Files.delete(file);
      }
    } catch (IOException e) {
      throw new StateStoreException("cannot inspect or replace empty state file " + file + ": " + e, e);
    }
  }

  /**
   * Moves the file, its mirror and their write-ahead-log files aside (the mirror to the file's new name plus
   * {@code .mirror}); returns the new name of the file.
   */
  private static Path quarantine(Path file, Path mirrorFile, Clock clock) {
    String base = file.getFileName() + ".corrupt-" + QUARANTINE_STAMP.format(clock.instant());
    Path target = file.resolveSibling(base);
    for (int i = 1; Files.exists(target) || Files.exists(mirrorTarget(target)); i++) {
      target = file.resolveSibling(base + "-" + i);
    }
    // The mirror first: if this fails half-way, the state file is still in place and the next open retries.
    moveAside(mirrorFile, mirrorTarget(target));
    moveAside(file, target);
    return target;
  }

  private static Path mirrorTarget(Path target) {
    return target.resolveSibling(target.getFileName() + MIRROR_SUFFIX);
  }

  private static void moveAside(Path file, Path target) {
    try {
      // Log files first, for the same reason.
      for (Path wal : walFiles(file)) {
        String suffix = wal.getFileName().toString().substring(file.getFileName().toString().length());
        Files.move(wal, file.resolveSibling(target.getFileName() + suffix));
      }
      if (Files.exists(file)) {
        Files.move(file, target);
      }
    } catch (IOException e) {
      throw new StateStoreException("state file " + file + " is corrupt and could not be moved aside to " + target + ": " + e, e);
    }
  }

  private static List<Path> walFiles(Path file) throws IOException {
    List<Path> result = new ArrayList<>();
    String prefix = file.getFileName() + ".wal";
    try (DirectoryStream<Path> dir = Files.newDirectoryStream(file.getParent(), p -> p.getFileName().toString().startsWith(prefix))) {
      dir.forEach(result::add);
    }
    return result;
  }

  private static void restrictPermissions(Path file) {
    try {
      Files.setPosixFilePermissions(file, FILE_MODE);
    } catch (UnsupportedOperationException e) {
      log.debug("file system of {} has no POSIX permissions", file);
    } catch (IOException e) {
      throw new StateStoreException("cannot set mode 0600 on state file " + file + ": " + e, e);
    }
  }

  private static FileAttribute<?>[] posixAttribute(Set<PosixFilePermission> mode) {
    return new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(mode)};
  }

  private static void releaseLock(FileLock fileLock, FileChannel channel) {
    try {
      fileLock.release();
    } catch (IOException | RuntimeException e) {
      log.debug("releasing state file lock failed", e);
    }
    closeQuietly(channel);
  }

  private static void closeQuietly(FileChannel channel) {
    try {
      channel.close();
    } catch (IOException e) {
      log.debug("closing lock file channel failed", e);
    }
  }
}
