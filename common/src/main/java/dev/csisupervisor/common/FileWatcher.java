package dev.csisupervisor.common;

import static java.nio.file.StandardWatchEventKinds.ENTRY_CREATE;
import static java.nio.file.StandardWatchEventKinds.ENTRY_DELETE;
import static java.nio.file.StandardWatchEventKinds.OVERFLOW;
import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@link WatchService} (inotify on Linux) and one thread for everything a node waits to see
 * on disk: the socket of every supervised plugin ({@link #watchFile}), so a plugin whose socket
 * appears is probed at once instead of at its next backoff tick or steady probe, and a directory
 * whose entries come and go ({@link #watchDirectory}), such as the agent's discovery directory.
 * A host makes one and hands it to each user (the supervisor's builder takes it as {@code fileWatcher});
 * every directory is watched once, however many users wait on it.
 *
 * <p>A file whose directory does not exist yet is followed from the <em>nearest existing
 * ancestor</em> directory: each time the next directory on the way is created the watch moves one
 * level down, and once the file's own directory exists it waits for the file. A watched directory
 * that is removed is re-armed at its nearest existing ancestor, so a plugin that deletes and
 * re-creates its directory is still seen. A watched file's callback runs every time the file is
 * created (first start and every restart), also when the watch arrives in the file's directory
 * and finds the file already there, and after an overflow (events were lost) if the file exists.
 *
 * <p>Thread-safe. The thread starts with the first watch and ends at {@link #close()}. Callbacks
 * run on the executor given with each watch, never on the watch thread and never under this
 * class's lock; each batch of events is one task on that executor. A callback the executor
 * rejects (it is shutting down) is dropped.
 */
public final class FileWatcher implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(FileWatcher.class);

  /** A registered interest; cancel it when it is no longer wanted. Idempotent. */
  public interface Watch {
    void cancel();
  }

  /** Hears what happens in one watched directory. */
  @FunctionalInterface
  public interface DirectoryListener {
    /** One batch of changes, in the order the kernel reported them; never empty. */
    void onEvents(List<DirectoryEvent> events);
  }

  /**
   * A change in a watched directory.
   *
   * @param kind what happened
   * @param name the entry's file name; empty for {@link Kind#OVERFLOW} and {@link Kind#WATCH_LOST}
   */
  public record DirectoryEvent(Kind kind, String name) {
    /** What happened in the directory. */
    public enum Kind {
      /** An entry was created (or moved in). */
      CREATED,
      /** An entry was deleted (or moved out). */
      DELETED,
      /** Events were lost: list the directory to catch up. */
      OVERFLOW,
      /** The directory can no longer be watched (removed, unmounted); no event follows. */
      WATCH_LOST
    }

    public DirectoryEvent {
      requireNonNull(kind, "kind");
      requireNonNull(name, "name");
    }
  }

  private abstract static class Interest {
    final Executor executor;
    Path dir; // the directory watched for it now; guarded by lock
    boolean cancelled; // guarded by lock

    Interest(Executor executor) {
      this.executor = executor;
    }
  }

  /** Waits for one file to be created, from its nearest existing ancestor on. */
  private static final class FileInterest extends Interest {
    final Path file;
    final Runnable callback;

    FileInterest(Path file, Executor executor, Runnable callback) {
      super(executor);
      this.file = file;
      this.callback = callback;
    }
  }

  /** Hears every entry created or deleted in one directory. */
  private static final class DirectoryInterest extends Interest {
    final DirectoryListener listener;

    DirectoryInterest(Executor executor, DirectoryListener listener) {
      super(executor);
      this.listener = listener;
    }
  }

  private final String threadName;
  private final Object lock = new Object();
  // Guarded by lock.
  private final Map<Path, WatchKey> keys = new HashMap<>();
  private final Map<Path, Set<Interest>> byDir = new HashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private WatchService service;
  private Thread thread;

  /** A watcher whose thread is called {@code csi-file-watcher}. */
  public FileWatcher() {
    this("csi-file-watcher");
  }

  /** A watcher whose thread (a daemon, started by the first watch) has this name. */
  public FileWatcher(String threadName) {
    this.threadName = requireNonNull(threadName, "threadName");
  }

  /**
   * Runs {@code callback} on {@code executor} whenever the file {@code file} is created, watching
   * from its nearest existing ancestor on. If nothing can be watched (or the watcher is closed),
   * logs it and returns a no-op watch: the caller must not depend on it alone (supervision still
   * probes with backoff).
   */
  public Watch watchFile(Path file, Executor executor, Runnable callback) {
    Path absolute = file.toAbsolutePath().normalize();
    if (absolute.getParent() == null) {
      throw new IllegalArgumentException("file must have a parent directory, got " + file);
    }
    FileInterest interest = new FileInterest(absolute, requireNonNull(executor, "executor"),
        requireNonNull(callback, "callback"));
    synchronized (lock) {
      if (closed.get()) {
        return () -> {};
      }
      try {
        ensureStarted();
      } catch (IOException e) {
        log.warn("cannot watch for {}: falling back to probe backoff only", file, e);
        return () -> {};
      }
      armLocked(interest);
    }
    return () -> cancel(interest);
  }

  /**
   * Hands {@code listener}, on {@code executor}, every entry created in or deleted from the
   * existing directory {@code dir}. When the directory can no longer be watched the last batch
   * ends with {@link DirectoryEvent.Kind#WATCH_LOST} and the watch is over.
   *
   * @throws IOException if {@code dir} cannot be watched (missing, not a directory, no inotify)
   * @throws IllegalStateException if the watcher is closed
   */
  public Watch watchDirectory(Path dir, Executor executor, DirectoryListener listener)
      throws IOException {
    Path absolute = dir.toAbsolutePath().normalize();
    DirectoryInterest interest = new DirectoryInterest(requireNonNull(executor, "executor"),
        requireNonNull(listener, "listener"));
    synchronized (lock) {
      if (closed.get()) {
        throw new IllegalStateException("file watcher is closed; cannot watch " + dir);
      }
      ensureStarted();
      registerLocked(absolute);
      attachLocked(interest, absolute);
    }
    return () -> cancel(interest);
  }

  private void cancel(Interest interest) {
    synchronized (lock) {
      interest.cancelled = true;
      detachLocked(interest);
    }
  }

  /** The directory currently watched for {@code file}, for tests; null if none. */
  Path watchedDirectory(Path file) {
    Path absolute = file.toAbsolutePath().normalize();
    synchronized (lock) {
      for (Set<Interest> set : byDir.values()) {
        for (Interest i : set) {
          if (i instanceof FileInterest f && f.file.equals(absolute) && !i.cancelled) {
            return i.dir;
          }
        }
      }
      return null;
    }
  }

  /** The key of {@code dir}, registered now if it has none. Every user's event kinds, always. */
  private void registerLocked(Path dir) throws IOException {
    WatchKey key = keys.get(dir);
    if (key == null || !key.isValid()) {
      keys.put(dir, dir.register(service, ENTRY_CREATE, ENTRY_DELETE));
    }
  }

  /**
   * Watches the deepest existing directory on the way to the interest's file. Returns whether the
   * interest now watches the file's own directory.
   */
  private boolean armLocked(FileInterest interest) {
    Path target = interest.file.getParent();
    // Bounded: each round follows a change of the tree made while the previous one registered.
    for (int round = 0; round < 2 * target.getNameCount() + 4; round++) {
      Path dir = nearestExisting(target);
      while (dir != null) {
        try {
          registerLocked(dir);
          break;
        } catch (NoSuchFileException | NotDirectoryException e) {
          dir = nearestExisting(dir.getParent()); // removed meanwhile: one level up
        } catch (IOException | ClosedWatchServiceException e) {
          log.warn("cannot watch {} for {}: falling back to probe backoff only", dir,
              interest.file, e);
          dir = null;
        }
      }
      if (dir == null) {
        detachLocked(interest);
        return false;
      }
      if (!dir.equals(interest.dir)) {
        detachLocked(interest);
        attachLocked(interest, dir);
        if (!dir.equals(target)) {
          log.debug("{} does not exist yet: watching its nearest existing ancestor {}", target,
              dir);
        }
      }
      // A directory created below it between the look-up and the registration sent no event to
      // the new key: look again, and move on down (or back up) if the tree changed meanwhile.
      if (dir.equals(nearestExisting(target))) {
        return dir.equals(target);
      }
    }
    return interest.dir != null && interest.dir.equals(target);
  }

  private void attachLocked(Interest interest, Path dir) {
    interest.dir = dir;
    byDir.computeIfAbsent(dir, d -> new LinkedHashSet<>()).add(interest);
  }

  private void detachLocked(Interest interest) {
    Path dir = interest.dir;
    if (dir == null) {
      return;
    }
    interest.dir = null;
    Set<Interest> set = byDir.get(dir);
    if (set != null) {
      set.remove(interest);
      if (set.isEmpty()) {
        byDir.remove(dir);
        WatchKey key = keys.remove(dir);
        if (key != null) {
          key.cancel();
        }
      }
    }
  }

  private static Path nearestExisting(Path dir) {
    Path p = dir;
    while (p != null && !Files.isDirectory(p)) {
      p = p.getParent();
    }
    return p;
  }

  private void ensureStarted() throws IOException {
    if (service != null) {
      return;
    }
    service = FileSystems.getDefault().newWatchService();
    thread = new Thread(this::run, threadName);
    thread.setDaemon(true);
    thread.start();
  }

  private void run() {
    WatchService ws;
    synchronized (lock) {
      ws = service;
    }
    while (!closed.get()) {
      WatchKey key;
      try {
        key = ws.take();
      } catch (InterruptedException | ClosedWatchServiceException e) {
        return;
      }
      Path dir = (Path) key.watchable();
      List<WatchEvent<?>> events = key.pollEvents();
      boolean valid = key.reset();
      List<Runnable> fire = new ArrayList<>();
      synchronized (lock) {
        if (closed.get()) {
          return;
        }
        if (!valid && keys.get(dir) == key) {
          keys.remove(dir); // the directory was removed (or unmounted)
        }
        Set<Interest> set = byDir.get(dir);
        for (Interest i : set == null ? List.<Interest>of() : List.copyOf(set)) {
          if (i.cancelled) {
            continue;
          }
          if (i instanceof FileInterest f) {
            fileEventsLocked(f, dir, events, valid, fire);
          } else if (i instanceof DirectoryInterest d) {
            directoryEventsLocked(d, events, valid, fire);
          }
        }
      }
      fire.forEach(Runnable::run);
    }
  }

  private void fileEventsLocked(FileInterest i, Path dir, List<WatchEvent<?>> events,
      boolean valid, List<Runnable> fire) {
    if (!valid) {
      log.debug("watched directory {} is gone: re-arming the watch for {}", dir, i.file);
      detachLocked(i);
      if (armLocked(i) && exists(i.file)) {
        fire.add(() -> fire(i.executor, i.callback));
      }
      return;
    }
    boolean inFileDir = dir.equals(i.file.getParent());
    for (WatchEvent<?> event : events) {
      if (event.kind() == OVERFLOW) {
        if (armLocked(i) && exists(i.file)) {
          fire.add(() -> fire(i.executor, i.callback));
        }
        return;
      }
      if (event.kind() != ENTRY_CREATE) {
        continue;
      }
      String created = event.context().toString();
      if (inFileDir) {
        if (created.equals(i.file.getFileName().toString())) {
          fire.add(() -> fire(i.executor, i.callback));
          return;
        }
      } else if (created.equals(nextComponent(dir, i.file))) {
        // A directory on the way appeared: move down (as deep as already exists).
        if (armLocked(i) && exists(i.file)) {
          fire.add(() -> fire(i.executor, i.callback));
        }
        return;
      }
    }
  }

  private void directoryEventsLocked(DirectoryInterest i, List<WatchEvent<?>> events,
      boolean valid, List<Runnable> fire) {
    List<DirectoryEvent> batch = new ArrayList<>(events.size() + 1);
    for (WatchEvent<?> event : events) {
      if (event.kind() == OVERFLOW) {
        batch.add(new DirectoryEvent(DirectoryEvent.Kind.OVERFLOW, ""));
      } else if (event.kind() == ENTRY_CREATE || event.kind() == ENTRY_DELETE) {
        batch.add(new DirectoryEvent(event.kind() == ENTRY_CREATE ? DirectoryEvent.Kind.CREATED
            : DirectoryEvent.Kind.DELETED, event.context().toString()));
      }
    }
    if (!valid) {
      batch.add(new DirectoryEvent(DirectoryEvent.Kind.WATCH_LOST, ""));
      i.cancelled = true;
      detachLocked(i);
    }
    if (!batch.isEmpty()) {
      List<DirectoryEvent> copy = List.copyOf(batch);
      fire.add(() -> fire(i.executor, () -> i.listener.onEvents(copy)));
    }
  }

  /** The name of the path element right below {@code ancestor} on the way to {@code file}. */
  private static String nextComponent(Path ancestor, Path file) {
    if (!file.startsWith(ancestor) || file.getNameCount() <= ancestor.getNameCount()) {
      return "";
    }
    return file.getName(ancestor.getNameCount()).toString();
  }

  private static boolean exists(Path file) {
    return Files.exists(file, LinkOption.NOFOLLOW_LINKS);
  }

  private static void fire(Executor executor, Runnable callback) {
    try {
      executor.execute(callback);
    } catch (RuntimeException e) {
      log.debug("file watch callback rejected (shutting down?)", e);
    }
  }

  /**
   * Stops the thread and ends every watch: no events are handed out after this returns (a batch
   * being handed out at that moment may still reach its executor). Idempotent.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    synchronized (lock) {
      if (service != null) {
        try {
          service.close();
        } catch (IOException e) {
          log.debug("closing watch service", e);
        }
        thread.interrupt();
      }
      keys.clear();
      byDir.clear();
    }
  }
}
