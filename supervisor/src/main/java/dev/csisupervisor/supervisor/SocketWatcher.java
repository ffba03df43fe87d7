package dev.csisupervisor.supervisor;

import static java.nio.file.StandardWatchEventKinds.ENTRY_CREATE;
import static java.nio.file.StandardWatchEventKinds.OVERFLOW;

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
 * One {@link WatchService} (inotify on Linux) and one thread for every socket a supervisor waits
 * for, so a plugin whose socket appears is probed at once instead of at its next backoff tick or
 * steady probe.
 *
 * <p>A socket whose directory does not exist yet is followed from the <em>nearest existing
 * ancestor</em> directory: each time the next directory on the way is created the watch moves one
 * level down, and once the socket's own directory exists it waits for the socket file. A watched
 * directory that is removed is re-armed at its nearest existing ancestor, so a plugin that deletes
 * and re-creates its directory is still seen. The callback runs every time the socket file is
 * created (first start and every restart), and also when the watch arrives in the socket's
 * directory and finds the socket already there.
 *
 * <p>Callbacks run on the given executor (the supervisor's scheduler), never on the watch thread
 * and never under this class's lock. Thread-safe.
 */
final class SocketWatcher implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SocketWatcher.class);

  /** A registered interest; cancel it when the hook stops. */
  interface Watch {
    void cancel();
  }

  private static final class Interest {
    final Path socket;
    final Runnable callback;
    Path dir; // the directory watched for it now; guarded by lock
    boolean cancelled; // guarded by lock

    Interest(Path socket, Runnable callback) {
      this.socket = socket;
      this.callback = callback;
    }
  }

  private final Executor callbackExecutor;
  private final Object lock = new Object();
  // Guarded by lock.
  private final Map<Path, WatchKey> keys = new HashMap<>();
  private final Map<Path, Set<Interest>> byDir = new HashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private WatchService service;
  private Thread thread;

  SocketWatcher(Executor callbackExecutor) {
    this.callbackExecutor = callbackExecutor;
  }

  /**
   * Calls {@code callback} whenever the file {@code socket} is created, from its nearest existing
   * ancestor on. If nothing can be watched, logs it and returns a no-op watch: supervision still
   * works by backoff.
   */
  Watch watch(Path socket, Runnable callback) {
    Path absolute = socket.toAbsolutePath().normalize();
    if (absolute.getParent() == null) {
      throw new IllegalArgumentException("socket must have a parent directory, got " + socket);
    }
    Interest interest = new Interest(absolute, callback);
    synchronized (lock) {
      if (closed.get()) {
        return () -> {};
      }
      try {
        ensureStarted();
      } catch (IOException e) {
        log.warn("cannot watch for {}: falling back to probe backoff only", socket, e);
        return () -> {};
      }
      armLocked(interest);
    }
    return () -> cancel(interest);
  }

  private void cancel(Interest interest) {
    synchronized (lock) {
      interest.cancelled = true;
      detachLocked(interest);
    }
  }

  /** The directory currently watched for {@code socket}, for tests; null if none. */
  Path watchedDirectory(Path socket) {
    Path absolute = socket.toAbsolutePath().normalize();
    synchronized (lock) {
      for (Set<Interest> set : byDir.values()) {
        for (Interest i : set) {
          if (i.socket.equals(absolute) && !i.cancelled) {
            return i.dir;
          }
        }
      }
      return null;
    }
  }

  /**
   * Watches the deepest existing directory on the way to the interest's socket. Returns whether
   * the interest now watches the socket's own directory.
   */
  private boolean armLocked(Interest interest) {
    Path target = interest.socket.getParent();
    // Bounded: each round follows a change of the tree made while the previous one registered.
    for (int round = 0; round < 2 * target.getNameCount() + 4; round++) {
      Path dir = nearestExisting(target);
      while (dir != null) {
        try {
          WatchKey key = keys.get(dir);
          if (key == null || !key.isValid()) {
            key = dir.register(service, ENTRY_CREATE);
            keys.put(dir, key);
          }
          break;
        } catch (NoSuchFileException | NotDirectoryException e) {
          dir = nearestExisting(dir.getParent()); // removed meanwhile: one level up
        } catch (IOException | ClosedWatchServiceException e) {
          log.warn("cannot watch {} for {}: falling back to probe backoff only", dir,
              interest.socket, e);
          dir = null;
        }
      }
      if (dir == null) {
        detachLocked(interest);
        return false;
      }
      if (!dir.equals(interest.dir)) {
        detachLocked(interest);
        interest.dir = dir;
        byDir.computeIfAbsent(dir, d -> new LinkedHashSet<>()).add(interest);
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
    thread = new Thread(this::run, "csi-socket-watcher");
    thread.setDaemon(true);
    thread.start();
  }

  private void run() {
    WatchService ws = service;
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
        List<Interest> interests = set == null ? List.of() : List.copyOf(set);
        for (Interest i : interests) {
          if (i.cancelled) {
            continue;
          }
          if (!valid) {
            log.debug("watched directory {} is gone: re-arming the watch for {}", dir, i.socket);
            detachLocked(i);
            if (armLocked(i) && exists(i.socket)) {
              fire.add(i.callback);
            }
            continue;
          }
          boolean inSocketDir = dir.equals(i.socket.getParent());
          for (WatchEvent<?> event : events) {
            if (event.kind() == OVERFLOW) {
              if (armLocked(i) && exists(i.socket)) {
                fire.add(i.callback);
              }
              break;
            }
            String created = event.context().toString();
            if (inSocketDir) {
              if (created.equals(i.socket.getFileName().toString())) {
                fire.add(i.callback);
                break;
              }
            } else if (created.equals(nextComponent(dir, i.socket))) {
              // A directory on the way appeared: move down (as deep as already exists).
              if (armLocked(i) && exists(i.socket)) {
                fire.add(i.callback);
              }
              break;
            }
          }
        }
      }
      fire.forEach(this::fire);
    }
  }

  /** The name of the path element right below {@code ancestor} on the way to {@code socket}. */
  private static String nextComponent(Path ancestor, Path socket) {
    if (!socket.startsWith(ancestor) || socket.getNameCount() <= ancestor.getNameCount()) {
      return "";
    }
    return socket.getName(ancestor.getNameCount()).toString();
  }

  private static boolean exists(Path socket) {
    return Files.exists(socket, LinkOption.NOFOLLOW_LINKS);
  }

  private void fire(Runnable callback) {
    try {
      callbackExecutor.execute(callback);
    } catch (RuntimeException e) {
      log.debug("socket watch callback rejected (shutting down?)", e);
    }
  }

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
