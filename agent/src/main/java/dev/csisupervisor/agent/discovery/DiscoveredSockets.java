package dev.csisupervisor.agent.discovery;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.agent.discovery.DiscoveryDir.Entry;
import dev.csisupervisor.agent.discovery.DiscoveryDir.Handle;
import dev.csisupervisor.agent.discovery.DiscoveryDir.Listener;
import dev.csisupervisor.agent.discovery.DiscoveryDir.State;
import dev.csisupervisor.agent.discovery.DiscoveryDir.Supervision;
import dev.csisupervisor.client.CsiErrorKind;
import dev.csisupervisor.client.CsiException;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.common.ExponentialBackoff;
import dev.csisupervisor.common.PluginIds;
import dev.csisupervisor.common.SocketPaths;
import java.io.IOException;
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
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The files of one {@link DiscoveryDir} it knows of, by file name, and each one's way from found
 * to supervised: its name checked, its kind asked (again with backoff while it does not answer),
 * supervised, and its supervision stopped when it is removed or replaced.
 *
 * <p>Not thread-safe on its own: guarded by the directory's lock. Methods named {@code ...Locked}
 * are called with that lock held; the classifier's answers and the retries run on the scheduler
 * and take the lock themselves, doing nothing once the directory no longer runs. Logs under the
 * directory's logger name.
 */
final class DiscoveredSockets {
  private static final Logger log = LoggerFactory.getLogger(DiscoveryDir.class);
  private static final String SUFFIX = ".sock";

  private final Path dir;
  private final ScheduledExecutorService scheduler;
  private final SocketClassifier classifier;
  private final Supervision supervision;
  private final Predicate<String> reserved;
  private final Listener listener;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final Random random;
  private final Object lock;
  private final BooleanSupplier running;

  // Guarded by lock.
  private final Map<String, Known> known = new LinkedHashMap<>();

  /**
   * @param dir       the directory, absolute and normalized
   * @param settings  the directory's builder: its classifier, supervision, reserved ids, listener
   *                  and backoff
   * @param lock      the directory's lock, which guards this
   * @param running   whether the directory still runs (read under the lock)
   */
  DiscoveredSockets(Path dir, ScheduledExecutorService scheduler, DiscoveryDir.Builder settings,
      Object lock, BooleanSupplier running) {
    this.dir = dir;
    this.scheduler = scheduler;
    this.classifier = requireNonNull(settings.classifier, "classifier");
    this.supervision = requireNonNull(settings.supervision, "supervision");
    this.reserved = requireNonNull(settings.reserved, "reserved");
    this.listener = requireNonNull(settings.listener, "listener");
    this.initialBackoff = requireNonNull(settings.initialBackoff, "initialBackoff");
    this.maxBackoff = requireNonNull(settings.maxBackoff, "maxBackoff");
    this.random = requireNonNull(settings.random, "random");
    this.lock = lock;
    this.running = running;
  }

  /** The ids of the files that could become plugins (all but the ignored ones). */
  Set<String> candidateIdsLocked() {
    Set<String> ids = new HashSet<>();
    for (Known k : known.values()) {
      if (k.state != State.IGNORED) {
        ids.add(k.id);
      }
    }
    return ids;
  }

  List<Entry> entriesLocked() {
    List<Entry> out = new ArrayList<>();
    for (Known k : known.values()) {
      out.add(new Entry(k.socket, k.id, k.state, k.kind, k.message));
    }
    return out;
  }

  /** After a listing: forgets what is gone (or replaced), considers what is new. */
  void listedLocked(Set<String> present) {
    for (String name : new ArrayList<>(known.keySet())) {
      if (!present.contains(name)) {
        goneLocked(name);
      }
    }
    for (String name : present) {
      appearedLocked(name);
    }
  }

  /** The file {@code name} is gone from the directory. */
  void goneLocked(String name) {
    removedLocked(name, "socket " + dir.resolve(name) + " removed");
  }

  /** The file {@code name} is in the directory: a new socket is checked and classified. */
  void appearedLocked(String name) {
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
    emit(k.id, DiscoveryDir.IGNORED, "ignoring " + k.socket + ": " + why);
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
      if (!running.getAsBoolean() || known.get(k.name) != k || generation != k.generation) {
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
      emit(k.id, DiscoveryDir.DISCOVERED, "supervising " + k.socket + " as a " + kind.dirName()
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
      emit(k.id, DiscoveryDir.NOT_ANSWERING, k.socket + ": " + why + "; retrying with backoff");
    } else {
      log.debug("discovery: {} still not usable: {}", k.socket, why);
    }
    long generation = k.generation;
    k.retry = scheduler.schedule(() -> {
      synchronized (lock) {
        if (running.getAsBoolean() && known.get(k.name) == k && generation == k.generation) {
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
      emit(k.id, DiscoveryDir.REMOVED, reason + ": plugin " + k.id + " deregistered");
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

  /** Forgets every file (the directory closes); {@link #end} them outside the lock. */
  List<Known> takeAllLocked() {
    List<Known> all = new ArrayList<>(known.values());
    known.clear();
    return all;
  }

  /**
   * Ends supervision of files {@link #takeAllLocked taken}: {@link Handle#stop}, or
   * {@link Handle#detach} when {@code keepRegistrations}.
   */
  static void end(List<Known> all, boolean keepRegistrations) {
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
    Throwable t = Futures.unwrap(error);
    if (CsiException.find(t).map(e -> e.kind() == CsiErrorKind.CONNECTION_REFUSED)
        .orElse(false)) {
      return "stale socket: nothing is accepting connections on it";
    }
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getSimpleName() : m;
  }

  /** One file of the directory; guarded by the directory's lock. */
  static final class Known {
    private final String name;
    private final String id;
    private final Path socket;
    private final Object fileKey;
    private final Backoff backoff;
    private State state = State.CLASSIFYING;
    private PluginKind kind;
    private String message = "";
    private String lastReported;
    private long generation;
    private int attempts;
    private ScheduledFuture<?> retry;
    private Handle handle;

    private Known(String name, String id, Path socket, Object fileKey, Backoff backoff) {
      this.name = name;
      this.id = id;
      this.socket = socket;
      this.fileKey = fileKey;
      this.backoff = backoff;
    }
  }
}
