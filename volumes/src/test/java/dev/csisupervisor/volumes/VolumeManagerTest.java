package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class VolumeManagerTest extends MockNodeVolumeTest {
  private static final VolumeCapability RWO = VolumeCapability.mount("ext4", List.of(), AccessMode.SINGLE_NODE_WRITER);
  private static final VolumeCapability MULTI = VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER);

  private VolumeManager manager;

  @BeforeEach
  void startManager() {
    manager = kit.manager();
  }

  private VolumeClaim claim(String alloc, VolumeCapability capability) {
    return VolumeClaim.of("mock", vol, alloc, capability, false);
  }

  @Test
  void mount_stagesOncePerUsage_publishesPerAlloc_atTheLayoutPaths() {
    MountedVolume a = kit.drive(manager.mount(claim("a1", MULTI)));
    MountedVolume b = kit.drive(manager.mount(claim("a2", MULTI)));

    FaultyClient c = kit.client("mock");
    assertEquals(1, c.calls("NodeStageVolume"));
    assertEquals(2, c.calls("NodePublishVolume"));
    Path dir = kit.socket("mock").getParent();
    String id = VolumeIds.dirName(vol); // a hash of the id: any id the spec allows is a path
    assertEquals(dir.resolve("per-alloc/a1/" + id + "/mount-multi-node-multi-writer-rw"), a.targetPath());
    assertEquals(Optional.of(dir.resolve("staging/" + id)), a.stagingPath(), "one staging path per volume");
    assertTrue(Files.isDirectory(a.targetPath()), "the plugin made the target");
    assertTrue(Files.isDirectory(b.targetPath()));
    VolumeRecord r = manager.find("mock", vol).orElseThrow();
    assertEquals(StageState.STAGED, r.stageOf(r.usages().values().iterator().next()));
    assertEquals(Map.of("a1", AllocPhase.PUBLISHED, "a2", AllocPhase.PUBLISHED), r.usages().values().iterator().next().allocs());
    assertFalse(r.hasWork());
  }

  @Test
  void mountAndUnmountFutures_completeOffTheCommitThread() {
    // VolumeManager's contract: futures complete on gRPC I/O threads, the commit-callbacks thread or the
    // scheduler; never on the group commit's own thread (which then could not take the next batch).
    CompletableFuture<MountedVolume> mounting = manager.mount(claim("a1", RWO));
    // (Its intent commit is asynchronous, so it is not done on return: unless this thread was descheduled for the
    // whole mount, which a loaded machine may do. Then the thread seen below is this one, not the commit's either.)
    CompletableFuture<String> mountedOn = mounting.handle((m, e) -> Thread.currentThread().getName());
    MountedVolume m = kit.drive(mounting);
    assertTrue(Files.isDirectory(m.targetPath()));
    assertFalse(kit.drive(mountedOn).equals("csi-state-commit"), "mount completed on " + mountedOn.join());

    CompletableFuture<Void> unmounting = manager.unmount("mock", vol, "a1");
    CompletableFuture<String> unmountedOn = unmounting.handle((v, e) -> Thread.currentThread().getName());
    kit.drive(unmounting);
    assertFalse(kit.drive(unmountedOn).equals("csi-state-commit"), "unmount completed on " + unmountedOn.join());
  }

  @Test
  void sameClaimTwice_returnsTheSamePath_andCallsNothing() {
    MountedVolume first = kit.drive(manager.mount(claim("a1", RWO)));
    int stage = kit.client("mock").calls("NodeStageVolume");
    int publish = kit.client("mock").calls("NodePublishVolume");
    long commits = store.commitCount();

    MountedVolume again = kit.drive(manager.mount(claim("a1", RWO)));

    assertEquals(first.targetPath(), again.targetPath());
    assertEquals(stage, kit.client("mock").calls("NodeStageVolume"));
    assertEquals(publish, kit.client("mock").calls("NodePublishVolume"));
    assertEquals(commits, store.commitCount(), "nothing committed either");
  }

  @Test
  void unmount_unstagesOnlyAtTheLastUse_andRemovesTheRecord() {
    MountedVolume a = kit.drive(manager.mount(claim("a1", MULTI)));
    kit.drive(manager.mount(claim("a2", MULTI)));
    FaultyClient c = kit.client("mock");

    kit.drive(manager.unmount("mock", vol, "a1"));
    assertEquals(1, c.calls("NodeUnpublishVolume"));
    assertEquals(0, c.calls("NodeUnstageVolume"), "a2 still uses the staging");
    assertFalse(Files.exists(a.targetPath()), "the plugin removed the target");
    assertFalse(Files.exists(a.targetPath().getParent()), "the CO removed the target's parent it made");

    kit.drive(manager.unmount("mock", vol, "a2"));
    assertEquals(2, c.calls("NodeUnpublishVolume"));
    assertEquals(1, c.calls("NodeUnstageVolume"));
    assertTrue(manager.find("mock", vol).isEmpty());
    assertTrue(store.loadAll().keySet().stream().noneMatch(k -> k.startsWith("volume/")), "record deleted");
    assertFalse(Files.exists(a.stagingPath().orElseThrow()), "staging directory removed");
  }

  @Test
  void unmountOfUnknownAlloc_isDoneAtOnce_withoutCalls() {
    kit.drive(manager.unmount("mock", vol, "nobody"));
    assertEquals(0, kit.client("mock") == null ? 0 : kit.client("mock").calls("NodeUnpublishVolume"));
  }

  @Test
  void pluginWithoutStageUnstage_publishesWithoutStaging() throws Exception {
    kit.startPlugin("nostage", b -> b.nodeCapabilities(new int[0]));
    kit.registerNode("nostage", java.util.Set.of(), 0);
    String v = kit.createVolume("nostage", "v2");
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("nostage", v, "a1", RWO, false)));
    assertEquals(Optional.empty(), m.stagingPath());
    assertEquals(0, kit.client("nostage").calls("NodeStageVolume"));
    kit.drive(manager.unmount("nostage", v, "a1"));
    assertEquals(0, kit.client("nostage").calls("NodeUnstageVolume"));
    assertTrue(manager.find("nostage", v).isEmpty());
  }

  @Test
  void publishFailingRightAfterItsStage_unstagesAgain_andReportsRpcCodeAndMessage() {
    kit.client("mock"); // made on first use
    CompletableFuture<MountedVolume> warm = manager.mount(claim("warm", MULTI));
    kit.drive(warm);
    kit.drive(manager.unmount("mock", vol, "warm"));
    FaultyClient c = kit.client("mock");
    c.fail("NodePublishVolume", StatusCode.FAILED_PRECONDITION, 1);

    VolumeException e = kit.failure(manager.mount(claim("a1", RWO)));

    assertEquals(Reason.CSI_ERROR, e.reason());
    assertEquals(Optional.of("NodePublishVolume"), e.rpc());
    assertEquals(Optional.of(StatusCode.FAILED_PRECONDITION), e.code());
    assertTrue(e.getMessage().contains("injected FAILED_PRECONDITION"), e.getMessage());
    assertEquals(2, c.calls("NodeUnstageVolume"), "the fresh stage was undone");
    assertTrue(manager.find("mock", vol).isEmpty(), "nothing left: " + manager.find("mock", vol));
    assertTrue(kit.events.stream().anyMatch(ev -> ev.kind() == VolumeEvent.Kind.MOUNT_FAILED));
  }

  @Test
  void transientCodes_areRetriedWithBackoff_thenSucceed() {
    kit.client("mock");
    kit.drive(manager.unmount("mock", vol, "x")); // nothing; makes no client
    CompletableFuture<MountedVolume> f = manager.mount(claim("a1", RWO));
    kit.drive(f);
    FaultyClient c = kit.client("mock");
    kit.drive(manager.unmount("mock", vol, "a1"));
    for (StatusCode code : List.of(StatusCode.UNAVAILABLE, StatusCode.ABORTED, StatusCode.DEADLINE_EXCEEDED)) {
      c.fail("NodeStageVolume", code, 2);
      int before = c.calls("NodeStageVolume");
      kit.drive(manager.mount(claim("a1", RWO)));
      assertEquals(before + 3, c.calls("NodeStageVolume"), code + ": two failures, then the call that worked");
      kit.drive(manager.unmount("mock", vol, "a1"));
    }
  }

  @Test
  void anUncertainStage_pastTheOperationDeadline_fails_andIsRolledBack() {
    kit.drive(manager.mount(claim("w", RWO)));
    kit.drive(manager.unmount("mock", vol, "w"));
    FaultyClient c = kit.client("mock");
    c.fail("NodeStageVolume", StatusCode.UNAVAILABLE, 1000);
    VolumeException e = kit.failure(manager.mount(claim("a1", RWO)));
    assertEquals(Optional.of(StatusCode.UNAVAILABLE), e.code());
    assertTrue(e.getMessage().contains("past the operation deadline of 30s"), e.getMessage());
    c.clearFaults();
    VolumeKit.await().until(() -> manager.find("mock", vol).isEmpty());
  }

  @Test
  void aStageSlowerThanTheOldRetryWindow_isSentAgainUntilItsAnswer_andTheMountCompletes() {
    kit.drive(manager.mount(claim("w", RWO)));
    kit.drive(manager.unmount("mock", vol, "w"));
    FaultyClient c = kit.client("mock");
    c.fail("NodeStageVolume", StatusCode.DEADLINE_EXCEEDED, 12); // the old bound gave up after 5 attempts
    int before = c.calls("NodeStageVolume");
    CompletableFuture<MountedVolume> f = manager.mount(claim("a1", RWO));
    VolumeKit.await().until(() -> {
      kit.scheduler.forwardTime(1, java.util.concurrent.TimeUnit.SECONDS);
      return f.isDone() || manager.waitingFor().getOrDefault("mock/" + vol, "").contains("outcome is uncertain");
    });
    kit.drive(f);
    assertEquals(before + 13, c.calls("NodeStageVolume"), "the same call until its final answer");
    assertTrue(kit.events.stream().anyMatch(ev -> ev.kind() == VolumeEvent.Kind.UNCERTAIN
        && ev.message().contains("DEADLINE_EXCEEDED")));
    assertTrue(manager.waitingFor().isEmpty(), manager.waitingFor().toString());
  }

  @Test
  void everyNonTransientCode_ofStageAndPublish_failsAtOnce_namingRpcAndCode() {
    kit.drive(manager.mount(claim("w", RWO)));
    kit.drive(manager.unmount("mock", vol, "w"));
    FaultyClient c = kit.client("mock");
    for (String rpc : List.of("NodeStageVolume", "NodePublishVolume")) {
      for (StatusCode code : List.of(StatusCode.NOT_FOUND, StatusCode.ALREADY_EXISTS, StatusCode.FAILED_PRECONDITION,
          StatusCode.INVALID_ARGUMENT, StatusCode.RESOURCE_EXHAUSTED, StatusCode.INTERNAL, StatusCode.UNIMPLEMENTED,
          StatusCode.PERMISSION_DENIED, StatusCode.UNAUTHENTICATED, StatusCode.OUT_OF_RANGE)) {
        c.fail(rpc, code, 1);
        int before = c.calls(rpc);
        VolumeException e = kit.failure(manager.mount(claim("a1", RWO)));
        assertEquals(Optional.of(rpc), e.rpc(), rpc + " " + code);
        assertEquals(Optional.of(code), e.code());
        assertEquals(before + 1, c.calls(rpc), "not retried: " + rpc + " " + code);
        assertTrue(e.getMessage().contains(rpc) && e.getMessage().contains(code.name()), e.getMessage());
        assertTrue(manager.find("mock", vol).isEmpty(), rpc + " " + code + ": " + manager.find("mock", vol));
      }
    }
  }

  @Test
  void unpublishNotFound_meansTheVolumeIsGone_andTheUnmountIsDone() {
    kit.drive(manager.mount(claim("a1", RWO)));
    kit.client("mock").fail("NodeUnpublishVolume", StatusCode.NOT_FOUND, 1);
    kit.client("mock").fail("NodeUnstageVolume", StatusCode.NOT_FOUND, 1);
    kit.drive(manager.unmount("mock", vol, "a1"));
    assertTrue(manager.find("mock", vol).isEmpty());
  }

  @Test
  void intentIsDurableBeforeTheCall_andTheResultAfterIt() {
    List<String> seen = new ArrayList<>();
    kit.drive(manager.unmount("mock", vol, "none"));
    // The client is made on the first mount; hook it as it is made.
    CompletableFuture<MountedVolume> warm = manager.mount(claim("w", MULTI));
    kit.drive(warm);
    kit.client("mock").beforeCall = rpc -> {
      VolumeRecord stored = store.get("volume/mock/" + vol).map(b -> decode(b)).orElse(null);
      seen.add(rpc + " " + (stored == null ? "none" : stored.usages().values().iterator().next().allocs().get("a1")));
    };
    kit.drive(manager.mount(claim("a1", MULTI)));
    kit.drive(manager.unmount("mock", vol, "a1"));
    assertEquals(List.of("NodePublishVolume PUBLISHING", "NodeUnpublishVolume UNPUBLISHING"), seen);
  }

  private VolumeRecord decode(byte[] b) {
    try {
      return VolumeRecordCodec.decode("volume/mock/" + vol, b);
    } catch (VolumeRecordCodec.RecordFormatException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void noSecretValue_isEverWrittenToTheState() {
    String secret = "s3cr3t-value-98765";
    kit.drive(manager.mount(claim("a1", RWO).withSecrets(Secrets.of(Map.of("password", secret)))));
    kit.client("mock").fail("NodeUnpublishVolume", StatusCode.INTERNAL, 1);
    kit.drive(manager.unmount("mock", vol, "a1"));
    for (byte[] value : store.loadAll().values()) {
      assertFalse(new String(value, StandardCharsets.ISO_8859_1).contains(secret));
    }
    assertTrue(kit.events.stream().noneMatch(e -> e.message().contains(secret)));
  }

  @Test
  void concurrentOperationsOnOneVolume_neverHaveTwoCallsInFlight() {
    List<CompletableFuture<?>> all = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      String alloc = "a" + (i % 5);
      all.add(i % 3 == 2 ? manager.unmount("mock", vol, alloc) : manager.mount(claim(alloc, MULTI)));
    }
    for (CompletableFuture<?> f : all) {
      kit.drive(f.handle((v, e) -> null));
    }
    assertEquals(1, kit.client("mock").maxInFlightPerVolume());
  }

  @Test
  void everyNonTransientCode_ofUnpublishAndUnstage_keepsTheUnmountPending_untilTheCallWorks() {
    FaultyClient c = null;
    for (String rpc : List.of("NodeUnpublishVolume", "NodeUnstageVolume")) {
      for (StatusCode code : List.of(StatusCode.INTERNAL, StatusCode.FAILED_PRECONDITION, StatusCode.INVALID_ARGUMENT,
          StatusCode.PERMISSION_DENIED, StatusCode.UNIMPLEMENTED, StatusCode.UNKNOWN)) {
        kit.drive(manager.mount(claim("a1", RWO)));
        c = kit.client("mock");
        c.fail(rpc, code, 1);
        int before = c.calls(rpc);
        CompletableFuture<Void> unmount = manager.unmount("mock", vol, "a1");
        VolumeKit.await().until(() -> kit.client("mock").calls(rpc) > before
            && kit.events.stream().anyMatch(e -> e.kind() == VolumeEvent.Kind.PENDING
                && e.message().contains(rpc) && e.message().contains(code.name())));
        assertFalse(unmount.isDone(), rpc + " " + code + ": pending, not failed, not dropped");
        assertTrue(manager.find("mock", vol).orElseThrow().hasWork());
        kit.drive(unmount); // the retry timer fires, the call works
        assertTrue(manager.find("mock", vol).isEmpty(), rpc + " " + code);
        kit.events.clear();
      }
    }
  }

  @Test
  void controllerErrors_ofCreateDeleteAndExpand_nameTheRpcAndTheCode() throws Exception {
    kit.registerController("mock", VolumeKit.ALL_CONTROLLER_CAPS);
    kit.drive(manager.unmount("mock", vol, "none"));
    dev.csisupervisor.mockplugin.MockCsiPlugin plugin = kit.plugins.get(0);
    plugin.failCalls("CreateVolume", io.grpc.Status.Code.OUT_OF_RANGE, "too big", 1);
    VolumeException create = kit.failure(manager.create("mock", "big", Optional.empty(), List.of(RWO), Map.of(),
        Secrets.none()));
    assertEquals(Optional.of("CreateVolume"), create.rpc());
    assertEquals(Optional.of(StatusCode.OUT_OF_RANGE), create.code());
    assertTrue(create.getMessage().contains("too big"), create.getMessage());
    plugin.failCalls("DeleteVolume", io.grpc.Status.Code.FAILED_PRECONDITION, "has snapshots", 1);
    VolumeException delete = kit.failure(manager.delete("mock", vol, Secrets.none()));
    assertEquals(Optional.of(StatusCode.FAILED_PRECONDITION), delete.code());
    plugin.failCalls("ControllerExpandVolume", io.grpc.Status.Code.OUT_OF_RANGE, "no room", 1);
    VolumeException expand = kit.failure(manager.expand("mock", vol, dev.csisupervisor.client.CapacityRange.atLeast(1L << 40),
        Secrets.none()));
    assertEquals(Optional.of("ControllerExpandVolume"), expand.rpc());
  }
}
