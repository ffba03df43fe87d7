package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.BoolValue;
import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.GetPluginCapabilitiesResponse;
import dev.csisupervisor.csi.v1.GetPluginInfoResponse;
import dev.csisupervisor.csi.v1.NodeGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.ProbeResponse;
import dev.csisupervisor.csi.v1.Topology;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ProtoMappingTest {
  private static final Path SOCKET = Path.of("/run/p.sock");

  @Test
  void probe_withoutReadyField_isReady_asTheSpecSays() {
    assertEquals(ProbeResult.READY, ProtoMapping.probe(ProbeResponse.getDefaultInstance()));
  }

  @Test
  void probe_readyFalseOrTrue_isTakenAsSent() {
    assertEquals(ProbeResult.NOT_READY,
        ProtoMapping.probe(ProbeResponse.newBuilder().setReady(BoolValue.of(false)).build()));
    assertEquals(ProbeResult.READY,
        ProtoMapping.probe(ProbeResponse.newBuilder().setReady(BoolValue.of(true)).build()));
  }

  @Test
  void pluginInfo_emptyVersion_isKeptEmpty() throws Exception {
    assertEquals(new CsiPluginInfo("a.b", "", Map.of()),
        ProtoMapping.pluginInfo(SOCKET, "m", GetPluginInfoResponse.newBuilder().setName("a.b").build()));
  }

  @Test
  void pluginInfo_blankName_isInvalid() {
    InvalidResponseException e = assertThrows(InvalidResponseException.class, () ->
        ProtoMapping.pluginInfo(SOCKET, "m", GetPluginInfoResponse.newBuilder().setName("  ").build()));
    assertEquals("m on /run/p.sock returned an invalid response: name is blank ('  '), but CSI requires it",
        e.getMessage());
  }

  @Test
  void nodeInfo_mapsTopologySegments() throws Exception {
    NodeGetInfoResponse response = NodeGetInfoResponse.newBuilder().setNodeId("n").setMaxVolumesPerNode(3)
        .setAccessibleTopology(Topology.newBuilder().putSegments("zone", "Z1").putSegments("rack", "r2"))
        .build();
    assertEquals(new CsiNodeInfo("n", 3, Map.of("zone", "Z1", "rack", "r2")),
        ProtoMapping.nodeInfo(SOCKET, "m", response));
  }

  @Test
  void pluginCapabilities_unknownServiceAndExpansionNumbers_areKept() {
    GetPluginCapabilitiesResponse response = GetPluginCapabilitiesResponse.newBuilder()
        .addCapabilities(PluginCapability.newBuilder()
            .setService(PluginCapability.Service.newBuilder().setTypeValue(42)))
        .addCapabilities(PluginCapability.newBuilder()
            .setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder().setTypeValue(9)))
        .addCapabilities(PluginCapability.newBuilder()
            .setService(PluginCapability.Service.newBuilder()))
        .build();
    assertEquals(Set.of("SERVICE:UNKNOWN(42)", "VOLUME_EXPANSION:UNKNOWN(9)", "SERVICE:UNKNOWN"),
        ProtoMapping.pluginCapabilities(reparse(response)));
  }

  @Test
  void capabilities_ofAnUnknownOneofCase_areKeptByFieldNumber_emptyOnesSkipped() throws Exception {
    // What a newer plugin sends for a capability kind this build has never heard of: field 3.
    UnknownFieldSet newKind = UnknownFieldSet.newBuilder()
        .addField(3, UnknownFieldSet.Field.newBuilder().addLengthDelimited(ByteString.copyFromUtf8("\b\u0001")).build())
        .build();
    GetPluginCapabilitiesResponse plugin = GetPluginCapabilitiesResponse.newBuilder()
        .addCapabilities(PluginCapability.newBuilder().setUnknownFields(newKind))
        .addCapabilities(PluginCapability.getDefaultInstance())
        .build();
    assertEquals(Set.of("UNKNOWN_TYPE(3)"), ProtoMapping.pluginCapabilities(reparse(plugin)));

    ControllerGetCapabilitiesResponse controller = ControllerGetCapabilitiesResponse.newBuilder()
        .addCapabilities(ControllerServiceCapability.newBuilder().setUnknownFields(newKind))
        .addCapabilities(ControllerServiceCapability.newBuilder()
            .setRpc(ControllerServiceCapability.RPC.newBuilder().setTypeValue(1000)))
        .build();
    assertEquals(Set.of("UNKNOWN_TYPE(3)", "UNKNOWN(1000)"), ProtoMapping.controllerCapabilities(reparse(controller)));

    NodeGetCapabilitiesResponse node = NodeGetCapabilitiesResponse.newBuilder()
        .addCapabilities(NodeServiceCapability.newBuilder().setUnknownFields(newKind))
        .addCapabilities(NodeServiceCapability.newBuilder()
            .setRpc(NodeServiceCapability.RPC.newBuilder().setType(NodeServiceCapability.RPC.Type.VOLUME_MOUNT_GROUP)))
        .build();
    assertEquals(Set.of("UNKNOWN_TYPE(3)", "VOLUME_MOUNT_GROUP"), ProtoMapping.nodeCapabilities(reparse(node)));
  }

  @Test
  void capabilities_duplicates_collapse() {
    ControllerGetCapabilitiesResponse controller = ControllerGetCapabilitiesResponse.newBuilder()
        .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.LIST_VOLUMES))
        .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.LIST_VOLUMES))
        .build();
    assertEquals(Set.of("LIST_VOLUMES"), ProtoMapping.controllerCapabilities(controller));
  }

  @Test
  void everyKnownEnumValue_mapsToItsSpecName() {
    for (ControllerServiceCapability.RPC.Type type : ControllerServiceCapability.RPC.Type.values()) {
      if (type != ControllerServiceCapability.RPC.Type.UNRECOGNIZED) {
        assertEquals(Set.of(type.name()), ProtoMapping.controllerCapabilities(
            ControllerGetCapabilitiesResponse.newBuilder().addCapabilities(rpc(type)).build()));
      }
    }
  }

  private static ControllerServiceCapability rpc(ControllerServiceCapability.RPC.Type type) {
    return ControllerServiceCapability.newBuilder()
        .setRpc(ControllerServiceCapability.RPC.newBuilder().setType(type))
        .build();
  }

  /** Through the wire format, as a response from a plugin arrives. */
  @SuppressWarnings("unchecked")
  private static <T extends com.google.protobuf.Message> T reparse(T message) {
    try {
      return (T) message.getParserForType().parseFrom(message.toByteArray());
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }
}
