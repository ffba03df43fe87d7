package dev.csisupervisor.state;

import dev.csisupervisor.state.JournalReplay.Segment;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's directory ({@code <dataDir>/state}, mode 0700): its lock, its file names and the file-system
 * chores (permissions, directory sync, moving damaged files aside), done through the store's {@link StateIo}. Files
 * are {@code journal-<first sequence, 16 hex>.log}, {@code checkpoint-<sequence, 16 hex>.db} and {@code lock};
 * a name ending in {@code .tmp} is a file being written, never read.
 */
final class StateDirectory {
  static final String TEMP_SUFFIX = ".tmp";
  private static final Logger log = LoggerFactory.getLogger(StateDirectory.class);
  private static final Pattern SEGMENT = Pattern.compile("journal-([0-9a-f]{16})\\.log");
  private static final Pattern CHECKPOINT = Pattern.compile("checkpoint-([0-9a-f]{16})\\.db");
  static final Set<PosixFilePermission> FILE_MODE = PosixFilePermissions.fromString("rw-------");
  static final Set<PosixFilePermission> DIR_MODE = PosixFilePermissions.fromString("rwx------");
  private static final DateTimeFormatter STAMP =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss.SSS'Z'").withZone(ZoneOffset.UTC);

  final Path path;
  final StateIo io;
  private FileChannel lockChannel;
  private FileLock lock;

  StateDirectory(Path path) {
    this(path, StateIo.DEFAULT);
  }

  StateDirectory(Path path, StateIo io) {
    this.path = path;
    this.io = io;
  }

  Path segmentPath(long firstSequence) {
    return path.resolve(String.format("journal-%016x.log", firstSequence));
  }

  Path checkpointPath(long sequence) {
    return path.resolve(String.format("checkpoint-%016x.db", sequence));
  }

  /**
   * Creates the directory (0700) if needed, or checks that it is one. As etcd makes its log directory, a new one is
   * made as {@code state.tmp}, renamed into place and the parent forced: until then a power cut may forget the name
   * of the directory, and with it every file in it. Missing directories above it are made the same way (each one's
   * parent forced).
   */
  void prepare(boolean readOnly) {
    try {
      if (Files.exists(path)) {
        if (!Files.isDirectory(path)) {
          throw new StateStoreException("state directory " + path + " exists and is not a directory");
        }
        return;
      }
      if (readOnly) {
        throw new StateStoreException("state directory " + path + " does not exist");
      }
      Path parent = path.getParent();
      makeDirectories(parent);
      Path temp = parent.resolve(path.getFileName() + TEMP_SUFFIX);
      deleteTree(temp); // a crash before the rename left it: it never holds data
      io.createDirectory(temp);
      io.rename(temp, path);
      io.syncDirectory(parent);
    } catch (IOException e) {
      throw new StateStoreException("cannot create state directory " + path + ": " + e, e);
    }
  }

  /** Makes {@code dir} and the missing directories above it, forcing each one's parent. */
  private void makeDirectories(Path dir) throws IOException {
    if (Files.isDirectory(dir)) {
      return;
    }
    makeDirectories(dir.getParent());
    try {
      io.createDirectory(dir);
    } catch (FileAlreadyExistsException e) {
      if (!Files.isDirectory(dir)) {
        throw e;
      }
      return; // made by someone else meanwhile: its parent is theirs to force
    }
    io.syncDirectory(dir.getParent());
  }

