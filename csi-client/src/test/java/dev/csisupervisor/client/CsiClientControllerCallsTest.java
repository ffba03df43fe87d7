package dev.csisupervisor.client;

import static dev.csisupervisor.client.VolumeRpc.await;
import static dev.csisupervisor.client.VolumeRpc.failureOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Int64Value;
import com.google.protobuf.Timestamp;
import dev.csisupervisor.csi.v1.ControllerGetVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.CreateSnapshotResponse;
import dev.csisupervisor.csi.v1.GetCapacityResponse;
import dev.csisupervisor.csi.v1.ListVolumesResponse;
import dev.csisupervisor.csi.v1.Snapshot;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeCondition;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Controller calls for snapshots, content sources, listing, validation, capacity and modify against the mock
 * plugin's in-memory driver over a real unix socket: each request field arrives as given (the mock's
 * {@code lastRequest}), each answer is mapped, and answers CSI forbids (scripted with {@code replyCalls}) are
 * {@link InvalidResponseException}s naming the field.
 */
@Timeout(30)
class CsiClientControllerCallsTest extends PluginSocketTest {
  private static final long MIB = 1 << 20;
  private static final VolumeCapability RWO = VolumeCapability.mount("ext4", List.of("noatime"),
      AccessMode.SINGLE_NODE_WRITER);
  private static final VolumeCapability BLOCK = VolumeCapability.block(AccessMode.MULTI_NODE_READER_ONLY);
  private static final Secrets SECRETS = Secrets.of(Map.of("token", "s3cr3t"));

  @BeforeEach
  void startPluginAndClient() throws Exception {
    plugin = MockCsiPlugin.builder().socket(socket).allCapabilities().start();
    client = CsiClient.create(socket);
  }

  private <Q> Q lastRequest(io.grpc.MethodDescriptor<Q, ?> method) {
    return plugin.lastRequest(method).orElseThrow(() -> new AssertionError("no " + method.getBareMethodName()));
  }

  private CsiVolume create(String name, long bytes) throws Exception {
    return await(client.createVolumeAsync(new CreateVolumeRequest(name, Optional.of(CapacityRange.atLeast(bytes)),
        List.of(RWO), Map.of(), Secrets.none())));
  }

  // ---- snapshots ----

  @Test
  void createSnapshot_sendsEveryField_andMapsTheSnapshot() throws Exception {
    String vol = create("data", 2 * MIB).volumeId();
    CsiSnapshot s = await(client.createSnapshotAsync(new CreateSnapshotRequest(vol, "daily", Map.of("k", "v"),
        SECRETS)));

    var sent = lastRequest(ControllerGrpc.getCreateSnapshotMethod());
    assertEquals(vol, sent.getSourceVolumeId());
    assertEquals("daily", sent.getName());
    assertEquals(Map.of("k", "v"), sent.getParametersMap());
    assertEquals(Map.of("token", "s3cr3t"), sent.getSecretsMap());
    assertEquals(vol, s.sourceVolumeId());
    assertEquals(2 * MIB, s.sizeBytes());
    assertTrue(s.readyToUse());
    assertTrue(s.creationTime().isPresent());
    // Sent again by name: the same snapshot.
    assertEquals(s, await(client.createSnapshotAsync(new CreateSnapshotRequest(vol, "daily", Map.of(), SECRETS))));
  }

  @Test
  void createSnapshot_mapsTimeAndReadiness_andAnAbsentTimeIsEmpty() throws Exception {
    Snapshot cut = Snapshot.newBuilder().setSnapshotId("snap-9").setSourceVolumeId("vol-1").setSizeBytes(5)
        .setCreationTime(Timestamp.newBuilder().setSeconds(1_700_000_000).setNanos(5)).setReadyToUse(false).build();
    plugin.replyCalls(ControllerGrpc.getCreateSnapshotMethod(), CreateSnapshotResponse.newBuilder().setSnapshot(cut)
        .build(), 1);
    plugin.replyCalls(ControllerGrpc.getCreateSnapshotMethod(), CreateSnapshotResponse.newBuilder()
        .setSnapshot(cut.toBuilder().clearCreationTime().setReadyToUse(true)).build(), 1);
    CreateSnapshotRequest r = new CreateSnapshotRequest("vol-1", "s", Map.of(), Secrets.none());

    assertEquals(new CsiSnapshot("snap-9", "vol-1", 5, Optional.of(Instant.ofEpochSecond(1_700_000_000, 5)), false),
        await(client.createSnapshotAsync(r)));
    assertEquals(new CsiSnapshot("snap-9", "vol-1", 5, Optional.empty(), true), await(client.createSnapshotAsync(r)));
  }

