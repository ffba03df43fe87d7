package dev.csisupervisor.supervisor;

import static java.nio.file.StandardWatchEventKinds.ENTRY_CREATE;
import static java.nio.file.StandardWatchEventKinds.OVERFLOW;

import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@link WatchService} (inotify on Linux) and one thread for every plugin directory of a
 * supervisor, so a plugin whose socket appears is probed at once instead of at its next backoff
 * tick. Callbacks run on the given executor (the supervisor's scheduler), never on the watch
 * thread. Thread-safe.
 */
final class SocketWatcher implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SocketWatcher.class);

  /** A registered interest; cancel it when the hook stops. */
  interface Watch {
    void cancel();
  }

  private record Interest(String fileName, Runnable callback) {}

  private final Executor callbackExecutor;
  private final Map<Path, WatchKey> keys = new ConcurrentHashMap<>();
  private final Map<Path, List<Interest>> interests = new ConcurrentHashMap<>();
  private final Object lock = new Object();
  private final AtomicBoolean closed = new AtomicBoolean();
  private WatchService service;
  private Thread thread;

  SocketWatcher(Executor callbackExecutor) {
    this.callbackExecutor = callbackExecutor;
  }

  /**
   * Calls {@code callback} whenever {@code fileName} is created in {@code dir}. If the directory
   * cannot be watched, logs it and returns a no-op watch: supervision still works by backoff.
   */
  Watch watch(Path dir, String fileName, Runnable callback) {
    Interest interest = new Interest(fileName, callback);
    synchronized (lock) {
      if (closed.get()) {
        return () -> {};
      }
      try {
        ensureStarted();
        keys.computeIfAbsent(dir, d -> {
          try {
            return d.register(service, ENTRY_CREATE);
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        });
      } catch (IOException | java.io.UncheckedIOException e) {
        log.warn("cannot watch {} for {}: falling back to probe backoff only", dir, fileName, e);
        return () -> {};
      }
      interests.computeIfAbsent(dir, d -> new CopyOnWriteArrayList<>()).add(interest);
    }
    return () -> unwatch(dir, interest);
  }

  private void unwatch(Path dir, Interest interest) {
    synchronized (lock) {
      List<Interest> list = interests.get(dir);
      if (list == null) {
        return;
      }
      list.remove(interest);
      if (list.isEmpty()) {
        interests.remove(dir);
        WatchKey key = keys.remove(dir);
        if (key != null) {
          key.cancel();
        }
      }
    }
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
      for (WatchEvent<?> event : key.pollEvents()) {
        List<Interest> list = interests.getOrDefault(dir, List.of());
        if (event.kind() == OVERFLOW) {
          list.forEach(i -> fire(i.callback()));
          continue;
        }
        String created = event.context().toString();
        for (Interest i : list) {
          if (i.fileName().equals(created)) {
            fire(i.callback());
          }
        }
      }
      key.reset();
    }
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
      interests.clear();
    }
  }
}