  private void deleteTree(Path dir) throws IOException {
    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      io.delete(dir);
      return;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path p : entries) {
        deleteTree(p);
      }
    }
    io.delete(dir);
  }

  /** Takes the exclusive lock on {@code lock}, or fails at once with {@link StateFileLockedException}. */
  void lock() {
    Path lockFile = path.resolve("lock");
    try {
      try {
        lockChannel = FileChannel.open(lockFile, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
            PosixFilePermissions.asFileAttribute(FILE_MODE));
      } catch (FileAlreadyExistsException e) {
        lockChannel = FileChannel.open(lockFile, StandardOpenOption.WRITE);
      } catch (UnsupportedOperationException e) {
        lockChannel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      }
    } catch (IOException e) {
      throw new StateStoreException("cannot open lock file " + lockFile + ": " + e, e);
    }
    try {
      lock = lockChannel.tryLock();
    } catch (OverlappingFileLockException e) {
      lock = null;
    } catch (IOException e) {
      unlock();
      throw new StateStoreException("cannot lock state directory " + path + " (lock file " + lockFile + "): " + e, e);
    }
    if (lock == null) {
      unlock();
      throw new StateFileLockedException(path);
    }
  }

  void unlock() {
    try {
      if (lock != null) {
        lock.release();
      }
    } catch (IOException | RuntimeException e) {
      log.debug("releasing state lock failed", e);
    }
    try {
      if (lockChannel != null) {
        lockChannel.close();
      }
    } catch (IOException e) {
      log.debug("closing lock file failed", e);
    }
  }

  List<Segment> segments() throws IOException {
    List<Segment> result = new ArrayList<>();
    for (Path p : list(SEGMENT)) {
      result.add(new Segment(p, sequenceOf(p, SEGMENT)));
    }
    result.sort(Comparator.comparingLong(Segment::firstSequence));
    return result;
  }

  /** Checkpoints, newest (highest sequence) first. */
  List<Path> checkpoints() throws IOException {
    List<Path> result = list(CHECKPOINT);
    result.sort(Comparator.comparingLong((Path p) -> sequenceOf(p, CHECKPOINT)).reversed());
    return result;
  }

  static long sequenceOf(Path file, Pattern pattern) {
    Matcher m = pattern.matcher(file.getFileName().toString());
    if (!m.matches()) {
      throw new IllegalArgumentException("not a " + pattern + " file: " + file);
    }
    return Long.parseUnsignedLong(m.group(1), 16);
  }

  static long checkpointSequence(Path file) {
    return sequenceOf(file, CHECKPOINT);
  }

  private List<Path> list(Pattern pattern) throws IOException {
    List<Path> result = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(path,
        p -> pattern.matcher(p.getFileName().toString()).matches())) {
      files.forEach(result::add);
    }
    return result;
  }

  /** Deletes files a crash left half-written ({@code *.tmp}): never a source of data. */
  void deleteTemporaryFiles() throws IOException {
    try (DirectoryStream<Path> files = Files.newDirectoryStream(path, "*" + TEMP_SUFFIX)) {
      for (Path p : files) {
        log.info("deleting {}, left half-written by an earlier run", p);
        io.delete(p);
      }
    }
  }

  /** The bytes this process may still write to the directory's file system; Long.MAX_VALUE if unknown. */
  long usableSpace() {
    try {
      return Files.getFileStore(path).getUsableSpace();
    } catch (IOException | RuntimeException e) {
      return Long.MAX_VALUE;
    }
  }

  /**
   * Deletes {@code files} (those that exist), then forces the directories they were in: a deletion a power cut
   * could undo is not done.
   */
  void delete(List<Path> files) throws IOException {
    Set<Path> parents = new LinkedHashSet<>();
    for (Path f : files) {
      io.delete(f);
      parents.add(f.getParent());
    }
    for (Path d : parents) {
      io.syncDirectory(d);
    }
  }

  /** Makes renames and deletions durable against a power loss, not just a crash of the process. */
  void sync() throws IOException {
    io.syncDirectory(path);
  }

  void restrictPermissions(Path file) throws IOException {
    try {
      Files.setPosixFilePermissions(file, FILE_MODE);
    } catch (UnsupportedOperationException e) {
      log.debug("file system of {} has no POSIX permissions", file);
    }
  }

  /** Moves {@code files} into a new {@code corrupt-<UTC time>} directory beside the store's files; returns it. */
  Path quarantine(List<Path> files, Clock clock) throws IOException {
    String base = "corrupt-" + STAMP.format(clock.instant());
    Path target = path.resolve(base);
    for (int i = 1; Files.exists(target); i++) {
      target = path.resolve(base + "-" + i);
    }
    io.createDirectory(target);
    Set<Path> from = new LinkedHashSet<>();
    for (Path f : files) {
      io.rename(f, target.resolve(f.getFileName()));
      from.add(f.getParent());
    }
    io.syncDirectory(target); // the names moved in
    from.add(path); // the new directory's own name
    for (Path d : from) {
      io.syncDirectory(d); // the names moved out
    }
    return target;
  }

  /** An exception and its causes on one line: MapDB's own exceptions often carry no message. */
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
}
