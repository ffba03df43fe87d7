package dev.csisupervisor.agent.discovery;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.CsiErrorKind;
import dev.csisupervisor.client.CsiException;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.PluginIds;
import dev.csisupervisor.common.SocketPaths;
import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.common.ExponentialBackoff;
import dev.csisupervisor.common.FileWatcher;
import dev.csisupervisor.common.FileWatcher.DirectoryEvent;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
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
 * lock; the file watcher's thread hands watch events to the scheduler.
 */
public final class DiscoveryDir implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(DiscoveryDir.class);
  private static final String SUFFIX = ".sock";

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
  private final SocketClassifier classifier;
  private final Supervision supervision;
  private final Predicate<String> reserved;
  private final Listener listener;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final Duration rescanInterval;
  private final Random random;
  private final FileWatcher watcher;
  private final boolean ownsWatcher;

  private final Object lock = new Object();
  private final AtomicReference<Lifecycle> lifecycle = new AtomicReference<>(Lifecycle.NEW);
  // Guarded by lock.
  private final Map<String, Known> known = new LinkedHashMap<>();
  private FileWatcher.Watch watch;
  private ScheduledFuture<?> rescan;

  private DiscoveryDir(Builder b) {
    this.dir = requireNonNull(b.dir, "dir").toAbsolutePath().normalize();
    this.scheduler = requireNonNull(b.scheduler, "scheduler");
    this.classifier = requireNonNull(b.classifier, "classifier");
    this.supervision = requireNonNull(b.supervision, "supervision");
    this.reserved = requireNonNull(b.reserved, "reserved");
    this.listener = requireNonNull(b.listener, "listener");
    this.initialBackoff = requireNonNull(b.initialBackoff, "initialBackoff");
    this.maxBackoff = requireNonNull(b.maxBackoff, "maxBackoff");
    this.rescanInterval = requireNonNull(b.rescanInterval, "rescanInterval");
    this.random = requireNonNull(b.random, "random");
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
      Set<String> ids = new HashSet<>();
      for (Known k : known.values()) {
        if (k.state != State.IGNORED) {
          ids.add(k.id);
        }
      }
      return ids;
    }
  }

  /** Every socket of the directory the agent knows of, by file name. */
  public List<Entry> entries() {
    synchronized (lock) {
      List<Entry> out = new ArrayList<>();
      for (Known k : known.values()) {
        out.add(new Entry(k.socket, k.id, k.state, k.kind, k.message));
      }
      return out;
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
              removedLocked(name, "socket " + dir.resolve(name) + " removed");
            }
          }
          case CREATED -> {
            if (!name.startsWith(".")) {
              appearedLocked(name);
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
    for (String name : new ArrayList<>(known.keySet())) {
      if (!present.contains(name)) {
        removedLocked(name, "socket " + dir.resolve(name) + " removed");
      }
    }
    for (String name : present) {
      appearedLocked(name);
    }
  }

  // ---- one file ----------------------------------------------------------------------------

  private void appearedLocked(String name) {
    Path socket = dir.resolve(name);
    Object fileKey = socketKey(socket);
    Known k = known.get(name);
    if (k != null) {
      if (fileKey != null && Objects.equals(fileKey, k.fileKey)) {
        return; // the same socket, already handled
      }
      removedLocked(name, "socket " + socket + " replaced");
    }
    if (fileKey == null) {
      log.debug("discovery: {} is not a socket; skipped", socket);
      return;
    }
    String id = name.endsWith(SUFFIX) && name.length() > SUFFIX.length()
        ? name.substring(0, name.length() - SUFFIX.length()) : name;
    Known nk = new Known(name, id, socket, fileKey,
        ExponentialBackoff.doubling(initialBackoff, maxBackoff, random));
    known.put(name, nk);
    String problem = problem(nk);
    if (problem != null) {
      ignoreLocked(nk, problem);
      return;
    }
    log.info("discovery: found socket {} (plugin id {}); classifying it", socket, id);
    classifyLocked(nk);
  }

  private String problem(Known k) {
    Optional<String> badId = PluginIds.problem(k.id);
    if (badId.isPresent()) {
      return "plugin id " + badId.get() + " (from the file name " + k.name + ")";
    }
    if (reserved.test(k.id)) {
      return "plugin id \"" + k.id + "\" is already used by a plugin in the config";
    }
    for (Known other : known.values()) {
      if (other != k && other.id.equals(k.id) && other.state != State.IGNORED) {
        return "plugin id \"" + k.id + "\" is already used by the socket " + other.socket;
      }
    }
    if (!SocketPaths.fits(k.socket)) {
      return SocketPaths.tooLong("its path", k.socket);
    }
    return null;
  }

  private void ignoreLocked(Known k, String why) {
    k.state = State.IGNORED;
    k.message = why;
    log.warn("discovery: ignoring {}: {}", k.socket, why);
    emit(k.id, IGNORED, "ignoring " + k.socket + ": " + why);
  }

  private void classifyLocked(Known k) {
    k.state = k.attempts == 0 ? State.CLASSIFYING : State.RETRYING;
    long generation = ++k.generation;
    k.attempts++;
    CompletableFuture<PluginKind> f;
    try {
      f = classifier.classify(k.socket);
    } catch (RuntimeException e) {
      f = CompletableFuture.failedFuture(e);
    }
    f.whenCompleteAsync((kind, error) -> classified(k, generation, kind, error), scheduler);
  }

  private void classified(Known k, long generation, PluginKind kind, Throwable error) {
    synchronized (lock) {
      if (lifecycle.get() != Lifecycle.RUNNING || known.get(k.name) != k
          || generation != k.generation) {
        return; // removed, replaced or closed meanwhile
      }
      if (error != null) {
        notAnswering(k, error);
        return;
      }
      Handle h;
      try {
        h = supervision.supervise(k.id, kind, k.socket);
      } catch (RuntimeException e) {
        ignoreLocked(k, "cannot be supervised: " + e.getMessage());
        return;
      }
      k.handle = h;
      k.kind = kind;
      k.state = State.SUPERVISED;
      k.message = "";
      log.info("discovery: supervising {} as {} plugin {}", k.socket, kind, k.id);
      emit(k.id, DISCOVERED, "supervising " + k.socket + " as a " + kind.dirName()
          + " plugin");
    }
  }

  private void notAnswering(Known k, Throwable error) {
    String why = describe(error);
    Duration delay = k.backoff.next();
    k.state = State.RETRYING;
    k.message = why + "; next try in " + delay.toMillis() + " ms";
    if (!why.equals(k.lastReported)) {
      // Reported when it starts failing, or fails differently; retries are not repeated.
      k.lastReported = why;
      log.warn("discovery: {} is not usable yet: {}; retrying with backoff", k.socket, why);
      emit(k.id, NOT_ANSWERING, k.socket + ": " + why + "; retrying with backoff");
    } else {
      log.debug("discovery: {} still not usable: {}", k.socket, why);
    }
    long generation = k.generation;
    k.retry = scheduler.schedule(() -> {
      synchronized (lock) {
        if (lifecycle.get() == Lifecycle.RUNNING && known.get(k.name) == k
            && generation == k.generation) {
          classifyLocked(k);
        }
      }
    }, delay.toNanos(), TimeUnit.NANOSECONDS);
  }

  private void removedLocked(String name, String reason) {
    Known k = known.remove(name);
    if (k == null) {
      return;
    }
    k.generation++;
    if (k.retry != null) {
      k.retry.cancel(false);
    }
    if (k.handle != null) {
      try {
        k.handle.stop(reason);
      } catch (RuntimeException e) {
        log.error("discovery: stopping supervision of {} failed", k.socket, e);
      }
      log.info("discovery: {}: plugin {} deregistered", reason, k.id);
      emit(k.id, REMOVED, reason + ": plugin " + k.id + " deregistered");
    } else if (k.state != State.IGNORED) {
      log.info("discovery: {} before it could be classified", reason);
    }
    // A socket that was ignored because this one held its id may now take it.
    for (Known other : new ArrayList<>(known.values())) {
      if (other.state == State.IGNORED && other.id.equals(k.id) && k.state != State.IGNORED) {
        known.remove(other.name);
        appearedLocked(other.name);
      }
    }
  }

  // ---- helpers -----------------------------------------------------------------------------

  /** The file's identity if it is a unix socket (not following links), else null. */
  private static Object socketKey(Path p) {
    try {
      Object mode = Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
      if (mode instanceof Integer m && (m & 0170000) == 0140000) {
        // Device and inode: a chmod of the socket is the same socket, a new bind is not.
        Object dev = Files.getAttribute(p, "unix:dev", LinkOption.NOFOLLOW_LINKS);
        Object ino = Files.getAttribute(p, "unix:ino", LinkOption.NOFOLLOW_LINKS);
        return List.of(dev, ino);
      }
      return null;
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      return null;
    }
  }

  private void emit(String id, String type, String message) {
    try {
      listener.onEvent(id, type, message);
    } catch (RuntimeException e) {
      log.error("discovery listener threw on {} {}", id, type, e);
    }
  }

  private static String describe(Throwable error) {
    Throwable t = error;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    if (CsiException.find(t).map(e -> e.kind() == CsiErrorKind.CONNECTION_REFUSED)
        .orElse(false)) {
      return "stale socket: nothing is accepting connections on it";
    }
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getSimpleName() : m;
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
    List<Known> all;
    FileWatcher.Watch w;
    synchronized (lock) {
      w = watch;
      if (rescan != null) {
        rescan.cancel(false);
      }
      all = new ArrayList<>(known.values());
      known.clear();
    }
    if (w != null) {
      w.cancel();
    }
    if (ownsWatcher) {
      watcher.close();
    }
    for (Known k : all) {
      k.generation++;
      if (k.retry != null) {
        k.retry.cancel(false);
      }
      if (k.handle != null) {
        try {
          if (keepRegistrations) {
            k.handle.detach("agent shutting down with leave_running");
          } else {
            k.handle.stop("agent shutting down");
          }
        } catch (RuntimeException e) {
          log.error("discovery: ending supervision of {} failed", k.socket, e);
        }
      }
    }
  }

  /** {@link #close(boolean) close(false)}: deregisters every discovered plugin. */
  @Override
  public void close() {
    close(false);
  }

  /** One file of the directory; guarded by the directory's lock. */
  private static final class Known {
    final String name;
    final String id;
    final Path socket;
    final Object fileKey;
    final Backoff backoff;
    State state = State.CLASSIFYING;
    PluginKind kind;
    String message = "";
    String lastReported;
    long generation;
    int attempts;
    ScheduledFuture<?> retry;
    Handle handle;

    Known(String name, String id, Path socket, Object fileKey, Backoff backoff) {
      this.name = name;
      this.id = id;
      this.socket = socket;
      this.fileKey = fileKey;
      this.backoff = backoff;
    }
  }

  /** Builder; the scheduler, the classifier and the supervision are required. */
  public static final class Builder {
    private final Path dir;
    private ScheduledExecutorService scheduler;
    private SocketClassifier classifier;
    private Supervision supervision;
    private Predicate<String> reserved = id -> false;
    private Listener listener = (id, type, message) -> { };
    private Duration initialBackoff = Duration.ofMillis(500);
    private Duration maxBackoff = Duration.ofSeconds(30);
    private Duration rescanInterval = Duration.ofSeconds(30);
    private Random random = new Random();
    private FileWatcher watcher;

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
