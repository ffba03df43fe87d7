package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.csisupervisor.csi.v1.CapacityRange;
import dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.TopologyRequirement;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeCapability;
import io.grpc.Status;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The in-memory driver with a topology of its own (NodeGetInfo's), as a zonal cloud disk: volumes created there
 * and a requisite that excludes it refused; and a driver that expands offline only.
 */
@Timeout(30)
class DriverTopologyAndExpansionTest extends PluginOnSocketTest {
  private static final VolumeCapability MOUNT_RW = Csi.singleNodeWriter(VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.getDefaultInstance()));
  private static final Map<String, String> ZONE_A = Map.of("topology.mock/zone", "a");
  private static final Map<String, String> ZONE_B = Map.of("topology.mock/zone", "b");

  private static Topology topology(Map<String, String> segments) {
    return Topology.newBuilder().putAllSegments(segments).build();
  }

  private Volume create(String name, TopologyRequirement.Builder requirement) {
    CreateVolumeRequest.Builder r = CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(MOUNT_RW);
    if (requirement != null) {
      r.setAccessibilityRequirements(requirement);
    }
    return csi.controller().createVolume(r.build()).getVolume();
  }

  @Test
  void aPluginWithATopology_createsItsVolumesThere_andSaysSo() throws Exception {
    start(b -> b.allCapabilities().accessibleTopology(ZONE_A));
    Volume v = create("any", null);
    assertEquals(List.of(topology(ZONE_A)), v.getAccessibleTopologyList());
    Volume required = create("in-a", TopologyRequirement.newBuilder().addRequisite(topology(ZONE_B))
        .addRequisite(topology(ZONE_A)).addPreferred(topology(ZONE_A)));
    assertEquals(List.of(topology(ZONE_A)), required.getAccessibleTopologyList());
  }

  @Test
  void aRequisiteThatExcludesItsTopology_isResourceExhausted_andAnExistingVolumeAlreadyExists() throws Exception {
    start(b -> b.allCapabilities().accessibleTopology(ZONE_A));
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, codeOf(() -> create("in-b",
        TopologyRequirement.newBuilder().addRequisite(topology(ZONE_B)))));
    create("made", null);
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> create("made",
        TopologyRequirement.newBuilder().addRequisite(topology(ZONE_B)))));
    assertEquals(Status.Code.INVALID_ARGUMENT, codeOf(() -> create("bad",
        TopologyRequirement.newBuilder().addRequisite(topology(ZONE_A)).addPreferred(topology(ZONE_B)))),
        "preferred outside requisite");
  }

  @Test
  void aPluginWithoutATopology_ignoresRequirements_andReportsNone() throws Exception {
    start(MockCsiPlugin.Builder::allCapabilities);
    Volume v = create("v", TopologyRequirement.newBuilder().addRequisite(topology(ZONE_B)));
    assertEquals(List.of(), v.getAccessibleTopologyList());
  }

  @Test
  void offlineExpansionOnly_refusesAPublishedVolume_withFailedPrecondition() throws Exception {
    start(b -> b.allCapabilities().pluginCapabilities(List.of(PluginCapability.newBuilder()
        .setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
            .setType(PluginCapability.VolumeExpansion.Type.OFFLINE)).build())));
    String id = create("off", null).getVolumeId();
    csi.controller().controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
        .setNodeId("node-1").setVolumeCapability(MOUNT_RW).build());
    ControllerExpandVolumeRequest expand = ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(2L << 30)).build();
    assertEquals(Status.Code.FAILED_PRECONDITION, codeOf(() -> csi.controller().controllerExpandVolume(expand)));
    csi.controller().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
        .setNodeId("node-1").build());
    assertEquals(2L << 30, csi.controller().controllerExpandVolume(expand).getCapacityBytes());
  }
}
