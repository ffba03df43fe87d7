package dev.csisupervisor.supervisor;

import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.common.ExponentialBackoff;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When a hook probes its plugin: at once when asked, a few quick retries after a new process or socket
 * appeared, on the backoff while the plugin starts or recovers, on the steady interval once it is healthy;
 * never two probes in flight (one asked for meanwhile goes out when the current one is answered). The hook
 * decides what an answer means ({@link Host#probed}); this class only decides when the next question goes.
 *
 * <p>Guarded by the hook's lock: every method is called with it held, and a scheduled probe takes it.
 */
final class ProbeLoop {
  private static final Logger log = LoggerFactory.getLogger(ProbeLoop.class);

  /**
   * A server creates its socket file at bind() and accepts only after listen(): a probe fired by
   * the file's appearance can be refused by a plugin that is a moment from ready. Retry it this
   * soon, this many times, before falling back to the backoff (which may be seconds by then).
   */
  static final Duration SOCKET_APPEARED_RETRY = Duration.ofMillis(5);
  static final int SOCKET_APPEARED_RETRIES = 10;

  /** The hook, as the loop sees it. Called with the hook's lock held, except {@link #probed}. */
  interface Host {
    /** Whether a probe must wait: a fingerprint or a registration commit is under way. */
    boolean busy();

    /** Whether a scheduled probe still goes out when its time comes (the phase may have moved on). */
    boolean probing();

    PluginConnection connection();

    /** A probe of {@code conn} was answered; on the scheduler, without the lock (the host takes it). */
    void probed(PluginConnection conn, Boolean ready, Throwable error);
  }

  private final Object lock;
  private final CsiPluginConfig config;
  private final ScheduledExecutorService scheduler;
  private final LongSupplier nanoTicker;
  private final ProbeObserver observer;
  private final Backoff backoff;
  private final Host host;

  private ScheduledFuture<?> next;
  private boolean inFlight;
  private boolean requested;
  private int quickRetries;
  /** A (re)started process: probe with backoff, not at the steady interval, until healthy. */
  private boolean fastPath;

  ProbeLoop(Object lock, CsiPluginConfig config, SupervisorServices services, Host host) {
    this.lock = lock;
    this.config = config;
    this.scheduler = services.scheduler();
    this.nanoTicker = services.nanoTicker();
    this.observer = services.probeObserver();
    this.backoff = ExponentialBackoff.doubling(config.initialBackoff(), config.maxBackoff(), services.random());
    this.host = host;
  }

  /** Probes now, or as soon as the probe in flight (or the host's fingerprint or commit) is done. */
  void now() {
    if (inFlight || host.busy()) {
      requested = true;
      return;
    }
    cancel();
    inFlight = true;
    requested = false;
    PluginConnection conn = host.connection();
    long sent = nanoTicker.getAsLong();
    conn.probe().whenCompleteAsync((ready, error) -> {
      observe(Duration.ofNanos(nanoTicker.getAsLong() - sent), ready, error);
      host.probed(conn, ready, error);
    }, scheduler);
  }

  /** The probe in flight was answered (the host calls this first, under its lock). */
  void answered() {
    inFlight = false;
  }

  /** After a failed probe: a quick retry if any is left, else the backoff (or, when healthy, the interval). */
  void retry(boolean starting) {
    if (requested) {
      now();
    } else if (quickRetries > 0) {
      quickRetries--;
      schedule(SOCKET_APPEARED_RETRY);
    } else if (starting) {
      schedule(backoff.next());
    } else if (fastPath) {
      Duration d = backoff.next();
      schedule(d.compareTo(config.probeInterval()) < 0 ? d : config.probeInterval());
    } else {
      schedule(config.probeInterval());
    }
  }

  /** A healthy plugin: the probe asked for meanwhile, else the next one at the steady interval. */
  void steady() {
    if (requested) {
      now();
    } else {
      schedule(config.probeInterval());
    }
  }

  /** A start that failed after the plugin was ready (fingerprint, registration): again after the backoff. */
  void afterBackoff() {
    requested = false;
    schedule(backoff.next());
  }

  /** A new process behind the socket: the first steps of the backoff again, after a few quick retries. */
  void processReplaced(boolean registered) {
    restartBackoff(registered);
    quickRetries = SOCKET_APPEARED_RETRIES;
  }

  /**
   * The backoff from its first step: a start, a lost connection, a restart asked for. {@code registered}: the
   * plugin was registered, so it is probed on the backoff rather than the steady interval until healthy.
   */
  void restartBackoff(boolean registered) {
    backoff.reset();
    if (registered) {
      fastPath = true;
    }
  }

  /** Healthy (again): the steady interval from now on, and the backoff from its first step next time. */
  void healthy() {
    fastPath = false;
    backoff.reset();
  }

  /** No probe is scheduled after this (one in flight is answered to the host, which ignores it). */
  void cancel() {
    if (next != null) {
      next.cancel(false);
      next = null;
    }
  }

  private void schedule(Duration delay) {
    cancel();
    next = scheduler.schedule(() -> {
      synchronized (lock) {
        if (host.probing()) {
          now();
        }
      }
    }, delay.toNanos(), TimeUnit.NANOSECONDS);
  }

  private void observe(Duration latency, Boolean ready, Throwable error) {
    try {
      observer.probed(config.pluginId(), latency, Boolean.TRUE.equals(ready),
          error == null ? "" : ProbeFailures.describe(error));
    } catch (RuntimeException e) {
      log.warn("plugin={}: probe observer threw", config.pluginId(), e);
    }
  }
}
