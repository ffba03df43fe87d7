package dev.csisupervisor.client;

import static dev.csisupervisor.client.VolumeRpc.await;
import static dev.csisupervisor.client.VolumeRpc.failureOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerExpandVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeResponse;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.NodeExpandVolumeRequest;
import dev.csisupervisor.csi.v1.NodeExpandVolumeResponse;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsRequest;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsResponse;
import dev.csisupervisor.csi.v1.NodeGrpc;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeCondition;
import dev.csisupervisor.csi.v1.VolumeUsage;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Every volume call of {@link CsiClient} against the mock plugin's in-memory driver over a real
 * unix socket: each request field arrives at the plugin as given (read back with the mock's
 * {@code lastRequest}), and each response is mapped.
 */
@Timeout(30)
class CsiClientVolumeCallsTest extends PluginSocketTest {
  private static final long MIB = 1 << 20;
  /** A mount with everything set: file system, two flags, a mount group, a mode needing a capability. */
  private static final VolumeCapability EXT4 = VolumeCapability.mount("ext4", List.of("noatime", "discard"),
      AccessMode.SINGLE_NODE_MULTI_WRITER).withVolumeMountGroup("1000");
  private static final VolumeCapability BLOCK = VolumeCapability.block(AccessMode.MULTI_NODE_READER_ONLY);
  private static final Secrets SECRETS = Secrets.of(Map.of("token", "s3cr3t", "user", "admin"));

  private Path staging;
  private Path target;

  @BeforeEach
  void startPluginAndClient() throws Exception {
    plugin = MockCsiPlugin.builder().socket(socket).allCapabilities().start();
    client = CsiClient.create(socket);
    staging = Files.createDirectory(dir.resolve("staging"));
    target = dir.resolve("target");
  }

  private <Q> Q lastRequest(io.grpc.MethodDescriptor<Q, ?> method) {
    return plugin.lastRequest(method).orElseThrow(() -> new AssertionError("no " + method.getBareMethodName()));
  }

  private CsiVolume create(String name, long bytes) throws Exception {
    return await(client.createVolumeAsync(new CreateVolumeRequest(name, Optional.of(CapacityRange.atLeast(bytes)),
        List.of(EXT4), Map.of(), Secrets.none())));
  }

  /** Created, published to node-1, staged and published at the target: ready for the node's other calls. */
  private String publishedVolume() throws Exception {
    String id = create("data", MIB).volumeId();
    await(client.controllerPublishVolumeAsync(
        new ControllerPublishRequest(id, "node-1", EXT4, false, Secrets.none(), Map.of())));
    await(client.nodeStageVolumeAsync(new NodeStageRequest(id, Map.of(), staging, EXT4, Secrets.none(), Map.of())));
    await(client.nodePublishVolumeAsync(new NodePublishRequest(id, Map.of(), Optional.of(staging), target, EXT4,
        false, Secrets.none(), Map.of())));
    return id;
  }

  /** What the capability must look like on the wire. */
  private static void assertExt4(dev.csisupervisor.csi.v1.VolumeCapability c) {
    assertTrue(c.hasMount(), c.toString());
    assertEquals("ext4", c.getMount().getFsType());
    assertEquals(List.of("noatime", "discard"), c.getMount().getMountFlagsList());
    assertEquals("1000", c.getMount().getVolumeMountGroup());
    assertEquals(7, c.getAccessMode().getModeValue(), "SINGLE_NODE_MULTI_WRITER is 7");
  }

  // ---- controller ---------------------------------------------------------------------------------

