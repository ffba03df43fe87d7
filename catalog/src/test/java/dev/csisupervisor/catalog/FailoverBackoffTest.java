package dev.csisupervisor.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.common.ExponentialBackoff;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The delays of a client failing over among its endpoints, on simulated time: no clock, no sleep. The scenario of
 * EtcdClusterFailoverTest's member removal with the production backoff: four endpoints, one a removed member and one
 * a spare not started (both refuse at once), the two others without a quorum for a while.
 */
@Timeout(10)
class FailoverBackoffTest {
  private static final Duration INITIAL = Duration.ofMillis(200);
  private static final Duration MAX = Duration.ofSeconds(10);
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(1);

  /** A backoff whose delays are 1, 2, 3, ... seconds, to see which of the two policies gave each. */
  private static final class Counting implements Backoff {
    private final long unitMillis;
    private long n;

    Counting(long unitMillis) {
      this.unitMillis = unitMillis;
    }

    @Override
    public Duration next() {
      return Duration.ofMillis(++n * unitMillis);
    }

    @Override
    public void reset() {
      n = 0;
    }
  }

  private static List<Long> next(Backoff b, int times) {
    List<Long> out = new ArrayList<>();
    for (int i = 0; i < times; i++) {
      out.add(b.next().toMillis());
    }
    return out;
  }

  @Test
  void betweenEndpoints_untilEveryEndpointFailed_thenOneStepOfTheRounds() {
    FailoverBackoff b = new FailoverBackoff(new Counting(1), new Counting(1000), 3);
    assertEquals(List.of(1L, 2L, 1000L, 3L, 4L, 2000L, 5L), next(b, 7));
  }

  @Test
  void reset_startsANewRound_andBothPoliciesAgain() {
    FailoverBackoff b = new FailoverBackoff(new Counting(1), new Counting(1000), 3);
    next(b, 4);
    b.reset();
    assertEquals(List.of(1L, 2L, 1000L), next(b, 3));
  }

  @Test
  void oneEndpoint_isThePolicyOfTheRounds() {
    FailoverBackoff b = new FailoverBackoff(new Counting(1), new Counting(1000), 1);
    assertEquals(List.of(1000L, 2000L, 3000L), next(b, 3));
  }

  @Test
  void noEndpoint_isRefused_namingTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new FailoverBackoff(new Counting(1), new Counting(1), 0));
    assertTrue(e.getMessage().contains("endpoints") && e.getMessage().contains("0"), e.getMessage());
  }

  /**
   * Simulates one client from the start of an outage: endpoints 1 and 2 refuse at once (removed, not started),
   * 0 and 3 answer after {@code outage} only, failing each attempt before then after the request timeout. Returns
   * how long after the outage the client's first successful attempt started.
   */
  private static Duration reconnectAfter(Backoff backoff, Duration outage, int firstEndpoint) {
    Set<Integer> dead = Set.of(1, 2);
    long now = 0;
    long back = outage.toMillis();
    int endpoint = firstEndpoint;
    for (int attempt = 0; attempt < 10_000; attempt++) {
      if (!dead.contains(endpoint)) {
        if (now >= back) {
          return Duration.ofMillis(now - back);
        }
        now += REQUEST_TIMEOUT.toMillis();
      }
      now += backoff.next().toMillis(); // the failure: wait, then the next endpoint
      endpoint = (endpoint + 1) % 4;
    }
    throw new AssertionError("never reconnected");
  }

  /** The worst reconnection delay over outages of 30 to 60 s (every phase of the rotation), fixed seeds. */
  private static Duration worstReconnect(boolean failover) {
    Duration worst = Duration.ZERO;
    for (int outageMillis = 30_000; outageMillis <= 60_000; outageMillis += 50) {
      for (int first = 0; first < 4; first++) {
        Random random = new Random(outageMillis * 4L + first);
        Backoff rounds = ExponentialBackoff.doubling(INITIAL, MAX, random);
        Backoff b = failover ? new FailoverBackoff(ExponentialBackoff.doubling(INITIAL, INITIAL, random), rounds, 4)
            : rounds;
        Duration d = reconnectAfter(b, Duration.ofMillis(outageMillis), first);
        if (d.compareTo(worst) > 0) {
          worst = d;
        }
      }
    }
    return worst;
  }

  @Test
  void afterAnOutage_aClientPassesTheDeadEndpointsInOneBackoffStep_notOneEach() {
    Duration before = worstReconnect(false);
    Duration now = worstReconnect(true);
    System.out.println("FAILOVER worst reconnect after the quorum is back: one backoff per failure "
        + before.toMillis() + " ms, per round of endpoints " + now.toMillis() + " ms");
    // Each failure a backoff step: behind two dead endpoints, up to three steps of the grown backoff (~30 s).
    assertTrue(before.compareTo(Duration.ofSeconds(20)) > 0, before.toString());
    // Per round: at most one step of the grown backoff (10 s + 20 % jitter) and the small ones to the next endpoint,
    // plus a request timeout if the last attempt of the outage was on a live endpoint.
    Duration bound = MAX.multipliedBy(12).dividedBy(10).plus(INITIAL.multipliedBy(12).dividedBy(10).multipliedBy(3))
        .plus(REQUEST_TIMEOUT);
    assertTrue(now.compareTo(bound) <= 0, now + " > " + bound);
  }

  @Test
  void theSettingsGiveTheEtcdLoopsAFailoverBackoffOverTheirEndpoints() {
    CatalogPublisher.Builder b = CatalogPublisher.builder()
        .etcd(EtcdOptions.of("http://127.0.0.1:1,http://127.0.0.1:2,http://127.0.0.1:3"))
        .backoff(Duration.ofMillis(100), Duration.ofSeconds(5));
    Backoff backoff = b.newFailoverBackoff();
    List<Long> d = next(backoff, 3);
    assertTrue(d.get(0) >= 80 && d.get(0) <= 120 && d.get(1) >= 80 && d.get(1) <= 120, d.toString());
    assertTrue(d.get(2) >= 80 && d.get(2) <= 120, d.toString()); // the first step of the rounds is the initial one
    List<Long> more = next(backoff, 3);
    assertTrue(more.get(2) >= 160 && more.get(2) <= 240, more.toString()); // the second round's doubled
  }
}
