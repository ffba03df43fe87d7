package dev.csisupervisor.agent.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.admin.v1.CollectOrphansRequest;
import dev.csisupervisor.admin.v1.CollectOrphansResponse;
import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.CreateVolumeResponse;
import dev.csisupervisor.admin.v1.ListVolumesRequest;
import dev.csisupervisor.admin.v1.ListVolumesResponse;
import dev.csisupervisor.admin.v1.ReleaseAllocRequest;
import dev.csisupervisor.admin.v1.ReleaseAllocResponse;
import dev.csisupervisor.admin.v1.Topology;
import dev.csisupervisor.admin.v1.UnmountVolumeRequest;
import dev.csisupervisor.admin.v1.UnmountVolumeResponse;
import dev.csisupervisor.admin.v1.VolumeAccess;
import dev.csisupervisor.admin.v1.VolumeInfo;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.testing.FakeScheduler;
import dev.csisupervisor.volumes.OrphanMount;
import dev.csisupervisor.volumes.UnmountRequest;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The admin API's volume service over a volume manager double: what an unmount request becomes (secrets, secrets
 * file, force), the answers of ReleaseAlloc and CollectOrphans, what ListVolumes says of a pending volume and of
 * a node expansion owed, and a create's topology both ways.
 * Time is the fake scheduler's.
 */
class VolumeAdminServiceTest {
  private static final String SECRET = "admin-secret-4242";

  @TempDir Path dir;
  private final FakeScheduler scheduler = new FakeScheduler();
  private final FakeVolumeManager volumes = new FakeVolumeManager();
  private final VolumeAdminService service = new VolumeAdminService(volumes, scheduler);

  @Test
  void listVolumes_showsWhatAPendingVolumeWaitsFor_forcedAndLost() {
    volumes.records = List.of(
        FakeVolumeManager.record("lost", AllocPhase.LOST, StageState.LOST, false),
        FakeVolumeManager.record("forced", AllocPhase.UNPUBLISHING, StageState.STAGED, true),
        FakeVolumeManager.record("fine", AllocPhase.PUBLISHED, StageState.STAGED, false));
    volumes.waiting = Map.of("disk/lost", "node plugin disk is not ready",
        "disk/forced", "ControllerUnpublishVolume failed: UNAVAILABLE", "disk/fine", "stale");

    Map<String, VolumeInfo> byId = new TreeMap<>();
    call(o -> service.listVolumes(ListVolumesRequest.getDefaultInstance(), o), ListVolumesResponse.class)
        .getVolumesList().forEach(v -> byId.put(v.getVolumeId(), v));

    VolumeInfo lost = byId.get("lost");
    assertTrue(lost.getLost());
    assertTrue(lost.getPending());
    assertFalse(lost.getForced());
    assertEquals("node plugin disk is not ready", lost.getWaitingFor());
    assertEquals("LOST", lost.getUsages(0).getStage());
    assertEquals("LOST", lost.getUsages(0).getAllocs(0).getPhase());
    VolumeInfo forced = byId.get("forced");
    assertTrue(forced.getForced());
    assertFalse(forced.getLost());
    assertEquals("ControllerUnpublishVolume failed: UNAVAILABLE", forced.getWaitingFor());
    VolumeInfo fine = byId.get("fine");
    assertFalse(fine.getPending() || fine.getLost() || fine.getForced());
    assertEquals("", fine.getWaitingFor(), "a volume with no work waits for nothing");
  }

  @Test
  void listVolumes_showsANodeExpansionOwed_andNoneWhereNothingIsOwed() {
    volumes.records = List.of(FakeVolumeManager.owed("owed", 2L << 30),
        FakeVolumeManager.record("fine", AllocPhase.PUBLISHED, StageState.STAGED, false));

    Map<String, VolumeInfo> byId = new TreeMap<>();
    call(o -> service.listVolumes(ListVolumesRequest.getDefaultInstance(), o), ListVolumesResponse.class)
        .getVolumesList().forEach(v -> byId.put(v.getVolumeId(), v));

    assertTrue(byId.get("owed").getNodeExpansionPending());
    assertEquals(2L << 30, byId.get("owed").getNodeExpansionRequiredBytes());
    assertFalse(byId.get("owed").getPending(), "owing is not pending work");
    assertEquals(0, byId.get("owed").getUsagesCount());
    assertFalse(byId.get("fine").getNodeExpansionPending());
  }

