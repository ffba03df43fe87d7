package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.CloudCalls.MIB;
import static dev.csisupervisor.mockplugin.CloudCalls.cloneOf;
import static dev.csisupervisor.mockplugin.CloudCalls.create;
import static dev.csisupervisor.mockplugin.CloudCalls.createRequest;
import static dev.csisupervisor.mockplugin.CloudCalls.deleteSnapshot;
import static dev.csisupervisor.mockplugin.CloudCalls.deleteVolume;
import static dev.csisupervisor.mockplugin.CloudCalls.fromSnapshot;
import static dev.csisupervisor.mockplugin.CloudCalls.fromVolume;
import static dev.csisupervisor.mockplugin.CloudCalls.restore;
import static dev.csisupervisor.mockplugin.CloudCalls.snapshot;
import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static dev.csisupervisor.mockplugin.Csi.statusOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.CapacityRange;
import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.CreateSnapshotRequest;
import dev.csisupervisor.csi.v1.ListSnapshotsRequest;
import dev.csisupervisor.csi.v1.ListSnapshotsResponse;
import dev.csisupervisor.csi.v1.Snapshot;
import dev.csisupervisor.csi.v1.Volume;
import io.grpc.Status;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Snapshots, restores and clones of the mock plugin, on a shared cloud (two plugins, as two processes on one cloud
 * file) and on the in-memory driver alone, over real unix sockets: by name, timed cuts and readiness, dependent
 * snapshots, sizes, and the bytes they copy. The plugins run with the mock's default capabilities.
 */
@Timeout(60)
class MockCloudSnapshotsTest extends MockCloudTestBase {