  @Test
  void createVolume_sendsEveryField_andMapsTheVolume() throws Exception {
    CsiVolume v = await(client.createVolumeAsync(new CreateVolumeRequest("data",
        Optional.of(new CapacityRange(MIB, 2 * MIB)), List.of(EXT4, BLOCK), Map.of("tier", "fast"), SECRETS)));

    var sent = lastRequest(ControllerGrpc.getCreateVolumeMethod());
    assertEquals("data", sent.getName());
    assertEquals(MIB, sent.getCapacityRange().getRequiredBytes());
    assertEquals(2 * MIB, sent.getCapacityRange().getLimitBytes());
    assertEquals(2, sent.getVolumeCapabilitiesCount());
    assertExt4(sent.getVolumeCapabilities(0));
    assertTrue(sent.getVolumeCapabilities(1).hasBlock());
    assertEquals(3, sent.getVolumeCapabilities(1).getAccessMode().getModeValue(), "MULTI_NODE_READER_ONLY is 3");
    assertEquals(Map.of("tier", "fast"), sent.getParametersMap());
    assertEquals(Map.of("token", "s3cr3t", "user", "admin"), sent.getSecretsMap());

    assertEquals(new CsiVolume("vol-1", MIB, Map.of("name", "data"), List.of()), v);
  }