  @Test
  void createVolume_withATopology_asksForIt_andAnswersWhereTheVolumeIsAccessibleFrom() {
    volumes.created = new CsiVolume("vol-z", 1L << 30, Map.of(), List.of(Map.of("zone", "a")));

    CreateVolumeResponse r = call(o -> service.createVolume(CreateVolumeRequest.newBuilder().setPlugin("disk")
        .setName("z").setAccess(VolumeAccess.newBuilder().setAccessMode("single-node-writer"))
        .putTopology("zone", "a").build(), o), CreateVolumeResponse.class);

    assertEquals(List.of(Optional.of(TopologyRequirement.of(Map.of("zone", "a")))), volumes.createTopologies);
    assertEquals(List.of(Map.of("zone", "a")), r.getAccessibleTopologyList().stream()
        .map(Topology::getSegmentsMap).toList());
  }

  @Test
  void createVolume_withoutTopology_leavesItToTheManager_andABlankSegmentIsInvalidArgument() {
    call(o -> service.createVolume(CreateVolumeRequest.newBuilder().setPlugin("disk").setName("n")
        .setAccess(VolumeAccess.newBuilder().setAccessMode("single-node-writer")).build(), o),
        CreateVolumeResponse.class);
    assertEquals(List.of(Optional.empty()), volumes.createTopologies);

    Status bad = fails(o -> service.createVolume(CreateVolumeRequest.newBuilder().setPlugin("disk").setName("n")
        .setAccess(VolumeAccess.newBuilder().setAccessMode("single-node-writer")).putTopology("zone", " ").build(), o),
        CreateVolumeResponse.class);
    assertEquals(Status.Code.INVALID_ARGUMENT, bad.getCode());
    assertTrue(bad.getDescription().startsWith("topology must have no blank key or value"), bad.getDescription());
  }

  @Test
  void unmount_withSecretsFileAndForce_givesTheManagerThePathTheSecretsAndForce() throws Exception {
    Path file = Files.writeString(dir.resolve("secrets"), "# controller\ntoken=" + SECRET + "\n");
    volumes.unmount = CompletableFuture.completedFuture(null);

    UnmountVolumeResponse r = call(o -> service.unmountVolume(UnmountVolumeRequest.newBuilder().setPlugin("disk")
        .setVolumeId("v").setAllocId("a").setSecretsFile(file.toString()).setForce(true).build(), o),
        UnmountVolumeResponse.class);

    assertTrue(r.getDone());
    UnmountRequest asked = volumes.unmounts.get(0);
    assertEquals(Optional.of(file), asked.secretsFile());
    assertEquals(Map.of("token", SECRET), asked.controllerSecrets().reveal(), "read from the file");
    assertTrue(asked.force());
  }

  @Test
  void unmount_secretsByValue_winOverTheFilesButTheFileIsKept() throws Exception {
    Path file = Files.writeString(dir.resolve("secrets"), "token=old\n");
    volumes.unmount = CompletableFuture.completedFuture(null);

    call(o -> service.unmountVolume(UnmountVolumeRequest.newBuilder().setPlugin("disk").setVolumeId("v")
        .setAllocId("a").putSecrets("token", SECRET).setSecretsFile(file.toString()).build(), o),
        UnmountVolumeResponse.class);

    UnmountRequest asked = volumes.unmounts.get(0);
    assertEquals(Map.of("token", SECRET), asked.controllerSecrets().reveal());
    assertEquals(Optional.of(file), asked.secretsFile());
    assertFalse(asked.force());
  }

  @Test
  void unmount_badSecretsFile_isInvalidArgumentNamingTheField_withoutItsContent() throws Exception {
    Path loose = Files.writeString(dir.resolve("loose"), "no equals sign " + SECRET + "\n");
    for (String bad : List.of("relative/secrets", dir.resolve("missing").toString(), loose.toString())) {
      Status s = fails(o -> service.unmountVolume(UnmountVolumeRequest.newBuilder().setPlugin("disk")
          .setVolumeId("v").setAllocId("a").setSecretsFile(bad).build(), o), UnmountVolumeResponse.class);
      assertEquals(Status.Code.INVALID_ARGUMENT, s.getCode(), bad);
      assertTrue(s.getDescription().startsWith("secrets_file"), s.getDescription());
      assertFalse(s.getDescription().contains(SECRET), s.getDescription());
    }
    assertTrue(volumes.unmounts.isEmpty(), "nothing was asked of the manager");
  }

