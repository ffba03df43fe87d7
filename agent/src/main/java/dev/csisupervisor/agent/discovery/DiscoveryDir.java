package dev.csisupervisor.agent.discovery;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.FileWatcher;
import dev.csisupervisor.common.FileWatcher.DirectoryEvent;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A plugin-registration directory: every unix socket that appears in it is supervised as an
 * external plugin, without config, like the kubelet's plugin directory.
 *
 * <ul>
 *   <li>The plugin's id is the file name without a {@code .sock} suffix; names that are not
 *       valid plugin ids, that a configured plugin or another socket already uses, or whose path
 *       is over the unix socket limit are reported and ignored. Dot-files and anything that is
 *       not a socket are skipped.</li>
 *   <li>Its kind comes from its answers ({@link SocketClassifier}). A socket that cannot be
 *       classified (a stale socket with nothing accepting, a server that is not CSI) is reported
 *       and tried again with backoff; it is not supervised until it answers.</li>
 *   <li>Once classified, {@link Supervision#supervise} starts supervising it; when the socket
 *       disappears (or is replaced by another file), {@link Handle#stop} ends that, which
 *       deregisters it.</li>
 * </ul>
 *
 * <p>Sockets present at start are picked up by listing the directory; later ones through a
 * {@link FileWatcher} (inotify; the agent's one, shared with its supervisor), plus a periodic
 * re-listing that catches anything a watch event missed.
 *
 * <p>Thread-safe. Lifecycle {@code NEW → RUNNING → CLOSED}. All state changes and every
 * callback ({@link Supervision}, {@link Listener}) run on the scheduler, in order, under one
 * lock; the file watcher's thread hands watch events to the scheduler. This class watches and
 * lists the directory; each socket's way from found to supervised is {@link DiscoveredSockets}',
 * guarded by the same lock.
 */
public final class DiscoveryDir implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(DiscoveryDir.class);

  /** What the agent does with a classified socket. */
  public interface Supervision {
    /**
     * Starts supervising a discovered plugin.
     *
     * @throws IllegalArgumentException if it cannot be supervised (it is then ignored)
     */
    Handle supervise(String id, PluginKind kind, Path socket);
  }

  /** One supervised discovered plugin. */
  public interface Handle {
    /** Ends supervision and deregisters the plugin. */
    void stop(String reason);

    /** Ends supervision, keeping the registration (the agent shuts down leaving it). */
    void detach(String reason);
  }

  /** Hears what happens in the directory (for task events); runs on the scheduler. */
  @FunctionalInterface
  public interface Listener {
    void onEvent(String id, String type, String message);
  }

  /** Event types a {@link Listener} gets. */
  public static final String DISCOVERED = "Discovered";
  public static final String IGNORED = "Discovery ignored";
  public static final String NOT_ANSWERING = "Discovered socket not answering";
  public static final String REMOVED = "Discovered socket removed";

  /** Where one file in the directory is. */
  public enum State {
    /** Asking the plugin what it is. */
    CLASSIFYING,
    /** It did not answer (stale, not CSI): asking again after a backoff. */
    RETRYING,
    /** Supervised as an external plugin. */
    SUPERVISED,
    /** Reported and left alone (bad name, id in use, path too long, cannot be supervised). */
    IGNORED
  }

  /**
   * One socket of the directory, as {@link #entries()} shows it.
   *
   * @param socket  the socket's path
   * @param id      the plugin id taken from its name
   * @param state   where it is
   * @param kind    its kind once classified, or null
   * @param message why it is retried or ignored; empty when supervised
   */
  public record Entry(Path socket, String id, State state, PluginKind kind, String message) {}

  private enum Lifecycle { NEW, RUNNING, CLOSED }

  private final Path dir;
  private final ScheduledExecutorService scheduler;
  private final Duration rescanInterval;
  private final FileWatcher watcher;
  private final boolean ownsWatcher;

  private final Object lock = new Object();
  private final AtomicReference<Lifecycle> lifecycle = new AtomicReference<>(Lifecycle.NEW);
  // Guarded by lock: the sockets' state, the watch and the re-listing.
  private final DiscoveredSockets sockets;
  private FileWatcher.Watch watch;
  private ScheduledFuture<?> rescan;

  private DiscoveryDir(Builder b) {
    this.dir = requireNonNull(b.dir, "dir").toAbsolutePath().normalize();
    this.scheduler = requireNonNull(b.scheduler, "scheduler");
    this.sockets = new DiscoveredSockets(dir, scheduler, b, lock,
        () -> lifecycle.get() == Lifecycle.RUNNING);
    this.rescanInterval = requireNonNull(b.rescanInterval, "rescanInterval");
    this.ownsWatcher = b.watcher == null;
    this.watcher = ownsWatcher ? new FileWatcher("csi-agent-discovery") : b.watcher;
  }

  public static Builder builder(Path dir) {
    return new Builder(dir);
  }

  public Path dir() {
    return dir;
  }

  /**
   * Starts watching: the directory is created if missing, watched, then listed (so nothing
   * created in between is missed); classification of what is there starts at once.
   *
   * @throws IOException if the directory cannot be created, listed or watched
   */
  public void start() throws IOException {
    if (!lifecycle.compareAndSet(Lifecycle.NEW, Lifecycle.RUNNING)) {
      throw new IllegalStateException("discovery of " + dir + " already started or closed");
    }
    Files.createDirectories(dir);
    FileWatcher.Watch w = watcher.watchDirectory(dir, scheduler, this::onWatchEvents);
    synchronized (lock) {
      watch = w;
      rescanLocked();
      long n = rescanInterval.toNanos();
      rescan = scheduler.scheduleWithFixedDelay(this::rescan, n, n, TimeUnit.NANOSECONDS);
    }
    log.info("discovering plugin sockets in {}", dir);
  }

  /**
   * The plugin ids of the sockets in the directory now that could become plugins (valid,
   * unreserved names): what the agent counts as live when it reconciles restored registrations.
   */
  public Set<String> candidateIds() {
    synchronized (lock) {
      return sockets.candidateIdsLocked();
    }
  }

  /** Every socket of the directory the agent knows of, by file name. */
  public List<Entry> entries() {
    synchronized (lock) {
      return sockets.entriesLocked();
    }
  }

  // ---- watching ----------------------------------------------------------------------------

  /** Runs on the scheduler. */
  private void onWatchEvents(List<DirectoryEvent> events) {
    synchronized (lock) {
      if (lifecycle.get() != Lifecycle.RUNNING) {
        return;
      }
      for (DirectoryEvent e : events) {
        String name = e.name();
        switch (e.kind()) {
          case OVERFLOW -> rescanLocked();
          case WATCH_LOST -> log.error("discovery directory {} can no longer be watched"
              + " (removed?): the sockets in it are now found by re-listing only, every {} ms",
              dir, rescanInterval.toMillis());
          case DELETED -> {
            if (!name.startsWith(".")) {
              sockets.goneLocked(name);
            }
          }
          case CREATED -> {
            if (!name.startsWith(".")) {
              sockets.appearedLocked(name);
            }
          }
        }
      }
    }
  }

  private void rescan() {
    synchronized (lock) {
      if (lifecycle.get() == Lifecycle.RUNNING) {
        rescanLocked();
      }
    }
  }

  /** Lists the directory: forgets what is gone or replaced, considers what is new. */
  private void rescanLocked() {
    Set<String> present = new HashSet<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
      for (Path p : ds) {
        String name = p.getFileName().toString();
        if (!name.startsWith(".")) {
          present.add(name);
        }
      }
    } catch (IOException e) {
      log.warn("cannot list discovery directory {}: {}", dir, e.toString());
      return;
    }
    sockets.listedLocked(present);
  }

  // ---- close -------------------------------------------------------------------------------

  /**
   * Stops watching and ends supervision of every discovered plugin: {@link Handle#stop}
   * (deregistering them), or {@link Handle#detach} when {@code keepRegistrations}. Idempotent.
   */
  public void close(boolean keepRegistrations) {
    Lifecycle was = lifecycle.getAndSet(Lifecycle.CLOSED);
    if (was == Lifecycle.CLOSED) {
      return;
    }
    List<DiscoveredSockets.Known> all;
    FileWatcher.Watch w;
    synchronized (lock) {
      w = watch;
      if (rescan != null) {
        rescan.cancel(false);
      }
      all = sockets.takeAllLocked();
    }
    if (w != null) {
      w.cancel();
    }
    if (ownsWatcher) {
      watcher.close();
    }
    DiscoveredSockets.end(all, keepRegistrations);
  }

  /** {@link #close(boolean) close(false)}: deregisters every discovered plugin. */
  @Override
  public void close() {
    close(false);
  }

  /** Builder; the scheduler, the classifier and the supervision are required. */
  public static final class Builder {
    // Read by DiscoveryDir and DiscoveredSockets.
    final Path dir;
    ScheduledExecutorService scheduler;
    SocketClassifier classifier;
    Supervision supervision;
    Predicate<String> reserved = id -> false;
    Listener listener = (id, type, message) -> { };
    Duration initialBackoff = Duration.ofMillis(500);
    Duration maxBackoff = Duration.ofSeconds(30);
    Duration rescanInterval = Duration.ofSeconds(30);
    Random random = new Random();
    FileWatcher watcher;

    private Builder(Path dir) {
      this.dir = dir;
    }

    public Builder scheduler(ScheduledExecutorService v) { this.scheduler = v; return this; }
    public Builder classifier(SocketClassifier v) { this.classifier = v; return this; }
    public Builder supervision(Supervision v) { this.supervision = v; return this; }
    /** Ids that discovered sockets may not take (the configured plugins'). */
    public Builder reserved(Predicate<String> v) { this.reserved = v; return this; }
    public Builder listener(Listener v) { this.listener = v; return this; }
    /** Backoff of a socket that does not answer: initial delay, doubling up to max. */
    public Builder backoff(Duration initial, Duration max) {
      this.initialBackoff = initial;
      this.maxBackoff = max;
      return this;
    }
    /** How often the directory is re-listed, to catch anything a watch event missed. */
    public Builder rescanInterval(Duration v) { this.rescanInterval = v; return this; }
    public Builder random(Random v) { this.random = v; return this; }
    /**
     * The watcher to share (the agent's, which its supervisor uses too); the caller closes it.
     * Default: one of the directory's own, closed with it.
     */
    public Builder watcher(FileWatcher v) { this.watcher = v; return this; }

    public DiscoveryDir build() {
      return new DiscoveryDir(this);
    }
  }
}