  @Test
  void createVolume_sendsAccessibilityRequirements_requisiteAndPreferredInOrder() throws Exception {
    Map<String, String> z1 = Map.of("region", "R1", "zone", "Z1");
    Map<String, String> z2 = Map.of("region", "R1", "zone", "Z2");
    await(client.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(), List.of(BLOCK), Map.of(),
        Secrets.none(), Optional.of(new TopologyRequirement(List.of(z1, z2), List.of(z2))))));

    var sent = lastRequest(ControllerGrpc.getCreateVolumeMethod()).getAccessibilityRequirements();
    assertEquals(List.of(z1, z2), sent.getRequisiteList().stream().map(Topology::getSegmentsMap).toList());
    assertEquals(List.of(z2), sent.getPreferredList().stream().map(Topology::getSegmentsMap).toList());
  }

  @Test
  void createVolume_withoutRequirements_leavesThemUnset() throws Exception {
    await(client.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(), List.of(BLOCK), Map.of(),
        Secrets.none())));
    assertFalse(lastRequest(ControllerGrpc.getCreateVolumeMethod()).hasAccessibilityRequirements());
  }

  @Test
  void createVolume_withoutCapacityRange_leavesItUnset_andGetsThePluginsDefault() throws Exception {
    CsiVolume v = await(client.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(), List.of(BLOCK),
        Map.of(), Secrets.none())));
    var sent = lastRequest(ControllerGrpc.getCreateVolumeMethod());
    assertFalse(sent.hasCapacityRange());
    assertTrue(sent.getSecretsMap().isEmpty());
    assertEquals(1L << 30, v.capacityBytes());
  }

  @Test
  void createVolume_mapsTopologyAndContext() throws Exception {
    plugin.replyCalls(ControllerGrpc.getCreateVolumeMethod(), CreateVolumeResponse.newBuilder()
        .setVolume(Volume.newBuilder().setVolumeId("pv-7").setCapacityBytes(0)
            .putVolumeContext("pool", "a").putVolumeContext("iqn", "iqn.2024-01.example")
            .addAccessibleTopology(Topology.newBuilder().putSegments("zone", "z1"))
            .addAccessibleTopology(Topology.newBuilder().putSegments("zone", "z2").putSegments("rack", "r1")))
        .build(), 1);
    CsiVolume v = create("data", MIB);
    assertEquals(new CsiVolume("pv-7", 0, Map.of("pool", "a", "iqn", "iqn.2024-01.example"),
        List.of(Map.of("zone", "z1"), Map.of("zone", "z2", "rack", "r1"))), v);
  }

  @Test
  void createVolume_answerWithoutAVolumeIdOrWithANegativeSize_isInvalidResponse() throws Exception {
    plugin.replyCalls(ControllerGrpc.getCreateVolumeMethod(), CreateVolumeResponse.getDefaultInstance(), 1);
    plugin.replyCalls(ControllerGrpc.getCreateVolumeMethod(), CreateVolumeResponse.newBuilder()
        .setVolume(Volume.newBuilder().setVolumeId("v").setCapacityBytes(-1)).build(), 1);
    InvalidResponseException noId = assertInstanceOf(InvalidResponseException.class,
        failureOf(client.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(), List.of(EXT4),
            Map.of(), Secrets.none()))));
    assertEquals("csi.v1.Controller/CreateVolume on " + socket
        + " returned an invalid response: volume.volume_id is empty, but CSI requires it", noId.getMessage());
    InvalidResponseException negative = assertInstanceOf(InvalidResponseException.class,
        failureOf(client.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(), List.of(EXT4),
            Map.of(), Secrets.none()))));
    assertTrue(negative.getMessage().endsWith("volume.capacity_bytes is -1, but CSI forbids negative values"),
        negative.getMessage());
  }

  @Test
  void deleteVolume_sendsIdAndSecrets_andTheVolumeIsGone() throws Exception {
    String id = create("data", MIB).volumeId();
    await(client.deleteVolumeAsync(id, SECRETS));
    DeleteVolumeRequest sent = lastRequest(ControllerGrpc.getDeleteVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals(SECRETS.reveal(), sent.getSecretsMap());
    assertEquals("vol-2", create("data", MIB).volumeId(), "a new volume: the old one was deleted");
  }

  @Test
  void controllerPublish_sendsEveryField_andReturnsThePublishContext() throws Exception {
    String id = create("data", MIB).volumeId();
    Map<String, String> context = await(client.controllerPublishVolumeAsync(new ControllerPublishRequest(
        id, "node-1", EXT4, true, SECRETS, Map.of("name", "data", "pool", "a"))));
    assertEquals(Map.of("device", "/dev/mock/" + id), context);

    ControllerPublishVolumeRequest sent = lastRequest(ControllerGrpc.getControllerPublishVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals("node-1", sent.getNodeId());
    assertExt4(sent.getVolumeCapability());
    assertTrue(sent.getReadonly());
    assertEquals(SECRETS.reveal(), sent.getSecretsMap());
    assertEquals(Map.of("name", "data", "pool", "a"), sent.getVolumeContextMap());
  }

  @Test
  void controllerUnpublish_sendsVolumeNodeAndSecrets() throws Exception {
    String id = create("data", MIB).volumeId();
    await(client.controllerPublishVolumeAsync(
        new ControllerPublishRequest(id, "node-1", EXT4, false, Secrets.none(), Map.of())));
    await(client.controllerUnpublishVolumeAsync(id, "node-1", SECRETS));
    ControllerUnpublishVolumeRequest sent = lastRequest(ControllerGrpc.getControllerUnpublishVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals("node-1", sent.getNodeId());
    assertEquals(SECRETS.reveal(), sent.getSecretsMap());
    // Unpublished: publishing again read-only is no conflict with the earlier read-write publish.
    await(client.controllerPublishVolumeAsync(
        new ControllerPublishRequest(id, "node-1", EXT4, true, Secrets.none(), Map.of())));
  }

  @Test
  void controllerExpand_sendsEveryField_andSaysWhetherTheNodeMustExpandToo() throws Exception {
    String id = create("data", MIB).volumeId();
    ControllerExpandResult grown = await(client.controllerExpandVolumeAsync(id, new CapacityRange(3 * MIB, 4 * MIB),
        Optional.of(EXT4), SECRETS));
    assertEquals(new ControllerExpandResult(3 * MIB, true), grown, "the plugin has node EXPAND_VOLUME");
    ControllerExpandVolumeRequest sent = lastRequest(ControllerGrpc.getControllerExpandVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals(3 * MIB, sent.getCapacityRange().getRequiredBytes());
    assertEquals(4 * MIB, sent.getCapacityRange().getLimitBytes());
    assertExt4(sent.getVolumeCapability());
    assertEquals(SECRETS.reveal(), sent.getSecretsMap());

    plugin.setNodeCapabilities(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME);
    ControllerExpandResult controllerOnly = await(client.controllerExpandVolumeAsync(id, CapacityRange.atLeast(5 * MIB),
        Optional.empty(), Secrets.none()));
    assertEquals(new ControllerExpandResult(5 * MIB, false), controllerOnly);
    assertFalse(lastRequest(ControllerGrpc.getControllerExpandVolumeMethod()).hasVolumeCapability());
  }

  @Test
  void controllerExpand_mapsTheAnswerAsSent() throws Exception {
    plugin.replyCalls(ControllerGrpc.getControllerExpandVolumeMethod(), ControllerExpandVolumeResponse.newBuilder()
        .setCapacityBytes(7 * MIB).setNodeExpansionRequired(true).build(), 1);
    assertEquals(new ControllerExpandResult(7 * MIB, true), await(client.controllerExpandVolumeAsync("vol-9",
        CapacityRange.atLeast(MIB), Optional.empty(), Secrets.none())));
  }

  // ---- node ---------------------------------------------------------------------------------------

  @Test
  void nodeStage_sendsEveryField() throws Exception {
    String id = create("data", MIB).volumeId();
    await(client.nodeStageVolumeAsync(new NodeStageRequest(id, Map.of("device", "/dev/mock/" + id), staging, EXT4,
        SECRETS, Map.of("name", "data"))));
    NodeStageVolumeRequest sent = lastRequest(NodeGrpc.getNodeStageVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals(Map.of("device", "/dev/mock/" + id), sent.getPublishContextMap());
    assertEquals(staging.toString(), sent.getStagingTargetPath());
    assertExt4(sent.getVolumeCapability());
    assertEquals(SECRETS.reveal(), sent.getSecretsMap());
    assertEquals(Map.of("name", "data"), sent.getVolumeContextMap());
  }

  @Test
  void nodeStage_ofABlockVolume_sendsBlockAndNoMount() throws Exception {
    String id = create("data", MIB).volumeId();
    await(client.nodeStageVolumeAsync(new NodeStageRequest(id, Map.of(), staging, BLOCK, Secrets.none(), Map.of())));
    var capability = lastRequest(NodeGrpc.getNodeStageVolumeMethod()).getVolumeCapability();
    assertTrue(capability.hasBlock());
    assertFalse(capability.hasMount());
    assertEquals(3, capability.getAccessMode().getModeValue());
  }

  @Test
  void nodeUnstage_sendsIdAndStagingPath() throws Exception {
    String id = create("data", MIB).volumeId();
    await(client.nodeStageVolumeAsync(new NodeStageRequest(id, Map.of(), staging, EXT4, Secrets.none(), Map.of())));
    await(client.nodeUnstageVolumeAsync(id, staging));
    NodeUnstageVolumeRequest sent = lastRequest(NodeGrpc.getNodeUnstageVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals(staging.toString(), sent.getStagingTargetPath());
    // No longer staged: the plugin refuses a publish from the staging path.
    CsiStatusException e = assertInstanceOf(CsiStatusException.class, failureOf(client.nodePublishVolumeAsync(
        new NodePublishRequest(id, Map.of(), Optional.of(staging), target, EXT4, false, Secrets.none(), Map.of()))));
    assertEquals(StatusCode.FAILED_PRECONDITION, e.code());
  }

  @Test
  void nodePublish_sendsEveryField_andThePluginMakesTheTarget() throws Exception {
    String id = create("data", MIB).volumeId();
    await(client.nodeStageVolumeAsync(new NodeStageRequest(id, Map.of(), staging, EXT4, Secrets.none(), Map.of())));
    await(client.nodePublishVolumeAsync(new NodePublishRequest(id, Map.of("device", "/dev/mock/" + id),
        Optional.of(staging), target, EXT4, true, SECRETS, Map.of("name", "data"))));
    NodePublishVolumeRequest sent = lastRequest(NodeGrpc.getNodePublishVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals(Map.of("device", "/dev/mock/" + id), sent.getPublishContextMap());
    assertEquals(staging.toString(), sent.getStagingTargetPath());
    assertEquals(target.toString(), sent.getTargetPath());
    assertExt4(sent.getVolumeCapability());
    assertTrue(sent.getReadonly());
    assertEquals(SECRETS.reveal(), sent.getSecretsMap());
    assertEquals(Map.of("name", "data"), sent.getVolumeContextMap());
    assertTrue(Files.isDirectory(target));
  }

  @Test
  void nodePublish_withoutStaging_leavesTheStagingPathEmpty() throws Exception {
    plugin.setNodeCapabilities(List.of()); // a plugin that does not stage
    String id = create("data", MIB).volumeId();
    await(client.nodePublishVolumeAsync(new NodePublishRequest(id, Map.of(), Optional.empty(), target, BLOCK, false,
        Secrets.none(), Map.of())));
    NodePublishVolumeRequest sent = lastRequest(NodeGrpc.getNodePublishVolumeMethod());
    assertEquals("", sent.getStagingTargetPath());
    assertFalse(sent.getReadonly());
    assertTrue(Files.isRegularFile(target), "a block volume's target is a file");
  }

  @Test
  void nodeUnpublish_sendsIdAndTarget_andThePluginRemovesIt() throws Exception {
    String id = publishedVolume();
    await(client.nodeUnpublishVolumeAsync(id, target));
    NodeUnpublishVolumeRequest sent = lastRequest(NodeGrpc.getNodeUnpublishVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals(target.toString(), sent.getTargetPath());
    assertFalse(Files.exists(target));
  }

  @Test
  void nodeGetVolumeStats_sendsThePaths_andMapsUsageAndCondition() throws Exception {
    String id = publishedVolume();
    VolumeStats stats = await(client.nodeGetVolumeStatsAsync(id, target, Optional.of(staging)));
    assertEquals(new VolumeStats(List.of(new VolumeStats.Usage(MIB, MIB, 0, VolumeStats.Unit.BYTES)),
        Optional.of(new VolumeStats.Condition(false, "volume is healthy"))), stats);
    NodeGetVolumeStatsRequest sent = lastRequest(NodeGrpc.getNodeGetVolumeStatsMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals(target.toString(), sent.getVolumePath());
    assertEquals(staging.toString(), sent.getStagingTargetPath());

    await(client.nodeGetVolumeStatsAsync(id, target, Optional.empty()));
    assertEquals("", lastRequest(NodeGrpc.getNodeGetVolumeStatsMethod()).getStagingTargetPath());
  }

  @Test
  void nodeGetVolumeStats_unknownUnitsAreUnknown_andAnAbsentConditionIsEmpty() throws Exception {
    plugin.replyCalls(NodeGrpc.getNodeGetVolumeStatsMethod(), NodeGetVolumeStatsResponse.newBuilder()
        .addUsage(VolumeUsage.newBuilder().setUnitValue(2).setTotal(100).setUsed(40).setAvailable(60))
        .addUsage(VolumeUsage.newBuilder().setUnitValue(9).setTotal(5))
        .addUsage(VolumeUsage.newBuilder().setUnitValue(0).setUsed(1))
        .build(), 1);
    plugin.replyCalls(NodeGrpc.getNodeGetVolumeStatsMethod(), NodeGetVolumeStatsResponse.newBuilder()
        .setVolumeCondition(VolumeCondition.newBuilder().setAbnormal(true).setMessage("read-only remount"))
        .build(), 1);

    VolumeStats noCondition = await(client.nodeGetVolumeStatsAsync("vol-1", target, Optional.empty()));
    assertEquals(List.of(
        new VolumeStats.Usage(60, 100, 40, VolumeStats.Unit.INODES),
        new VolumeStats.Usage(0, 5, 0, VolumeStats.Unit.UNKNOWN),
        new VolumeStats.Usage(0, 0, 1, VolumeStats.Unit.UNKNOWN)), noCondition.usage());
    assertEquals(Optional.empty(), noCondition.condition());

    VolumeStats abnormal = await(client.nodeGetVolumeStatsAsync("vol-1", target, Optional.empty()));
    assertEquals(new VolumeStats(List.of(), Optional.of(new VolumeStats.Condition(true, "read-only remount"))),
        abnormal);
  }

  @Test
  void nodeExpand_sendsEveryField_andReturnsTheNewSize() throws Exception {
    String id = publishedVolume();
    long size = await(client.nodeExpandVolumeAsync(new NodeExpandRequest(id, target, new CapacityRange(2 * MIB,
        3 * MIB), Optional.of(staging), Optional.of(EXT4), SECRETS)));
    assertEquals(2 * MIB, size);
    NodeExpandVolumeRequest sent = lastRequest(NodeGrpc.getNodeExpandVolumeMethod());
    assertEquals(id, sent.getVolumeId());
    assertEquals(target.toString(), sent.getVolumePath());
    assertEquals(2 * MIB, sent.getCapacityRange().getRequiredBytes());
    assertEquals(3 * MIB, sent.getCapacityRange().getLimitBytes());
    assertEquals(staging.toString(), sent.getStagingTargetPath());
    assertExt4(sent.getVolumeCapability());
    assertEquals(SECRETS.reveal(), sent.getSecretsMap());

    await(client.nodeExpandVolumeAsync(new NodeExpandRequest(id, target, CapacityRange.atLeast(2 * MIB),
        Optional.empty(), Optional.empty(), Secrets.none())));
    NodeExpandVolumeRequest bare = lastRequest(NodeGrpc.getNodeExpandVolumeMethod());
    assertEquals("", bare.getStagingTargetPath());
    assertFalse(bare.hasVolumeCapability());
    assertTrue(bare.getSecretsMap().isEmpty());
  }

  @Test
  void nodeExpand_withoutASizeInTheAnswer_isZero() throws Exception {
    plugin.replyCalls(NodeGrpc.getNodeExpandVolumeMethod(), NodeExpandVolumeResponse.getDefaultInstance(), 1);
    assertEquals(0L, await(client.nodeExpandVolumeAsync(new NodeExpandRequest("vol-1", target,
        CapacityRange.atLeast(MIB), Optional.empty(), Optional.empty(), Secrets.none()))));
  }

  @Test
  void aNegativeSizeInAnExpandAnswer_isInvalidResponse() throws Exception {
    plugin.replyCalls(NodeGrpc.getNodeExpandVolumeMethod(),
        NodeExpandVolumeResponse.newBuilder().setCapacityBytes(-1).build(), 1);
    plugin.replyCalls(ControllerGrpc.getControllerExpandVolumeMethod(),
        ControllerExpandVolumeResponse.newBuilder().setCapacityBytes(-2).build(), 1);
    InvalidResponseException node = assertInstanceOf(InvalidResponseException.class,
        failureOf(client.nodeExpandVolumeAsync(new NodeExpandRequest("vol-1", target, CapacityRange.atLeast(MIB),
            Optional.empty(), Optional.empty(), Secrets.none()))));
    assertEquals("csi.v1.Node/NodeExpandVolume on " + socket
        + " returned an invalid response: capacity_bytes is -1, but CSI forbids negative values", node.getMessage());
    InvalidResponseException controller = assertInstanceOf(InvalidResponseException.class,
        failureOf(client.controllerExpandVolumeAsync("vol-1", CapacityRange.atLeast(MIB), Optional.empty(),
            Secrets.none())));
    assertEquals("csi.v1.Controller/ControllerExpandVolume on " + socket
        + " returned an invalid response: capacity_bytes is -2, but CSI forbids negative values",
        controller.getMessage());
  }

  @Test
  void theWholeLifecycle_leavesNothingBehind() throws Exception {
    String id = publishedVolume();
    await(client.nodeUnpublishVolumeAsync(id, target));
    await(client.nodeUnstageVolumeAsync(id, staging));
    await(client.controllerUnpublishVolumeAsync(id, "node-1", Secrets.none()));
    await(client.deleteVolumeAsync(id, Secrets.none()));
    // Idempotent, as CSI asks: the same calls again succeed.
    await(client.nodeUnpublishVolumeAsync(id, target));
    await(client.nodeUnstageVolumeAsync(id, staging));
    await(client.deleteVolumeAsync(id, Secrets.none()));
    assertFalse(Files.exists(target));
  }
}