  @Test
  void forcedUnmount_pendingAfterItsWait_saysWhatItWaitsFor() {
    volumes.waiting = Map.of("disk/v", "ControllerUnpublishVolume failed: UNAVAILABLE: down");
    Recorder<UnmountVolumeResponse> answer = new Recorder<>();
    service.unmountVolume(UnmountVolumeRequest.newBuilder().setPlugin("disk").setVolumeId("v").setAllocId("a")
        .setForce(true).setWaitSeconds(5).build(), answer);
    scheduler.forwardTime(Duration.ofSeconds(4));
    assertNull(answer.value, "not before its wait");

    scheduler.forwardTime(Duration.ofSeconds(1));

    assertFalse(answer.value.getDone());
    assertEquals("pending after 5 s: recorded and retried: disk/v: ControllerUnpublishVolume failed: UNAVAILABLE:"
        + " down; see csi-agent status", answer.value.getMessage());
  }

  @Test
  void releaseAlloc_done_namesTheVolumesItUnmounted() {
    volumes.release = CompletableFuture.completedFuture(List.of("disk/v1", "disk/v2"));

    ReleaseAllocResponse r = call(o -> service.releaseAlloc(ReleaseAllocRequest.newBuilder().setAllocId("web-1")
        .setForce(true).build(), o), ReleaseAllocResponse.class);

    assertTrue(r.getDone());
    assertEquals(List.of("disk/v1", "disk/v2"), r.getVolumesList());
    assertEquals(List.of("web-1 forced"), volumes.releases);
  }

  @Test
  void releaseAlloc_pendingAfterItsWait_namesWhatEachVolumeWaitsFor() {
    volumes.records = List.of(FakeVolumeManager.record("v1", AllocPhase.UNPUBLISHING, StageState.STAGED, false));
    volumes.waiting = Map.of("disk/v1", "node plugin disk is not ready");
    Recorder<ReleaseAllocResponse> answer = new Recorder<>();
    service.releaseAlloc(ReleaseAllocRequest.newBuilder().setAllocId("a").setWaitSeconds(2).build(), answer);

    scheduler.forwardTime(Duration.ofSeconds(2));

    assertFalse(answer.value.getDone());
    assertEquals(List.of("disk/v1"), answer.value.getVolumesList());
    assertEquals("pending after 2 s (recorded and retried): disk/v1: node plugin disk is not ready; see csi-agent"
        + " volume list", answer.value.getMessage());
    assertEquals(List.of("a"), volumes.releases);
  }

  @Test
  void releaseAlloc_badAllocId_isInvalidArgument() {
    assertEquals(Status.Code.INVALID_ARGUMENT, fails(o -> service.releaseAlloc(
        ReleaseAllocRequest.newBuilder().setAllocId("../x").build(), o), ReleaseAllocResponse.class).getCode());
  }

  @Test
  void collectOrphans_answersEachMountPointWithItsOutcome() {
    volumes.orphans = List.of(new OrphanMount(Path.of("/csi/node/disk/per-alloc/zz/v/m"), true, Optional.empty()),
        new OrphanMount(Path.of("/csi/node/disk/staging/w/m"), false, Optional.of("umount: target is busy")));

    CollectOrphansResponse r = call(o -> service.collectOrphans(CollectOrphansRequest.newBuilder().setRemove(true)
        .build(), o), CollectOrphansResponse.class);

    assertEquals(List.of(true), volumes.orphanRemoves);
    assertEquals("/csi/node/disk/per-alloc/zz/v/m", r.getOrphans(0).getPath());
    assertTrue(r.getOrphans(0).getRemoved());
    assertEquals("", r.getOrphans(0).getError());
    assertFalse(r.getOrphans(1).getRemoved());
    assertEquals("umount: target is busy", r.getOrphans(1).getError());
  }

  // ---- helpers ----

  /** Runs a unary call and returns its answer; it must have answered at once. */
  private static <R> R call(Consumer<StreamObserver<R>> call, Class<R> type) {
    Recorder<R> r = new Recorder<>();
    call.accept(r);
    assertNull(r.error, () -> "failed: " + r.error);
    assertTrue(r.completed, "answered");
    return type.cast(r.value);
  }

  /** Runs a unary call that must fail at once; its status. */
  private static <R> Status fails(Consumer<StreamObserver<R>> call, Class<R> type) {
    Recorder<R> r = new Recorder<>();
    call.accept(r);
    assertTrue(r.error != null, () -> "failed, but answered " + r.value);
    return Status.fromThrowable(r.error);
  }

  /** One unary answer. */
  private static final class Recorder<R> implements StreamObserver<R> {
    R value;
    Throwable error;
    boolean completed;

    @Override
    public void onNext(R v) {
      value = v;
    }

    @Override
    public void onError(Throwable t) {
      error = t;
    }

    @Override
    public void onCompleted() {
      completed = true;
    }
  }
}