  @Test
  void createSnapshot_answerWithoutIdsOrWithANegativeSize_isInvalidResponse_namingTheField() throws Exception {
    Snapshot good = Snapshot.newBuilder().setSnapshotId("snap-9").setSourceVolumeId("vol-1").build();
    CreateSnapshotRequest r = new CreateSnapshotRequest("vol-1", "s", Map.of(), Secrets.none());
    List<Map.Entry<CreateSnapshotResponse, String>> cases = List.of(
        Map.entry(CreateSnapshotResponse.getDefaultInstance(), "snapshot is missing, but CSI requires it"),
        Map.entry(CreateSnapshotResponse.newBuilder().setSnapshot(good.toBuilder().clearSnapshotId()).build(),
            "snapshot.snapshot_id is empty, but CSI requires it"),
        Map.entry(CreateSnapshotResponse.newBuilder().setSnapshot(good.toBuilder().clearSourceVolumeId()).build(),
            "snapshot.source_volume_id is empty, but CSI requires it"),
        Map.entry(CreateSnapshotResponse.newBuilder().setSnapshot(good.toBuilder().setSizeBytes(-3)).build(),
            "snapshot.size_bytes is -3, but CSI forbids negative values"));
    for (var c : cases) {
      plugin.replyCalls(ControllerGrpc.getCreateSnapshotMethod(), c.getKey(), 1);
      InvalidResponseException e = assertInstanceOf(InvalidResponseException.class,
          failureOf(client.createSnapshotAsync(r)));
      assertTrue(e.getMessage().endsWith(c.getValue()), e.getMessage());
    }
  }

  @Test
  void deleteSnapshot_sendsIdAndSecrets_andListSnapshotsNoLongerHasIt() throws Exception {
    String vol = create("data", MIB).volumeId();
    CsiSnapshot s = await(client.createSnapshotAsync(new CreateSnapshotRequest(vol, "a", Map.of(), Secrets.none())));
    await(client.deleteSnapshotAsync(s.snapshotId(), SECRETS));
    assertEquals(s.snapshotId(), lastRequest(ControllerGrpc.getDeleteSnapshotMethod()).getSnapshotId());
    assertEquals(Map.of("token", "s3cr3t"), lastRequest(ControllerGrpc.getDeleteSnapshotMethod()).getSecretsMap());
    assertEquals(List.of(), await(client.listSnapshotsAsync(ListSnapshotsRequest.all())).entries());
    await(client.deleteSnapshotAsync(s.snapshotId(), SECRETS)); // CSI: an unknown id is success
  }

  @Test
  void listSnapshots_pagesWithTheToken_andFiltersBySourceOrId() throws Exception {
    String a = create("a", MIB).volumeId();
    String b = create("b", MIB).volumeId();
    CsiSnapshot a1 = await(client.createSnapshotAsync(new CreateSnapshotRequest(a, "a1", Map.of(), Secrets.none())));
    CsiSnapshot a2 = await(client.createSnapshotAsync(new CreateSnapshotRequest(a, "a2", Map.of(), Secrets.none())));
    CsiSnapshot b1 = await(client.createSnapshotAsync(new CreateSnapshotRequest(b, "b1", Map.of(), Secrets.none())));

    SnapshotPage first = await(client.listSnapshotsAsync(new ListSnapshotsRequest(2, Optional.empty(),
        Optional.empty(), Optional.empty(), SECRETS)));
    assertEquals(List.of(a1, a2), first.entries());
    assertTrue(first.nextToken().isPresent());
    var sent = lastRequest(ControllerGrpc.getListSnapshotsMethod());
    assertEquals(2, sent.getMaxEntries());
    assertEquals(Map.of("token", "s3cr3t"), sent.getSecretsMap());
    SnapshotPage second = await(client.listSnapshotsAsync(new ListSnapshotsRequest(2, first.nextToken(),
        Optional.empty(), Optional.empty(), Secrets.none())));
    assertEquals(List.of(b1), second.entries());
    assertEquals(Optional.empty(), second.nextToken());
    assertEquals(first.nextToken().get(), lastRequest(ControllerGrpc.getListSnapshotsMethod()).getStartingToken());

    assertEquals(List.of(b1), await(client.listSnapshotsAsync(new ListSnapshotsRequest(0, Optional.empty(),
        Optional.of(b), Optional.empty(), Secrets.none()))).entries());
    assertEquals(b, lastRequest(ControllerGrpc.getListSnapshotsMethod()).getSourceVolumeId());
    assertEquals(List.of(a2), await(client.listSnapshotsAsync(new ListSnapshotsRequest(0, Optional.empty(),
        Optional.empty(), Optional.of(a2.snapshotId()), Secrets.none()))).entries());
    assertEquals(a2.snapshotId(), lastRequest(ControllerGrpc.getListSnapshotsMethod()).getSnapshotId());
  }

