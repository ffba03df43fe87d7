package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static dev.csisupervisor.mockplugin.Csi.statusOf;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.util.concurrent.ListenableFuture;
import dev.csisupervisor.csi.v1.GetPluginInfoRequest;
import dev.csisupervisor.csi.v1.ProbeRequest;
import dev.csisupervisor.csi.v1.ProbeResponse;
import dev.csisupervisor.testing.FakeScheduler;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class MockCsiPluginProbeTest extends PluginOnSocketTest {

  private final FakeTicker ticker = new FakeTicker();
  /** Where the latency waits, in virtual time. */
  private final FakeScheduler waits = new FakeScheduler();

  @Override
  MockCsiPlugin.Builder builder() {
    return super.builder().ticker(ticker).waits(waits);
  }

  @Test
  void probe_byDefault_isExplicitlyReady() throws Exception {
    start(b -> { });
    ProbeResponse response = csi.identity().probe(ProbeRequest.getDefaultInstance());
    assertTrue(response.hasReady(), "ready must be sent explicitly");
    assertTrue(response.getReady().getValue());
  }

  @Test
  void readyAfter_reportsNotReadyUntilTickerPassesTheDelay() throws Exception {
    start(b -> b.readyAfter(Duration.ofSeconds(5)));
    assertFalse(csi.ready());
    ticker.advance(Duration.ofMillis(4999));
    assertFalse(csi.ready());
    ticker.advance(Duration.ofMillis(1));
    assertTrue(csi.ready());
    ticker.advance(Duration.ofDays(1));
    assertTrue(csi.ready());
  }

  @Test
  void readyAfter_atRuntime_countsFromTheCall() throws Exception {
    start(b -> { });
    ticker.advance(Duration.ofMinutes(1));
    plugin.readyAfter(Duration.ofSeconds(2));
    assertFalse(csi.ready());
    ticker.advance(Duration.ofSeconds(2));
    assertTrue(csi.ready());
  }

  @Test
  void neverReady_staysNotReadyHoweverMuchTimePasses() throws Exception {
    start(b -> b.neverReady().readyAfter(Duration.ofMillis(1)));
    assertFalse(csi.ready());
    ticker.advance(Duration.ofDays(365));
    assertFalse(csi.ready());
    plugin.setReady(true);
    assertTrue(csi.ready());
  }

  @Test
  void setReady_togglesOnTheNextCall() throws Exception {
    start(b -> { });
    plugin.setReady(false);
    assertFalse(csi.ready());
    plugin.setReady(true);
    assertTrue(csi.ready());
    plugin.neverReady();
    assertFalse(csi.ready());
  }

  @Test
  void hangProbes_probeNeverAnswers_clientHitsItsDeadline() throws Exception {
    start(b -> { });
    plugin.hangProbes(true);
    Status.Code code = codeOf(() -> csi.identity().withDeadlineAfter(200, TimeUnit.MILLISECONDS)
        .probe(ProbeRequest.getDefaultInstance()));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, code, "only the client's deadline ends it");
    // The cancelled call is forgotten, so hung calls cannot pile up.
    await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungProbeCount() == 0);
    // Other RPCs are not affected by a hanging Probe.
    assertEquals("mock.csi.dev", csi.identity().getPluginInfo(
        GetPluginInfoRequest.getDefaultInstance()).getName());
    assertEquals(1, plugin.probeCount());
  }

  @Test
  void hangProbes_switchedOff_answersTheWaitingProbes() throws Exception {
    start(b -> { });
    plugin.hangProbes(true);
    plugin.setReady(false);
    ListenableFuture<ProbeResponse> waiting = csi.identityFuture().probe(ProbeRequest.getDefaultInstance());
    await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungProbeCount() == 1);
    assertFalse(waiting.isDone());
    plugin.hangProbes(false);
    ProbeResponse response = waiting.get(20, TimeUnit.SECONDS);
    assertTrue(response.hasReady());
    assertFalse(response.getReady().getValue());
    assertFalse(csi.ready(), "no longer hangs: answers at once");
    assertEquals(2, plugin.probeCount());
  }

  @Test
  void stop_answersHungProbesWithUnavailable_withoutWaitingForThem() throws Exception {
    start(b -> { });
    plugin.hangProbes(true);
    ListenableFuture<ProbeResponse> waiting = csi.identityFuture().probe(ProbeRequest.getDefaultInstance());
    await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungProbeCount() == 1);
    plugin.stop();
    ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(20, TimeUnit.SECONDS));
    // Answered by stop() itself: a stop that waited for the probe would end it only when its grace period ran out
    // and the server cut the call off, with the server's words, not these.
    Status status = ((StatusRuntimeException) e.getCause()).getStatus();
    assertEquals(Status.Code.UNAVAILABLE, status.getCode());
    assertEquals("mock CSI plugin stopping", status.getDescription());
  }

  @Test
  void failProbes_returnsTheStatus_untilCleared() throws Exception {
    start(b -> { });
    plugin.failProbes(Status.Code.FAILED_PRECONDITION, "disk array offline");
    Status status = statusOf(() -> csi.identity().probe(ProbeRequest.getDefaultInstance()));
    assertEquals(Status.Code.FAILED_PRECONDITION, status.getCode());
    assertEquals("disk array offline", status.getDescription());
    plugin.failProbes(Status.Code.INTERNAL, "boom");
    assertEquals(Status.Code.INTERNAL, codeOf(() -> csi.identity().probe(ProbeRequest.getDefaultInstance())));
    plugin.clearProbeFailure();
    assertTrue(csi.ready());
    assertEquals(3, plugin.probeCount());
  }

  @Test
  void failProbes_withOk_isRejected() throws Exception {
    start(b -> { });
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> plugin.failProbes(Status.Code.OK, "fine"));
    assertTrue(e.getMessage().contains("OK"), e.getMessage());
    assertTrue(csi.ready());
  }

  @Test
  void flap_alternatesReadyAndNotReadyEachPeriod_thenStops() throws Exception {
    start(b -> { });
    plugin.flap(Duration.ofSeconds(10));
    assertTrue(csi.ready());
    ticker.advance(Duration.ofMillis(9999));
    assertTrue(csi.ready());
    ticker.advance(Duration.ofMillis(1));
    assertFalse(csi.ready());
    ticker.advance(Duration.ofSeconds(10));
    assertTrue(csi.ready());
    ticker.advance(Duration.ofSeconds(10));
    assertFalse(csi.ready());
    plugin.stopFlapping();
    assertTrue(csi.ready(), "back to the ready setting");
  }

  @Test
  void flap_overridesNeverReady_whileActive() throws Exception {
    start(MockCsiPlugin.Builder::neverReady);
    plugin.flap(Duration.ofSeconds(1));
    assertTrue(csi.ready());
    plugin.stopFlapping();
    assertFalse(csi.ready());
  }

  @Test
  void flap_withZeroOrNegativePeriod_isRejected() throws Exception {
    start(b -> { });
    assertThrows(IllegalArgumentException.class, () -> plugin.flap(Duration.ZERO));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> plugin.flap(Duration.ofMillis(-1)));
    assertTrue(e.getMessage().contains("flap period"), e.getMessage());
  }

  @Test
  void latency_delaysEveryResponse_andCanBeTurnedOff() throws Exception {
    start(b -> b.latency(Duration.ofMillis(300)));
    ListenableFuture<ProbeResponse> late = csi.identityFuture().probe(ProbeRequest.getDefaultInstance());
    await().atMost(Duration.ofSeconds(20)).until(() -> waits.pendingCount() == 1);
    waits.forwardTime(Duration.ofMillis(299));
    assertFalse(late.isDone(), "not answered before the latency");
    waits.forwardTime(Duration.ofMillis(1));
    assertTrue(late.get(20, TimeUnit.SECONDS).getReady().getValue());

    // A client deadline shorter than the latency expires.
    assertEquals(Status.Code.DEADLINE_EXCEEDED, codeOf(() -> csi.identity()
        .withDeadlineAfter(100, TimeUnit.MILLISECONDS).probe(ProbeRequest.getDefaultInstance())));
    // (Its answer stays scheduled, for a client that has gone; time is not moved for it.)

    plugin.setLatency(Duration.ZERO);
    assertTrue(csi.ready(), "answered at once: virtual time did not move");
    // Errors are delayed too.
    plugin.setLatency(Duration.ofMillis(200));
    plugin.failProbes(Status.Code.UNAVAILABLE, "later");
    ListenableFuture<ProbeResponse> failing = csi.identityFuture().probe(ProbeRequest.getDefaultInstance());
    await().atMost(Duration.ofSeconds(20)).until(() -> waits.pendingDelays().contains(Duration.ofMillis(200)));
    waits.forwardTime(Duration.ofMillis(199));
    assertFalse(failing.isDone(), "not failed before the latency");
    waits.forwardTime(Duration.ofMillis(1));
    ExecutionException e = assertThrows(ExecutionException.class, () -> failing.get(20, TimeUnit.SECONDS));
    assertEquals(Status.Code.UNAVAILABLE, ((StatusRuntimeException) e.getCause()).getStatus().getCode());
  }

  @Test
  void probeCount_countsEveryProbeReceived() throws Exception {
    start(b -> { });
    assertEquals(0, plugin.probeCount());
    csi.ready();
    csi.ready();
    csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
    assertEquals(2, plugin.probeCount());
  }

  @Test
  void behaviourSetBeforeStart_appliesToTheVeryFirstProbe() throws Exception {
    MockCsiPlugin early = MockCsiPlugin.builder().socket(dir.resolve("early.sock")).build();
    early.failProbes(Status.Code.UNAVAILABLE, "not yet");
    try (early; Csi client = new Csi(early.start().socket())) {
      assertEquals(Status.Code.UNAVAILABLE, codeOf(() -> client.identity().probe(ProbeRequest.getDefaultInstance())));
    }
  }

  @Test
  void omitReadyField_answersReadyWithoutTheField_butNotReadyExplicitly() throws Exception {
    start(b -> b.omitReadyField().readyAfter(Duration.ofSeconds(1)));
    assertFalse(csi.identity().probe(ProbeRequest.getDefaultInstance()).getReady().getValue());
    assertTrue(csi.identity().probe(ProbeRequest.getDefaultInstance()).hasReady(), "not ready is explicit");
    ticker.advance(Duration.ofSeconds(1));
    assertFalse(csi.identity().probe(ProbeRequest.getDefaultInstance()).hasReady(),
        "ready is left out: absent means ready");
  }

  @Test
  void hangProbesAfterReady_answersUntilReadyForLongEnough_thenHangs() throws Exception {
    start(b -> b.hangProbesAfterReady(Duration.ofSeconds(10)));
    assertTrue(csi.ready()); // first ready probe: the clock starts
    ticker.advance(Duration.ofMillis(9999));
    assertTrue(csi.ready());
    ticker.advance(Duration.ofMillis(1));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, codeOf(() -> csi.identity()
        .withDeadlineAfter(300, TimeUnit.MILLISECONDS).probe(ProbeRequest.getDefaultInstance())));
    plugin.hangProbes(false);
    assertTrue(csi.ready());
  }
}