  @Test
  void aControllerByDefault_advertisesSnapshotsAndClones_butNotModifyOrCapacity() throws Exception {
    start(false, b -> b);
    List<ControllerServiceCapability.RPC.Type> caps = ca.controller()
        .controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList()
        .stream().map(c -> c.getRpc().getType()).toList();
    assertTrue(caps.containsAll(List.of(ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
        ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS, ControllerServiceCapability.RPC.Type.CLONE_VOLUME)),
        caps.toString());
    assertFalse(caps.contains(ControllerServiceCapability.RPC.Type.MODIFY_VOLUME), caps.toString());
    assertFalse(caps.contains(ControllerServiceCapability.RPC.Type.GET_CAPACITY), caps.toString());
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void aSnapshotByName_isTheSameInEveryProcess_andTheNameWithAnotherSourceIsAlreadyExists(boolean shared)
      throws Exception {
    start(shared, b -> b);
    String vol = create(ca, "v", 2 * MIB).getVolumeId();
    Snapshot cut = snapshot(ca, "daily", vol);
    assertEquals(vol, cut.getSourceVolumeId());
    assertEquals(2 * MIB, cut.getSizeBytes());
    assertTrue(cut.getReadyToUse());
    assertEquals(cut, snapshot(cb, "daily", vol), "sent again by name (through another process): the same");
    String other = create(cb, "w", MIB).getVolumeId();
    Status s = statusOf(() -> snapshot(cb, "daily", other));
    assertEquals(Status.Code.ALREADY_EXISTS, s.getCode());
    assertTrue(s.getDescription().contains(vol), s.getDescription());
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> snapshot(ca, "x", "no-such-volume")));
    if (shared) {
      assertEquals(1, cloud().snapshots().list().size(), "one snapshot in the cloud");
      assertTrue(Files.readString(cloudFile()).contains("snapshot " + cut.getSnapshotId() + " " + vol + " "));
    }
  }

  @Test
  void restoredAndClonedDisks_areNamedInTheCloud_andACreateSentAgainThroughAnotherProcessAnswersTheSameDisk()
      throws Exception {
    start(true, b -> b);
    String vol = create(ca, "v", MIB).getVolumeId();
    String snap = snapshot(ca, "s", vol).getSnapshotId();
    Volume restored = restore(ca, "r", snap);
    assertEquals(restored, restore(cb, "r", snap));
    assertEquals(fromSnapshot(snap), restored.getContentSource());
    Volume cloned = cloneOf(cb, "c", vol);
    assertEquals(cloned, cloneOf(ca, "c", vol));
    assertEquals(fromVolume(vol), cloned.getContentSource());
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> cloneOf(cb, "r", vol)), "the name with another source");
    assertEquals(3, Files.readString(cloudFile()).lines().filter(l -> l.startsWith("disk ")).count());
    assertEquals(List.of("v", "r", "c"), cloud().disks().stream().map(SharedCloud.Disk::name).toList());
  }

  @Test
  void restoreAndClone_holdTheBytesWrittenBefore() throws Exception {
    start(true, b -> b);
    String vol = create(ca, "v", MIB).getVolumeId();
    DiskData data = cloud().data();
    assertEquals(cloudFile().resolveSibling("cloud.data"), data.root(), "beside the cloud file");
    Files.createDirectories(data.diskDir(vol).resolve("sub"));
    Files.writeString(data.diskDir(vol).resolve("sub/hello"), "before the snapshot");
    String snap = snapshot(ca, "s", vol).getSnapshotId();
    Files.writeString(data.diskDir(vol).resolve("sub/hello"), "after the snapshot");

    String restored = restore(cb, "r", snap).getVolumeId();
    String cloned = cloneOf(cb, "c", vol).getVolumeId();
    assertEquals("before the snapshot", Files.readString(data.diskDir(restored).resolve("sub/hello")));
    assertEquals("after the snapshot", Files.readString(data.diskDir(cloned).resolve("sub/hello")));

    deleteSnapshot(ca, snap);
    deleteVolume(cb, cloned);
    assertFalse(Files.exists(data.diskDir(cloned)), "a deleted disk's bytes go with it");
    assertEquals(List.of(), Files.list(data.root().resolve("snapshots")).toList(), "and a snapshot's");
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void aRestoreOrCloneWithoutASize_isItsSourcesSize_andALimitBelowTheSourceIsOutOfRange(boolean shared)
      throws Exception {
    start(shared, b -> b);
    String vol = create(ca, "v", 4 * MIB).getVolumeId();
    String snap = snapshot(ca, "s", vol).getSnapshotId();
    assertEquals(4 * MIB, restore(cb, "r", snap).getCapacityBytes());
    assertEquals(4 * MIB, cloneOf(cb, "c", vol).getCapacityBytes());
    assertEquals(8 * MIB, cb.controller().createVolume(createRequest("big", 8 * MIB)
        .setVolumeContentSource(fromSnapshot(snap)).build()).getVolume().getCapacityBytes());
    Status small = statusOf(() -> cb.controller().createVolume(createRequest("small", 0)
        .setCapacityRange(CapacityRange.newBuilder().setLimitBytes(2 * MIB))
        .setVolumeContentSource(fromSnapshot(snap)).build()));
    assertEquals(Status.Code.OUT_OF_RANGE, small.getCode(), "CSI: smaller than the source");
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> restore(cb, "x", "snap-404")));
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> cloneOf(cb, "y", "vol-404")));
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void duringACut_theSameNameIsAborted_inEveryProcess_andTheFirstCallIsAnsweredWhenItIsCut(boolean shared)
      throws Exception {
    start(shared, b -> b.snapshotTime(Duration.ofMillis(1500)));
    String vol = create(ca, "v", MIB).getVolumeId();
    var first = ControllerGrpc.newFutureStub(ca.channel).withDeadlineAfter(20, TimeUnit.SECONDS)
        .createSnapshot(CreateSnapshotRequest.newBuilder().setName("s").setSourceVolumeId(vol).build());
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
        .until(() -> codeOf(() -> snapshot(cb, "s", vol)) == Status.Code.ABORTED);
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> waits.pendingCount() == 1);
    waits.forwardTime(Duration.ofMillis(1499));
    assertFalse(first.isDone(), "answered when cut, not before");
    clock.advance(Duration.ofMillis(1500)); // the cut is over by the clocks of both processes
    waits.forwardTime(Duration.ofMillis(1));
    Snapshot cut = first.get(20, TimeUnit.SECONDS).getSnapshot();
    assertTrue(cut.getReadyToUse());
    assertEquals(cut, snapshot(cb, "s", vol));
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void aSnapshotIsNotReadyUntilItsReadyTime_asCreateSnapshotSentAgainAndListSnapshotsSay(boolean shared)
      throws Exception {
    start(shared, b -> b.snapshotReadyTime(Duration.ofSeconds(10)));
    String vol = create(ca, "v", MIB).getVolumeId();
    Snapshot cut = snapshot(ca, "s", vol);
    assertFalse(cut.getReadyToUse());
    assertFalse(list(cb, ListSnapshotsRequest.getDefaultInstance()).getEntries(0).getSnapshot().getReadyToUse());
    Status early = statusOf(() -> restore(cb, "r", cut.getSnapshotId()));
    assertEquals(Status.Code.FAILED_PRECONDITION, early.getCode());
    assertTrue(early.getDescription().contains("not ready"), early.getDescription());

    clock.advance(Duration.ofSeconds(10));
    assertTrue(snapshot(cb, "s", vol).getReadyToUse(), "sent again by name: ready now");
    assertTrue(list(ca, ListSnapshotsRequest.getDefaultInstance()).getEntries(0).getSnapshot().getReadyToUse());
    restore(cb, "r", cut.getSnapshotId());
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void dependentSnapshots_keepASnapshotWithRestoredVolumes_andAVolumeWithSnapshots_namingThem(boolean shared)
      throws Exception {
    start(shared, MockCsiPlugin.Builder::dependentSnapshots);
    String vol = create(ca, "v", MIB).getVolumeId();
    String snap = snapshot(ca, "s", vol).getSnapshotId();
    String restored = restore(cb, "r", snap).getVolumeId();

    Status s = statusOf(() -> deleteSnapshot(cb, snap));
    assertEquals(Status.Code.FAILED_PRECONDITION, s.getCode());
    assertTrue(s.getDescription().contains(restored), s.getDescription());
    Status v = statusOf(() -> deleteVolume(ca, vol));
    assertEquals(Status.Code.FAILED_PRECONDITION, v.getCode());
    assertTrue(v.getDescription().contains(snap), v.getDescription());

    deleteVolume(cb, restored);
    deleteSnapshot(ca, snap);
    deleteVolume(cb, vol);
    assertEquals(0, list(ca, ListSnapshotsRequest.getDefaultInstance()).getEntriesCount());
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void independentSnapshots_byDefault_areDeletedFreely(boolean shared) throws Exception {
    start(shared, b -> b);
    String vol = create(ca, "v", MIB).getVolumeId();
    String snap = snapshot(ca, "s", vol).getSnapshotId();
    String restored = restore(cb, "r", snap).getVolumeId();
    deleteVolume(cb, vol);
    deleteSnapshot(ca, snap);
    deleteSnapshot(ca, snap); // CSI: deleting an unknown snapshot is success
    assertEquals(restored, cb.controller().controllerGetVolume(dev.csisupervisor.csi.v1.ControllerGetVolumeRequest
        .newBuilder().setVolumeId(restored).build()).getVolume().getVolumeId(), "the restored volume stays");
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void listSnapshots_filtersBySourceOrId_pages_andABadTokenIsAborted(boolean shared) throws Exception {
    start(shared, b -> b);
    String v = create(ca, "v", MIB).getVolumeId();
    String w = create(cb, "w", MIB).getVolumeId();
    Snapshot v1 = snapshot(ca, "v1", v);
    Snapshot w1 = snapshot(cb, "w1", w);
    Snapshot v2 = snapshot(cb, "v2", v);

    ListSnapshotsResponse first = list(cb, ListSnapshotsRequest.newBuilder().setMaxEntries(2).build());
    assertEquals(List.of(v1, w1), first.getEntriesList().stream().map(ListSnapshotsResponse.Entry::getSnapshot)
        .toList());
    assertNotEquals("", first.getNextToken());
    ListSnapshotsResponse rest = list(ca, ListSnapshotsRequest.newBuilder().setStartingToken(first.getNextToken())
        .build());
    assertEquals(List.of(v2), rest.getEntriesList().stream().map(ListSnapshotsResponse.Entry::getSnapshot).toList());
    assertEquals("", rest.getNextToken());
    assertEquals(List.of(v1, v2), list(ca, ListSnapshotsRequest.newBuilder().setSourceVolumeId(v).build())
        .getEntriesList().stream().map(ListSnapshotsResponse.Entry::getSnapshot).toList());
    assertEquals(List.of(w1), list(ca, ListSnapshotsRequest.newBuilder().setSnapshotId(w1.getSnapshotId()).build())
        .getEntriesList().stream().map(ListSnapshotsResponse.Entry::getSnapshot).toList());
    assertEquals(Status.Code.ABORTED,
        codeOf(() -> list(ca, ListSnapshotsRequest.newBuilder().setStartingToken("zz").build())));
  }

  private static ListSnapshotsResponse list(Csi c, ListSnapshotsRequest r) {
    return c.controller().listSnapshots(r);
  }
}