  @Test
  void listSnapshots_withATokenThePluginNeverIssued_isItsAborted() throws Exception {
    CsiStatusException e = assertInstanceOf(CsiStatusException.class, failureOf(client.listSnapshotsAsync(
        new ListSnapshotsRequest(0, Optional.of("bogus"), Optional.empty(), Optional.empty(), Secrets.none()))));
    assertEquals(StatusCode.ABORTED, e.code());
  }

  // ---- content source, mutable parameters ----

  @Test
  void createVolume_fromASnapshotOrAVolume_sendsTheSource_andMapsTheSourceAnswered() throws Exception {
    String vol = create("data", 4 * MIB).volumeId();
    CsiSnapshot s = await(client.createSnapshotAsync(new CreateSnapshotRequest(vol, "s", Map.of(), Secrets.none())));
    CreateVolumeRequest base = new CreateVolumeRequest("restored", Optional.empty(), List.of(RWO), Map.of(),
        Secrets.none());

    CsiVolume restored = await(client.createVolumeAsync(base.withContentSource(ContentSource.snapshot(
        s.snapshotId()))));
    var sent = lastRequest(ControllerGrpc.getCreateVolumeMethod()).getVolumeContentSource();
    assertEquals(VolumeContentSource.TypeCase.SNAPSHOT, sent.getTypeCase());
    assertEquals(s.snapshotId(), sent.getSnapshot().getSnapshotId());
    assertEquals(Optional.of(ContentSource.snapshot(s.snapshotId())), restored.contentSource());
    assertEquals(4 * MIB, restored.capacityBytes(), "without a size: the source's");

    CreateVolumeRequest clone = new CreateVolumeRequest("clone", Optional.empty(), List.of(RWO), Map.of(),
        Secrets.none()).withContentSource(ContentSource.volume(vol));
    CsiVolume cloned = await(client.createVolumeAsync(clone));
    assertEquals(vol, lastRequest(ControllerGrpc.getCreateVolumeMethod()).getVolumeContentSource().getVolume()
        .getVolumeId());
    assertEquals(Optional.of(ContentSource.volume(vol)), cloned.contentSource());
  }

  @Test
  void createVolume_withoutASource_sendsNone_andMapsNone() throws Exception {
    CsiVolume v = create("data", MIB);
    assertFalse(lastRequest(ControllerGrpc.getCreateVolumeMethod()).hasVolumeContentSource());
    assertEquals(Optional.empty(), v.contentSource());
    assertEquals(Map.of(), lastRequest(ControllerGrpc.getCreateVolumeMethod()).getMutableParamsMap());
  }

