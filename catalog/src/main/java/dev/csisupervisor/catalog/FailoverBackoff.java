package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Backoff;
import java.time.Duration;
import java.util.Objects;

/**
 * The retry delays of a client that moves to the next of its {@code endpoints} after every failure
 * ({@link EtcdClient#failover()}): the step to the next endpoint waits only {@code betweenEndpoints} (the smallest
 * delay), and {@code betweenRounds} advances once per round, when every endpoint has failed in turn since the last
 * success. An endpoint that cannot answer (a removed member, a spare not started yet, a dead one) then costs the
 * smallest delay, not a step of a backoff grown during an outage: with the defaults (200 ms doubling to 10 s) and two
 * such endpoints among four, a client whose backoff grew while etcd had no quorum took up to ~31 s to reach a live
 * member once the quorum was back (a step of up to 12 s before each dead endpoint and after it), now up to ~11 s
 * (FailoverBackoffTest simulates it). With one endpoint it is {@code betweenRounds}. Not thread-safe; one per retry
 * loop.
 */
final class FailoverBackoff implements Backoff {
  private final Backoff betweenEndpoints;
  private final Backoff betweenRounds;
  private final int endpoints;
  /** Failures since the last {@link #reset}. */
  private long failures;

  FailoverBackoff(Backoff betweenEndpoints, Backoff betweenRounds, int endpoints) {
    this.betweenEndpoints = Objects.requireNonNull(betweenEndpoints, "betweenEndpoints");
    this.betweenRounds = Objects.requireNonNull(betweenRounds, "betweenRounds");
    if (endpoints < 1) {
      throw new IllegalArgumentException("endpoints must be at least 1, got " + endpoints);
    }
    this.endpoints = endpoints;
  }

  @Override
  public Duration next() {
    failures++;
    return failures % endpoints == 0 ? betweenRounds.next() : betweenEndpoints.next();
  }

  @Override
  public void reset() {
    failures = 0;
    betweenEndpoints.reset();
    betweenRounds.reset();
  }
}
