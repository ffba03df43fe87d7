package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static dev.csisupervisor.mockplugin.Csi.statusOf;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.util.concurrent.ListenableFuture;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeResponse;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.GetPluginInfoRequest;
import dev.csisupervisor.csi.v1.GetPluginInfoResponse;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.NodeGrpc;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeResponse;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.ProbeRequest;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeCapability;
import dev.csisupervisor.testing.FakeScheduler;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Per-RPC faults (fail, hang, delay) and call records, over real gRPC on a unix socket. A delayed call waits on
 * {@link #waits}, in virtual time: the tests move it forward instead of waiting out the delay.
 */
@Timeout(30)
class MockCsiPluginCallFaultsTest extends PluginOnSocketTest {
  private static final VolumeCapability MOUNT_RW = VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.getDefaultInstance())
      .setAccessMode(VolumeCapability.AccessMode.newBuilder()
          .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
      .build();

  private final FakeScheduler waits = new FakeScheduler();
  private String volumeId;
  private Path staging;

  @Override
  MockCsiPlugin.Builder builder() {
    return super.builder().waits(waits);
  }

  /** Once the plugin has received {@code calls} delayed calls, all waiting on {@link #waits}. */
  private void awaitDelayed(int calls) {
    await().atMost(Duration.ofSeconds(10)).until(() -> waits.pendingCount() == calls);
  }

  @BeforeEach
  void startWithAVolume() throws Exception {
    start(MockCsiPlugin.Builder::allCapabilities);
    volumeId = create("data").getVolume().getVolumeId();
    staging = Files.createDirectory(dir.resolve("staging"));
  }

  private CreateVolumeResponse create(String name) {
    return csi.controller().createVolume(createRequest(name));
  }

  private static CreateVolumeRequest createRequest(String name) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(MOUNT_RW).build();
  }

  private NodeStageVolumeRequest stageRequest() {
    return NodeStageVolumeRequest.newBuilder().setVolumeId(volumeId)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(MOUNT_RW).build();
  }

  private NodeUnstageVolumeRequest unstageRequest() {
    return NodeUnstageVolumeRequest.newBuilder().setVolumeId(volumeId).setStagingTargetPath(staging.toString()).build();
  }

  private NodePublishVolumeRequest publishRequest(Path target) {
    return NodePublishVolumeRequest.newBuilder().setVolumeId(volumeId).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(MOUNT_RW).build();
  }

  private NodeStageVolumeResponse stage() {
    return csi.node().nodeStageVolume(stageRequest());
  }

  /** Whether the driver holds the volume as staged: a publish from the staging path passes its check. */
  private boolean isStaged() {
    return staged(false);
  }

  /**
   * {@link #isStaged}; with {@code pendingMeansNo}, a delayed call on the volume still in progress (the
   * publish answers ABORTED) counts as not staged yet, otherwise it fails the test.
   */
  private boolean staged(boolean pendingMeansNo) {
    Path probeTarget = dir.resolve("is-staged-target");
    try {
      csi.node().nodePublishVolume(publishRequest(probeTarget));
      return true;
    } catch (StatusRuntimeException e) {
      if (!(pendingMeansNo && e.getStatus().getCode() == Status.Code.ABORTED)) {
        assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode(), e.toString());
      }
      return false;
    }
  }

  private int volumeCount() {
    return csi.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesCount();
  }

  @Test
  void failCalls_failsTheNextNCalls_withTheCodeAndMessage_thenTheDriverAnswers() {
    plugin.failCalls(NodeGrpc.getNodeStageVolumeMethod(), Status.Code.UNAVAILABLE, "array busy", 2);
    for (int i = 0; i < 2; i++) {
      Status status = statusOf(this::stage);
      assertEquals(Status.Code.UNAVAILABLE, status.getCode());
      assertEquals("array busy", status.getDescription());
      assertFalse(isStaged(), "a failed call must not stage");
    }
    stage();
    assertTrue(isStaged());
    assertEquals(3, plugin.callCount(NodeGrpc.getNodeStageVolumeMethod()));
  }

  @Test
  void failCalls_always_untilCleared() {
    plugin.failCalls("CreateVolume", Status.Code.RESOURCE_EXHAUSTED, "pool full", -1);
    for (int i = 0; i < 3; i++) {
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, codeOf(() -> create("more")));
    }
    plugin.clearFaults();
    create("more");
    assertEquals(5, plugin.callCount("csi.v1.Controller/CreateVolume"), "counts survive clearFaults");
  }

  @Test
  void failedCalls_leaveTheDriversStateAsItWas() throws Exception {
    plugin.failCalls(ControllerGrpc.getCreateVolumeMethod(), Status.Code.INTERNAL, "boom", 1);
    plugin.failCalls(ControllerGrpc.getDeleteVolumeMethod(), Status.Code.ABORTED, "busy", 1);
    plugin.failCalls(NodeGrpc.getNodePublishVolumeMethod(), Status.Code.NOT_FOUND, "gone", 1);
    assertEquals(Status.Code.INTERNAL, codeOf(() -> create("other")));
    assertEquals(1, volumeCount(), "no volume was created");
    assertEquals(Status.Code.ABORTED, codeOf(() -> csi.controller().deleteVolume(
        DeleteVolumeRequest.newBuilder().setVolumeId(volumeId).build())));
    assertEquals(1, volumeCount(), "the volume was not deleted");

    stage();
    Path target = dir.resolve("target");
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> csi.node().nodePublishVolume(publishRequest(target))));
    assertFalse(Files.exists(target), "a failed publish must not create the target");
    csi.node().nodePublishVolume(publishRequest(target));
    assertTrue(Files.isDirectory(target));
  }

  @Test
  void faultsOfOneMethod_queueUp_andOtherMethodsAreUntouched() {
    plugin.failCalls("NodeStageVolume", Status.Code.ABORTED, "first", 1);
    plugin.hangCalls("NodeStageVolume", 1);
    plugin.failCalls("NodeStageVolume", Status.Code.UNAVAILABLE, "third", 1);
    NodeGrpc.NodeBlockingStub shortDeadline = NodeGrpc.newBlockingStub(csi.channel)
        .withDeadlineAfter(200, TimeUnit.MILLISECONDS);

    assertEquals("first", statusOf(this::stage).getDescription());
    assertEquals(Status.Code.DEADLINE_EXCEEDED, codeOf(() -> shortDeadline.nodeStageVolume(stageRequest())));
    assertEquals("third", statusOf(this::stage).getDescription());
    create("unaffected");
    stage();
    assertTrue(isStaged());
  }

  @Test
  void replyCalls_answerWithTheScriptedResponse_withoutTheDriver() {
    CreateVolumeResponse scripted = CreateVolumeResponse.newBuilder().setVolume(Volume.newBuilder()
        .setVolumeId("scripted-1").setCapacityBytes(42)
        .addAccessibleTopology(Topology.newBuilder().putSegments("zone", "z1"))).build();
    plugin.replyCalls(ControllerGrpc.getCreateVolumeMethod(), scripted, 1);
    assertEquals(scripted, create("other"));
    assertEquals(1, volumeCount(), "the driver created nothing");
    assertTrue(create("other").getVolume().getVolumeId().startsWith("vol-"), "then the driver answers");
    assertEquals(2, volumeCount());
    assertEquals(3, plugin.callCount(ControllerGrpc.getCreateVolumeMethod()));
  }

  @Test
  void hangCalls_neverAnswerUntilTheDeadline_andAreForgottenThen() {
    plugin.hangCalls(NodeGrpc.getNodeStageVolumeMethod(), 1);
    NodeGrpc.NodeBlockingStub shortDeadline = NodeGrpc.newBlockingStub(csi.channel)
        .withDeadlineAfter(300, TimeUnit.MILLISECONDS);
    assertEquals(Status.Code.DEADLINE_EXCEEDED, codeOf(() -> shortDeadline.nodeStageVolume(stageRequest())));
    // The server learns of the deadline on its own event loop, just after the client.
    await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungCallCount() == 0);
    assertFalse(isStaged(), "a hung call never reaches the driver");
    stage();
    assertTrue(isStaged(), "the call after the hung one is answered");
  }

  @Test
  void hungCalls_areAnsweredUnavailable_whenThePluginStops() throws Exception {
    plugin.hangCalls("NodeStageVolume", -1);
    ListenableFuture<NodeStageVolumeResponse> hung = NodeGrpc.newFutureStub(csi.channel)
        .withDeadlineAfter(30, TimeUnit.SECONDS).nodeStageVolume(stageRequest());
    await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungCallCount() == 1);
    plugin.stop();
    ExecutionException e = assertThrows(ExecutionException.class, () -> hung.get(10, TimeUnit.SECONDS));
    Status status = ((StatusRuntimeException) e.getCause()).getStatus();
    assertEquals(Status.Code.UNAVAILABLE, status.getCode());
    assertEquals("mock CSI plugin stopping", status.getDescription());
  }

  @Test
  void delayCalls_answerWithTheDriversResultAfterTheDelay_withoutBlockingOtherCalls() throws Exception {
    plugin.delayCalls(ControllerGrpc.getCreateVolumeMethod(), Duration.ofSeconds(1));
    ListenableFuture<CreateVolumeResponse> slow = ControllerGrpc.newFutureStub(csi.channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS).createVolume(createRequest("slow"));
    awaitDelayed(1);
    assertEquals(List.of(Duration.ofSeconds(1)), waits.pendingDelays(), "waits the delay asked for");
    // The delay holds no thread: a call meanwhile is answered.
    assertTrue(IdentityGrpc.newBlockingStub(csi.channel).withDeadlineAfter(10, TimeUnit.SECONDS)
        .probe(ProbeRequest.getDefaultInstance()).getReady().getValue());
    waits.forwardTime(Duration.ofMillis(999));
    assertFalse(slow.isDone(), "not answered before the delay");
    assertEquals(1, volumeCount(), "nor done by the driver");
    waits.forwardTime(Duration.ofMillis(1));
    String id = slow.get(10, TimeUnit.SECONDS).getVolume().getVolumeId();
    plugin.clearFaults();
    assertEquals(id, create("slow").getVolume().getVolumeId(), "the driver's own answer, created once");

    assertEquals(2, volumeCount());
  }

  @Test
  void delayCalls_ofOneVolume_slowOnlyThatVolume() throws Exception {
    String other = create("other").getVolume().getVolumeId();
    plugin.delayCalls("NodeStageVolume", volumeId, Duration.ofSeconds(1));
    ListenableFuture<NodeStageVolumeResponse> slow = NodeGrpc.newFutureStub(csi.channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS).nodeStageVolume(stageRequest());
    awaitDelayed(1);
    Path otherStaging = Files.createDirectory(dir.resolve("other-staging"));
    csi.node().nodeStageVolume(stageRequest().toBuilder().setVolumeId(other)
        .setStagingTargetPath(otherStaging.toString()).build());
    assertFalse(slow.isDone(), "the other volume was staged while this one waits");
    waits.forwardTime(Duration.ofMillis(999));
    assertFalse(slow.isDone(), "not answered before the delay");
    waits.forwardTime(Duration.ofMillis(1));
    slow.get(10, TimeUnit.SECONDS);
    assertTrue(isStaged());

    plugin.delayCalls("NodeStageVolume", volumeId, Duration.ZERO);
    plugin.delayCalls("NodeStageVolume", Duration.ofSeconds(30));
    plugin.delayCalls("NodeStageVolume", other, Duration.ofMillis(1));
    ListenableFuture<NodeStageVolumeResponse> again = NodeGrpc.newFutureStub(csi.channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS).nodeStageVolume(stageRequest().toBuilder().setVolumeId(other)
            .setStagingTargetPath(otherStaging.toString()).build());
    awaitDelayed(1);
    assertEquals(List.of(Duration.ofMillis(1)), waits.pendingDelays(), "its own delay, not the method's 30 s");
    waits.forwardTime(Duration.ofMillis(1));
    again.get(10, TimeUnit.SECONDS);
    assertThrows(IllegalArgumentException.class, () -> plugin.delayCalls("NodeStageVolume", " ", Duration.ZERO));
  }

  @Test
  void aCallOnAVolumeWithADelayedCallInProgress_isAborted_untilThatOneIsDone() throws Exception {
    plugin.delayCalls("NodeStageVolume", Duration.ofSeconds(3));
    ListenableFuture<NodeStageVolumeResponse> slow = NodeGrpc.newFutureStub(csi.channel)
        .withDeadlineAfter(30, TimeUnit.SECONDS).nodeStageVolume(stageRequest());
    awaitDelayed(1);
    // A restarted CO undoing what it thinks was never done must not overtake the call in progress.
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
        () -> csi.node().nodeUnstageVolume(unstageRequest()));
    assertEquals(Status.Code.ABORTED, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains("an operation is pending for volume"), e.getMessage());
    waits.forwardTime(Duration.ofSeconds(3));
    slow.get(30, TimeUnit.SECONDS);
    csi.node().nodeUnstageVolume(unstageRequest()); // now it goes through, after the stage
    assertFalse(isStaged());
  }

  @Test
  void delayedCall_isDoneByTheDriver_evenIfTheClientGaveUp() {
    plugin.delayCalls("NodeStageVolume", Duration.ofMillis(300));
    ListenableFuture<NodeStageVolumeResponse> call = NodeGrpc.newFutureStub(csi.channel)
        .withDeadlineAfter(30, TimeUnit.SECONDS).nodeStageVolume(stageRequest());
    awaitDelayed(1); // the driver has it (a deadline of a few ms could end the call before it arrives)
    assertTrue(call.cancel(true), "the caller gives up before the answer");
    plugin.clearFaults();
    assertFalse(staged(true), "still in progress");
    waits.forwardTime(Duration.ofMillis(300));
    // As a slow real driver: the work the caller stopped waiting for still happens.
    assertTrue(isStaged());
  }

  @Test
  void callCount_andLastRequest_perMethod() {
    assertEquals(0, plugin.callCount(NodeGrpc.getNodeStageVolumeMethod()), "no call was made");
    assertTrue(plugin.lastRequest(NodeGrpc.getNodeStageVolumeMethod()).isEmpty());
    assertEquals(1, plugin.callCount("CreateVolume"), "the one in setUp");

    plugin.failCalls("NodeStageVolume", Status.Code.INTERNAL, null, 1);
    Status failed = statusOf(this::stage);
    assertEquals(Status.Code.INTERNAL, failed.getCode());
    assertEquals(null, failed.getDescription(), "a null message sends no description");
    assertEquals(stageRequest(), plugin.lastRequest(NodeGrpc.getNodeStageVolumeMethod()).orElseThrow(),
        "a failed call's request is recorded too");
    NodeStageVolumeRequest other = stageRequest().toBuilder().putSecrets("k", "v").build();
    csi.node().nodeStageVolume(other);
    assertEquals(other, plugin.lastRequest("NodeStageVolume").orElseThrow());
    assertEquals(2, plugin.callCount("csi.v1.Node/NodeStageVolume"));

    csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
    csi.ready();
    assertEquals(1, plugin.callCount(IdentityGrpc.getGetPluginInfoMethod()));
    assertEquals(1, plugin.callCount("Probe"));
    assertEquals(1, plugin.probeCount(), "probe scripting still counts its own");
  }

  @Test
  void probeAndInfo_canBeFailedLikeAnyRpc() {
    plugin.failCalls(IdentityGrpc.getProbeMethod(), Status.Code.FAILED_PRECONDITION, "disk missing", 1);
    plugin.failCalls("GetPluginInfo", Status.Code.UNIMPLEMENTED, "no", 1);
    assertEquals("disk missing", statusOf(csi::ready).getDescription());
    assertTrue(csi.ready());
    assertEquals(Status.Code.UNIMPLEMENTED,
        codeOf(() -> csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance())));
  }

  @Test
  void concurrentCalls_useUpExactlyTheScriptedFailures() throws Exception {
    plugin.failCalls(IdentityGrpc.getGetPluginInfoMethod(), Status.Code.UNAVAILABLE, "x", 10);
    List<ListenableFuture<GetPluginInfoResponse>> calls = new ArrayList<>();
    IdentityGrpc.IdentityFutureStub stub = csi.identityFuture();
    for (int i = 0; i < 50; i++) {
      calls.add(stub.getPluginInfo(GetPluginInfoRequest.getDefaultInstance()));
    }
    int failed = 0;
    for (ListenableFuture<GetPluginInfoResponse> call : calls) {
      try {
        call.get(10, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        assertEquals(Status.Code.UNAVAILABLE, ((StatusRuntimeException) e.getCause()).getStatus().getCode());
        failed++;
      }
    }
    assertEquals(10, failed);
    assertEquals(50, plugin.callCount("GetPluginInfo"));
  }

  /** Which of {@code n} GetPluginInfo calls failed, as a string of 'x' (failed) and '.' (answered). */
  private String failurePattern(int n) {
    StringBuilder pattern = new StringBuilder();
    for (int i = 0; i < n; i++) {
      try {
        csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
        pattern.append('.');
      } catch (StatusRuntimeException e) {
        assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
        assertEquals("flaky", e.getStatus().getDescription());
        pattern.append('x');
      }
    }
    return pattern.toString();
  }

  @Test
  void failCallsAtRandom_failsAboutTheFraction_theSameCallsForTheSameSeed() {
    plugin.failCallsAtRandom("GetPluginInfo", 0.3, Status.Code.UNAVAILABLE, "flaky", 7);
    String first = failurePattern(200);
    long failed = first.chars().filter(c -> c == 'x').count();
    assertTrue(failed >= 40 && failed <= 80, "about 30% of 200 failed: " + failed + " " + first);

    plugin.failCallsAtRandom("GetPluginInfo", 0.3, Status.Code.UNAVAILABLE, "flaky", 7);
    csi.node().nodeGetInfo(dev.csisupervisor.csi.v1.NodeGetInfoRequest.getDefaultInstance()); // another method
    assertEquals(first, failurePattern(200), "same seed, same calls failed, whatever other methods do");

    plugin.failCallsAtRandom("GetPluginInfo", 0.3, Status.Code.UNAVAILABLE, "flaky", 8);
    assertFalse(first.equals(failurePattern(200)), "another seed fails other calls");

    plugin.failCallsAtRandom("GetPluginInfo", 0, Status.Code.UNAVAILABLE, "flaky", 7);
    assertEquals(".".repeat(50), failurePattern(50), "fraction 0 ends it");
    plugin.failCallsAtRandom("GetPluginInfo", 1, Status.Code.UNAVAILABLE, "flaky", 7);
    assertEquals("x".repeat(50), failurePattern(50), "fraction 1 fails every call");
    plugin.clearFaults();
    assertEquals(".".repeat(50), failurePattern(50), "clearFaults ends it");
  }

  @Test
  void failCallsAtRandom_leavesTheDriversStateAsItWas_andQueuedFaultsComeFirst() {
    stage();
    plugin.failCallsAtRandom("NodeUnstageVolume", 1, Status.Code.INTERNAL, "target is busy", 1);
    plugin.failCalls("NodeUnstageVolume", Status.Code.ABORTED, "queued", 1);
    assertEquals("queued", statusOf(() -> csi.node().nodeUnstageVolume(unstageRequest())).getDescription());
    Status busy = statusOf(() -> csi.node().nodeUnstageVolume(unstageRequest()));
    assertEquals(Status.Code.INTERNAL, busy.getCode());
    assertEquals("target is busy", busy.getDescription());
    assertTrue(isStaged(), "a randomly failed unstage leaves the volume staged");
    plugin.failCallsAtRandom("NodeUnstageVolume", 0, Status.Code.INTERNAL, "target is busy", 1);
    csi.node().nodeUnstageVolume(unstageRequest());
    assertFalse(isStaged());
  }

  @Test
  void misuse_throwsNamingTheValue() {
    IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
        () -> plugin.failCalls("NodePublish", Status.Code.INTERNAL, "m", 1));
    assertTrue(unknown.getMessage().contains("'NodePublish'"), unknown.getMessage());
    assertThrows(IllegalArgumentException.class, () -> plugin.callCount("csi.v1.Node/Nope"));
    IllegalArgumentException ok = assertThrows(IllegalArgumentException.class,
        () -> plugin.failCalls("Probe", Status.Code.OK, "m", 1));
    assertTrue(ok.getMessage().contains("OK"), ok.getMessage());
    IllegalArgumentException zero = assertThrows(IllegalArgumentException.class,
        () -> plugin.hangCalls("Probe", 0));
    assertTrue(zero.getMessage().contains("times") && zero.getMessage().contains("0"), zero.getMessage());
    assertThrows(IllegalArgumentException.class, () -> plugin.hangCalls("Probe", -2));
    assertThrows(IllegalArgumentException.class, () -> plugin.delayCalls("Probe", Duration.ofMillis(-1)));
    for (double fraction : new double[] {-0.1, 1.5, Double.NaN}) {
      IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
          () -> plugin.failCallsAtRandom("Probe", fraction, Status.Code.INTERNAL, "m", 1));
      assertTrue(bad.getMessage().contains("fraction") && bad.getMessage().contains(String.valueOf(fraction)),
          bad.getMessage());
    }
    assertThrows(IllegalArgumentException.class,
        () -> plugin.failCallsAtRandom("Probe", 0.5, Status.Code.OK, "m", 1));
    IllegalArgumentException name = assertThrows(IllegalArgumentException.class,
        () -> plugin.failCallsAtRandom("NodeUnstage", 0.5, Status.Code.INTERNAL, "m", 1));
    assertTrue(name.getMessage().contains("'NodeUnstage'"), name.getMessage());
  }
}