  @Test
  void createVolume_sendsMutableParameters_asTheSpecsMutableParametersField() throws Exception {
    plugin.replyCalls(ControllerGrpc.getCreateVolumeMethod(), dev.csisupervisor.csi.v1.CreateVolumeResponse
        .newBuilder().setVolume(Volume.newBuilder().setVolumeId("v-1")).build(), 1);
    await(client.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(), List.of(RWO), Map.of("a", "1"),
        Secrets.none()).withMutableParameters(Map.of("iops", "3000"))));
    var sent = lastRequest(ControllerGrpc.getCreateVolumeMethod());
    assertEquals(Map.of("iops", "3000"), sent.getMutableParamsMap());
    assertEquals(Map.of("a", "1"), sent.getParametersMap());
    assertEquals(8, sent.getDescriptorForType().findFieldByName("mutable_params").getNumber(),
        "field 8, the spec's mutable_parameters on the wire");
  }

  @Test
  void controllerModify_sendsIdParametersAndSecrets_andThePluginsRefusalIsItsStatus() throws Exception {
    String vol = create("data", MIB).volumeId();
    // The in-memory driver without --mutable-parameters accepts no key: INVALID_ARGUMENT, as CSI says.
    CsiStatusException e = assertInstanceOf(CsiStatusException.class, failureOf(client.controllerModifyVolumeAsync(
        vol, Map.of("iops", "3000"), SECRETS)));
    assertEquals(StatusCode.INVALID_ARGUMENT, e.code());
    var sent = lastRequest(ControllerGrpc.getControllerModifyVolumeMethod());
    assertEquals(vol, sent.getVolumeId());
    assertEquals(Map.of("iops", "3000"), sent.getMutableParametersMap());
    assertEquals(Map.of("token", "s3cr3t"), sent.getSecretsMap());

    plugin.replyCalls(ControllerGrpc.getControllerModifyVolumeMethod(),
        dev.csisupervisor.csi.v1.ControllerModifyVolumeResponse.getDefaultInstance(), 1);
    assertEquals(null, await(client.controllerModifyVolumeAsync(vol, Map.of("iops", "1"), Secrets.none())));
  }

  // ---- list, get, validate, capacity ----

  @Test
  void listVolumes_pagesWithTheToken_andMapsPublishedNodesAndCondition() throws Exception {
    String a = create("a", MIB).volumeId();
    String b = create("b", 2 * MIB).volumeId();
    await(client.controllerPublishVolumeAsync(new ControllerPublishRequest(a, "node-1", RWO, false, Secrets.none(),
        Map.of())));

    VolumePage first = await(client.listVolumesAsync(1, Optional.empty()));
    assertEquals(1, lastRequest(ControllerGrpc.getListVolumesMethod()).getMaxEntries());
    assertEquals(1, first.entries().size());
    VolumeEntry e = first.entries().get(0);
    assertEquals(a, e.volume().volumeId());
    assertEquals(List.of("node-1"), e.publishedNodeIds());
    assertEquals(Optional.of(new VolumeStats.Condition(false, "volume is healthy")), e.condition());
    VolumePage second = await(client.listVolumesAsync(0, first.nextToken()));
    assertEquals(first.nextToken().orElseThrow(), lastRequest(ControllerGrpc.getListVolumesMethod())
        .getStartingToken());
    assertEquals(List.of(b), second.entries().stream().map(x -> x.volume().volumeId()).toList());
    assertEquals(List.of(), second.entries().get(0).publishedNodeIds());
    assertEquals(Optional.empty(), second.nextToken());
  }

  @Test
  void listVolumes_answerWithoutAVolumeOrWithAnAbsentCondition_isInvalidOrEmpty() throws Exception {
    plugin.replyCalls(ControllerGrpc.getListVolumesMethod(), ListVolumesResponse.newBuilder()
        .addEntries(ListVolumesResponse.Entry.newBuilder().setVolume(Volume.newBuilder().setVolumeId("v-1")))
        .addEntries(ListVolumesResponse.Entry.getDefaultInstance()).build(), 1);
    InvalidResponseException bad = assertInstanceOf(InvalidResponseException.class,
        failureOf(client.listVolumesAsync(0, Optional.empty())));
    assertTrue(bad.getMessage().endsWith("entries[1].volume.volume_id is empty, but CSI requires it"),
        bad.getMessage());

    plugin.replyCalls(ControllerGrpc.getListVolumesMethod(), ListVolumesResponse.newBuilder()
        .addEntries(ListVolumesResponse.Entry.newBuilder().setVolume(Volume.newBuilder().setVolumeId("v-1")))
        .build(), 1);
    VolumeEntry only = await(client.listVolumesAsync(0, Optional.empty())).entries().get(0);
    assertEquals(Optional.empty(), only.condition());
    assertEquals(List.of(), only.publishedNodeIds());
  }

  @Test
  void listVolumes_withATokenThePluginNeverIssued_isItsAborted() throws Exception {
    CsiStatusException e = assertInstanceOf(CsiStatusException.class,
        failureOf(client.listVolumesAsync(0, Optional.of("zzz"))));
    assertEquals(StatusCode.ABORTED, e.code());
  }

  @Test
  void controllerGetVolume_mapsVolumeNodesAndAnAbnormalCondition() throws Exception {
    String a = create("a", MIB).volumeId();
    await(client.controllerPublishVolumeAsync(new ControllerPublishRequest(a, "node-1", RWO, false, Secrets.none(),
        Map.of())));
    VolumeEntry e = await(client.controllerGetVolumeAsync(a));
    assertEquals(a, lastRequest(ControllerGrpc.getControllerGetVolumeMethod()).getVolumeId());
    assertEquals(new CsiVolume(a, MIB, Map.of("name", "a"), List.of()), e.volume());
    assertEquals(List.of("node-1"), e.publishedNodeIds());

    plugin.replyCalls(ControllerGrpc.getControllerGetVolumeMethod(), ControllerGetVolumeResponse.newBuilder()
        .setVolume(Volume.newBuilder().setVolumeId(a))
        .setStatus(ControllerGetVolumeResponse.VolumeStatus.newBuilder().addPublishedNodeIds("n2")
            .addPublishedNodeIds("n1").setVolumeCondition(VolumeCondition.newBuilder().setAbnormal(true)
                .setMessage("disk gone"))).build(), 1);
    VolumeEntry sick = await(client.controllerGetVolumeAsync(a));
    assertEquals(List.of("n1", "n2"), sick.publishedNodeIds());
    assertEquals(Optional.of(new VolumeStats.Condition(true, "disk gone")), sick.condition());

    CsiStatusException unknown = assertInstanceOf(CsiStatusException.class,
        failureOf(client.controllerGetVolumeAsync("nope")));
    assertEquals(StatusCode.NOT_FOUND, unknown.code());
  }

  @Test
  void validate_sendsEveryField_andMapsTheConfirmedCapabilities() throws Exception {
    String a = await(client.createVolumeAsync(new CreateVolumeRequest("a", Optional.empty(), List.of(RWO, BLOCK),
        Map.of(), Secrets.none()))).volumeId();
    ValidationResult r = await(client.validateVolumeCapabilitiesAsync(new ValidateCapabilitiesRequest(a,
        Map.of("ctx", "1"), List.of(RWO, BLOCK), Map.of("p", "2"), Map.of("iops", "3"), SECRETS)));
    var sent = lastRequest(ControllerGrpc.getValidateVolumeCapabilitiesMethod());
    assertEquals(a, sent.getVolumeId());
    assertEquals(Map.of("ctx", "1"), sent.getVolumeContextMap());
    assertEquals(2, sent.getVolumeCapabilitiesCount());
    assertEquals(Map.of("p", "2"), sent.getParametersMap());
    assertEquals(Map.of("iops", "3"), sent.getMutableParamsMap());
    assertEquals(Map.of("token", "s3cr3t"), sent.getSecretsMap());
    assertTrue(r.isConfirmed());
    assertEquals(List.of(RWO, BLOCK), r.confirmed().orElseThrow().capabilities());
  }

  @Test
  void validate_notConfirmed_isTheMessage_andAnUnreadableConfirmedCapabilityIsInvalid() throws Exception {
    plugin.replyCalls(ControllerGrpc.getValidateVolumeCapabilitiesMethod(), ValidateVolumeCapabilitiesResponse
        .newBuilder().setMessage("made for block only").build(), 1);
    ValidationResult no = await(client.validateVolumeCapabilitiesAsync(ValidateCapabilitiesRequest.of("v",
        List.of(RWO))));
    assertEquals(new ValidationResult(Optional.empty(), "made for block only"), no);
    assertFalse(no.isConfirmed());

    plugin.replyCalls(ControllerGrpc.getValidateVolumeCapabilitiesMethod(), ValidateVolumeCapabilitiesResponse
        .newBuilder().setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
            .addVolumeCapabilities(VolumeProtos.capability(RWO).toBuilder().setAccessMode(
                dev.csisupervisor.csi.v1.VolumeCapability.AccessMode.newBuilder().setModeValue(42)))).build(), 1);
    InvalidResponseException e = assertInstanceOf(InvalidResponseException.class,
        failureOf(client.validateVolumeCapabilitiesAsync(ValidateCapabilitiesRequest.of("v", List.of(RWO)))));
    assertTrue(e.getMessage().endsWith("confirmed.volume_capabilities[0].access_mode.mode is 42, not an access mode "
        + "this client knows"), e.getMessage());
  }

  @Test
  void getCapacity_sendsCapabilitiesParametersAndTopology_andMapsTheSizes() throws Exception {
    await(client.getCapacityAsync(new CapacityRequest(List.of(BLOCK), Map.of("tier", "fast"),
        Optional.of(Map.of("zone", "z1")))));
    var sent = lastRequest(ControllerGrpc.getGetCapacityMethod());
    assertEquals(1, sent.getVolumeCapabilitiesCount());
    assertEquals(Map.of("tier", "fast"), sent.getParametersMap());
    assertEquals(Map.of("zone", "z1"), sent.getAccessibleTopology().getSegmentsMap());

    plugin.replyCalls(ControllerGrpc.getGetCapacityMethod(), GetCapacityResponse.newBuilder()
        .setAvailableCapacity(100).setMaximumVolumeSize(Int64Value.of(50)).build(), 1);
    assertEquals(new CsiCapacity(100, OptionalLong.of(50), OptionalLong.empty()),
        await(client.getCapacityAsync(CapacityRequest.any())));
    assertFalse(lastRequest(ControllerGrpc.getGetCapacityMethod()).hasAccessibleTopology());

    plugin.replyCalls(ControllerGrpc.getGetCapacityMethod(), GetCapacityResponse.newBuilder()
        .setAvailableCapacity(-1).build(), 1);
    InvalidResponseException e = assertInstanceOf(InvalidResponseException.class,
        failureOf(client.getCapacityAsync(CapacityRequest.any())));
    assertTrue(e.getMessage().endsWith("available_capacity is -1, but CSI forbids negative values"), e.getMessage());
  }

  // ---- arguments ----

  @Test
  void badArguments_areRefusedBeforeAnyCall_namingTheField() {
    assertMessage("snapshotId must not be blank", () -> client.deleteSnapshotAsync(" ", Secrets.none()));
    assertMessage("maxEntries must not be negative", () -> client.listVolumesAsync(-1, Optional.empty()));
    assertMessage("startingToken must not be blank", () -> client.listVolumesAsync(0, Optional.of("")));
    assertMessage("volumeId must not be blank", () -> client.controllerGetVolumeAsync(""));
    assertMessage("mutableParameters must not be empty",
        () -> client.controllerModifyVolumeAsync("v", Map.of(), Secrets.none()));
    assertMessage("mutableParameters must not have a blank key",
        () -> client.controllerModifyVolumeAsync("v", Map.of(" ", "x"), Secrets.none()));
    assertMessage("sourceVolumeId must not be blank",
        () -> new CreateSnapshotRequest("", "n", Map.of(), Secrets.none()));
    assertMessage("name must not be blank", () -> new CreateSnapshotRequest("v", " ", Map.of(), Secrets.none()));
    assertMessage("capabilities must not be empty", () -> ValidateCapabilitiesRequest.of("v", List.of()));
    assertMessage("accessibleTopology must not be an empty segment map", () -> CapacityRequest.in(Map.of()));
    assertMessage("snapshotId must not be blank", () -> ContentSource.snapshot(""));
    assertMessage("volumeId must not be blank", () -> ContentSource.volume(""));
    assertMessage("snapshotId must not be blank", () -> new ListSnapshotsRequest(0, Optional.empty(),
        Optional.empty(), Optional.of(""), Secrets.none()));
    assertMessage("mutableParameters must not have a blank key", () -> new CreateVolumeRequest("n", Optional.empty(),
        List.of(RWO), Map.of(), Secrets.none()).withMutableParameters(Map.of("", "x")));
    assertEquals(0, plugin.callCount(ControllerGrpc.getControllerModifyVolumeMethod()));
  }

  private static void assertMessage(String start, org.junit.jupiter.api.function.Executable call) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
    assertTrue(e.getMessage().startsWith(start), e.getMessage());
  }
}
