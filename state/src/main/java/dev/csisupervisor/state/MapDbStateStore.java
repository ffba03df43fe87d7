package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
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
 * A {@link StateStore} in one MapDB file, {@code <dataDir>/registry.db} by default.
 *
 * <p><b>Durability.</b> MapDB always runs with its write-ahead log ({@code transactionEnable()}); every
 * {@code put}/{@code delete}/{@code apply} is one MapDB commit and is durable when it returns. Without the
 * log a kill -9 can leave a file whose header checksum is broken, so the store never runs without it.
 * Records live in a hash map, so a commit rewrites only the touched key's bucket.
 *
 * <p><b>One process at a time.</b> {@link #open} takes an exclusive lock on {@code <file>.lock}; a second
 * opener, in another process or in this one, gets {@link StateFileLockedException} at once. The store
 * uses its own lock file rather than MapDB's lock on the data file because MapDB does not release its lock
 * when opening a corrupt file fails, which would make the quarantine below (and a retry) report "locked".
 * The lock is released by {@link #close()} or by the death of the process.
 *
 * <p><b>Opening a damaged file.</b> On open every record is read back. If MapDB cannot open the file or a
 * record cannot be read (truncated, random bytes, a broken record), the file and its write-ahead-log files
 * are moved aside as {@code <file>.corrupt-<UTC timestamp>} (logged at ERROR) and an empty store is
 * opened — unless {@link Options#strict()} is set, in which case open fails with
 * {@link StateFileCorruptException} and the file is left untouched. A zero-byte file with no log files is
 * not treated as corrupt: MapDB writes its header when it creates the file, before any commit, so a zero-byte
 * file (what a crash during creation leaves behind) cannot hold a committed record; it is replaced by a new
 * store with a WARN in both modes. A file the process cannot read or write is an error, never quarantined.
 *
 * <p><b>Permissions.</b> A data directory that the store creates gets mode 0700; the state file and the lock
 * file get 0600. MapDB creates each write-ahead-log file inside a commit and deletes it when the commit
 * completes, with the process umask, so keep the data directory private (the store warns if others may read it).
 *
 * <p>Thread-safe: calls are serialized on one lock, each mutating call is its own commit.
 */
public final class MapDbStateStore implements StateStore {

  /** The default state file name inside the data directory. */
  public static final String DEFAULT_FILE_NAME = "registry.db";

  private static final Logger log = LoggerFactory.getLogger(MapDbStateStore.class);
  private static final String MAP_NAME = "records";
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
  private final DB db;
  private final HTreeMap<String, byte[]> map;
  private final Optional<Path> quarantinedTo;
  private final Object lock = new Object();
  private boolean closed; // guarded by lock
  private boolean broken; // guarded by lock: a rollback failed, the in-memory MapDB state is unknown

  private MapDbStateStore(Path file, FileChannel lockChannel, FileLock fileLock, Opened opened, Optional<Path> quarantinedTo) {
    this.file = file;
    this.lockChannel = lockChannel;
    this.fileLock = fileLock;
    this.db = opened.db;
    this.map = opened.map;
    this.quarantinedTo = quarantinedTo;
  }

  /** Opens (or creates) {@code <dataDir>/registry.db} with {@link Options#defaults()}. */
  public static MapDbStateStore open(Path dataDir) {
    return open(dataDir, Options.defaults());
  }

  /**
   * Opens (or creates) the state file in {@code dataDir}, creating the directory (mode 0700) if needed.
   *
   * @throws StateFileLockedException if another process or another open store holds the file
   * @throws StateFileCorruptException in strict mode, if the file cannot be opened or read back
   * @throws StateStoreException if the directory or file cannot be used (permissions, not a directory, I/O)
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

    try {
      checkUsableFile(file);
      discardZeroByteFile(file);
      Optional<Path> quarantinedTo = Optional.empty();
      Opened opened;
      try {
        opened = openAndScan(file);
      } catch (RuntimeException | AssertionError | OutOfMemoryError | StackOverflowError e) {
        // Errors are caught too: a broken record can make MapDB decode a garbage length and allocate or
        // recurse without bound. Whatever MapDB throws while reading the file, the file is what is broken.
        if (options.strict()) {
          throw new StateFileCorruptException(file, e);
        }
        Path target = quarantine(file, options.clock());
        log.error("STATE FILE CORRUPT: {} could not be opened or read back ({}); moved it to {} and starting with an"
            + " EMPTY state store. Registered plugins will be re-registered by their supervisors; inspect or delete"
            + " the moved file.", file, describe(e), target, e);
        quarantinedTo = Optional.of(target);
        try {
          opened = openAndScan(file);
        } catch (RuntimeException e2) {
          throw new StateStoreException("cannot create a new state file " + file + " after moving the corrupt one to "
              + target + ": " + e2, e2);
        }
      }
      restrictPermissions(file);
      log.info("opened state file {} ({} records)", file, opened.records);
      return new MapDbStateStore(file, lockChannel, fileLock, opened, quarantinedTo);
    } catch (RuntimeException | Error e) {
      releaseLock(fileLock, lockChannel);
      throw e;
    }
  }

  /** The state file. */
  public Path file() {
    return file;
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
      if (!map.containsKey(key)) {
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
      byte[] value = map.get(key);
      return value == null ? Optional.empty() : Optional.of(value.clone());
    }
  }

  @Override
  public Map<String, byte[]> loadAll() {
    synchronized (lock) {
      ensureUsable();
      Map<String, byte[]> copy = new HashMap<>();
      for (Map.Entry<String, byte[]> e : map.entrySet()) {
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

  private void commit(List<StateChange> changes) {
    synchronized (lock) {
      ensureUsable();
      try {
        for (StateChange change : changes) {
          if (change instanceof StateChange.Put put) {
            map.put(put.key(), put.valueUnsafe().clone());
          } else {
            map.remove(change.key());
          }
        }
        db.commit();
      } catch (RuntimeException e) {
        rollbackAfter(e);
        throw new StateStoreException("commit of " + changes.size() + " change(s) to state file " + file
            + " failed; nothing was changed: " + e, e);
      }
    }
  }

  private void rollbackAfter(RuntimeException cause) {
    try {
      db.rollback();
    } catch (RuntimeException e) {
      // MapDB's view may now hold half a change; refuse further use instead of committing it later.
      broken = true;
      cause.addSuppressed(e);
      log.error("rollback of a failed commit to state file {} failed; the store refuses further use until reopened", file, e);
    }
  }

  private void ensureUsable() {
    if (closed) {
      throw new IllegalStateException("state store " + file + " is closed");
    }
    if (broken) {
      throw new StateStoreException("state store " + file + " is unusable after a failed rollback; close and reopen it");
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
        db.close();
      } catch (RuntimeException e) {
        log.warn("closing state file {} failed (committed changes are safe in the write-ahead log)", file, e);
      } finally {
        releaseLock(fileLock, lockChannel);
      }
    }
  }

  @Override
  public String toString() {
    return "MapDbStateStore[" + file + "]";
  }

  // ---- opening ----

  private record Opened(DB db, HTreeMap<String, byte[]> map, int records) {}

  private static Opened openAndScan(Path file) {
    DB db = null;
    try {
      db = DBMaker.fileDB(file.toFile()).transactionEnable().fileLockDisable().make();
      HTreeMap<String, byte[]> map = db.hashMap(MAP_NAME, Serializer.STRING, Serializer.BYTE_ARRAY).createOrOpen();
      // Commit the catalog entry of a newly created map, so that the rollback of a later failed commit cannot
      // roll the map itself back.
      db.commit();
      int records = 0;
      for (Map.Entry<String, byte[]> e : map.entrySet()) {
        if (e.getKey() == null || e.getValue() == null) {
          throw new IllegalStateException("record " + records + " has a null key or value");
        }
        records++;
      }
      return new Opened(db, map, records);
    } catch (RuntimeException | Error e) {
      if (db != null) {
        try {
          db.close();
        } catch (RuntimeException | Error suppressed) {
          e.addSuppressed(suppressed);
        }
      }
      throw e;
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

  /** Moves the file and its write-ahead-log files aside; returns the new name of the file. */
  private static Path quarantine(Path file, Clock clock) {
    String base = file.getFileName() + ".corrupt-" + QUARANTINE_STAMP.format(clock.instant());
    Path target = file.resolveSibling(base);
    for (int i = 1; Files.exists(target); i++) {
      target = file.resolveSibling(base + "-" + i);
    }
    try {
      // Log files first: if this fails half-way, the main file is still in place and the next open retries.
      for (Path wal : walFiles(file)) {
        String suffix = wal.getFileName().toString().substring(file.getFileName().toString().length());
        Files.move(wal, file.resolveSibling(target.getFileName() + suffix));
      }
      if (Files.exists(file)) {
        Files.move(file, target);
      }
      return target;
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
