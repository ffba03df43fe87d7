package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.common.ExponentialBackoff;
import java.time.Duration;
import java.util.Objects;
import java.util.Random;

/**
 * What both catalog builders need to talk to etcd: where it is, the key prefix, and the retry backoff.
 * Not thread-safe (a builder's part).
 *
 * @param <B> the builder, so the setters chain
 */
abstract class EtcdClientSettings<B extends EtcdClientSettings<B>> {
  EtcdOptions etcd;
  CatalogKeys keys = CatalogKeys.of(CatalogKeys.DEFAULT_PREFIX);
  Duration initialBackoff = Duration.ofMillis(200);
  Duration maxBackoff = Duration.ofSeconds(10);

  EtcdClientSettings() {}

  abstract B self();

  /** Required: how to reach etcd. */
  public B etcd(EtcdOptions etcd) {
    this.etcd = Objects.requireNonNull(etcd, "etcd");
    return self();
  }

  /** The key prefix (default {@value CatalogKeys#DEFAULT_PREFIX}). */
  public B prefix(String prefix) {
    this.keys = CatalogKeys.of(prefix);
    return self();
  }

  /** Retry backoff after an etcd failure: from {@code initial} doubling to {@code max} (default 200 ms .. 10 s). */
  public B backoff(Duration initial, Duration max) {
    Bounds.positive(initial, "initialBackoff");
    Bounds.notBelow(max, "maxBackoff", initial, "initialBackoff");
    this.initialBackoff = initial;
    this.maxBackoff = max;
    return self();
  }

  /** A new client for these options. */
  EtcdClient newClient() {
    return new EtcdClient(etcd);
  }

  /** A new retry backoff with these bounds (the project's rule: doubling, ±20 %). */
  Backoff newBackoff() {
    return ExponentialBackoff.doubling(initialBackoff, maxBackoff, new Random());
  }

  /**
   * A new retry backoff for a loop that fails over to the next endpoint after each etcd failure: the initial delay
   * to the next endpoint, and these bounds per round of every endpoint ({@link FailoverBackoff}).
   */
  Backoff newFailoverBackoff() {
    Random random = new Random();
    return new FailoverBackoff(ExponentialBackoff.doubling(initialBackoff, initialBackoff, random),
        ExponentialBackoff.doubling(initialBackoff, maxBackoff, random), etcd.endpoints().size());
  }
}
