package dev.csisupervisor.agent.metrics;

import static java.util.Objects.requireNonNull;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Since when each volume with work pending has been pending ({@code "<plugin>/<volume>"}), as this agent saw it: from
 * the volume manager's {@code PENDING} or {@code LOST} event, or else from the first time it was found pending. The
 * volume records keep no such time, so after an agent restart a volume still pending counts from the restart. Bounded
 * by the volumes pending: each {@link #refresh} forgets the others. Thread-safe.
 */
public final class PendingSince {
  private final Clock clock;
  private final Map<String, Instant> since = new HashMap<>();

  public PendingSince(Clock clock) {
    this.clock = requireNonNull(clock, "clock");
  }

  /** The volume manager said the volume waits (an event's time): kept if it is pending at the next refresh. */
  public synchronized void saw(String volume, Instant when) {
    since.merge(requireNonNull(volume, "volume"), requireNonNull(when, "when"), (a, b) -> a.isBefore(b) ? a : b);
  }

  /** The volumes pending now, each with since when; every other volume is forgotten. */
  public synchronized SortedMap<String, Instant> refresh(Collection<String> pending) {
    Instant now = clock.instant();
    since.keySet().retainAll(pending);
    SortedMap<String, Instant> out = new TreeMap<>();
    for (String v : pending) {
      out.put(v, since.computeIfAbsent(v, k -> now));
    }
    return out;
  }

  /** How long the oldest of the volumes pending now has been pending; zero if none is. */
  public Duration oldest(Collection<String> pending) {
    Instant now = clock.instant();
    return refresh(pending).values().stream().min(Instant::compareTo).map(t -> Duration.between(t, now))
        .filter(d -> !d.isNegative()).orElse(Duration.ZERO);
  }
}
