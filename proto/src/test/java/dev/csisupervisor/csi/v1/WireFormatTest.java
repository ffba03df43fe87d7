package dev.csisupervisor.csi.v1;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.BoolValue;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * Pins the wire format of the messages the supervisor exchanges with every plugin, with bytes
 * written out from the CSI spec's field numbers: a renumbered field or a changed type fails here
 * instead of against a real plugin.
 */
class WireFormatTest {
  private static byte[] hex(String s) {
    return HexFormat.of().parseHex(s.replace(" ", ""));
  }

  @Test
  void probeResponse_readyIsBoolValueField1() throws Exception {
    // field 1, length-delimited (0x0a), 2 bytes: BoolValue{ value(1): true }
    ProbeResponse r = ProbeResponse.parseFrom(hex("0a 02 08 01"));
    assertTrue(r.hasReady());
    assertTrue(r.getReady().getValue());
    assertArrayEquals(hex("0a 02 08 01"),
        ProbeResponse.newBuilder().setReady(BoolValue.of(true)).build().toByteArray());
    // Absent means "not present" (the spec: assume ready), distinct from ready=false.
    assertFalse(ProbeResponse.parseFrom(new byte[0]).hasReady());
    assertTrue(ProbeResponse.parseFrom(hex("0a 00")).hasReady());
  }

  @Test
  void getPluginInfoResponse_nameVersionManifest() throws Exception {
    GetPluginInfoResponse r = GetPluginInfoResponse.parseFrom(hex(
        "0a 01 61"                      // name(1) = "a"
            + " 12 01 62"               // vendor_version(2) = "b"
            + " 1a 06 0a 01 6b 12 01 76")); // manifest(3) entry {key(1)="k", value(2)="v"}
    assertEquals("a", r.getName());
    assertEquals("b", r.getVendorVersion());
    assertEquals("v", r.getManifestMap().get("k"));
  }

  @Test
  void pluginCapability_oneofServiceAndVolumeExpansion() throws Exception {
    // service(1) { type(1) = CONTROLLER_SERVICE(1) }
    PluginCapability service = PluginCapability.parseFrom(hex("0a 02 08 01"));
    assertEquals(PluginCapability.Service.Type.CONTROLLER_SERVICE,
        service.getService().getType());
    // volume_expansion(2) { type(1) = ONLINE(1) }
    PluginCapability expansion = PluginCapability.parseFrom(hex("12 02 08 01"));
    assertEquals(PluginCapability.VolumeExpansion.Type.ONLINE,
        expansion.getVolumeExpansion().getType());
    // An enum value from a newer spec is kept as a number, not lost.
    PluginCapability future = PluginCapability.parseFrom(hex("0a 02 08 63"));
    assertEquals(99, future.getService().getTypeValue());
    assertEquals(PluginCapability.Service.Type.UNRECOGNIZED, future.getService().getType());
  }

  @Test
  void pluginCapabilityServiceTypes_haveTheSpecNumbers() {
    assertEquals(0, PluginCapability.Service.Type.UNKNOWN.getNumber());
    assertEquals(1, PluginCapability.Service.Type.CONTROLLER_SERVICE.getNumber());
    assertEquals(2, PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS.getNumber());
    assertEquals(3, PluginCapability.Service.Type.GROUP_CONTROLLER_SERVICE.getNumber());
    assertEquals(4, PluginCapability.Service.Type.SNAPSHOT_METADATA_SERVICE.getNumber());
  }

  @Test
  void controllerCapabilities_rpcTypeNumbers() throws Exception {
    ControllerGetCapabilitiesResponse r = ControllerGetCapabilitiesResponse.parseFrom(
        hex("0a 04 0a 02 08 01")); // capabilities(1) { rpc(1) { type(1) = CREATE_DELETE_VOLUME } }
    assertEquals(ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
        r.getCapabilities(0).getRpc().getType());
    assertEquals(14, ControllerServiceCapability.RPC.Type.MODIFY_VOLUME.getNumber());
    assertEquals(13, ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER.getNumber());
  }

  @Test
  void nodeGetInfoResponse_fields() throws Exception {
    NodeGetInfoResponse r = NodeGetInfoResponse.parseFrom(hex(
        "0a 02 6e 31"                         // node_id(1) = "n1"
            + " 10 05"                        // max_volumes_per_node(2) = 5
            + " 1a 08 0a 06 0a 01 7a 12 01 61")); // accessible_topology(3){segments(1){z:a}}
    assertEquals("n1", r.getNodeId());
    assertEquals(5, r.getMaxVolumesPerNode());
    assertEquals("a", r.getAccessibleTopology().getSegmentsMap().get("z"));
    assertEquals(FieldDescriptor.Type.INT64,
        NodeGetInfoResponse.getDescriptor().findFieldByNumber(2).getType());
  }

  @Test
  void nodeCapabilities_rpcTypeNumbers() throws Exception {
    assertEquals(1, NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME.getNumber());
    assertEquals(4, NodeServiceCapability.RPC.Type.VOLUME_CONDITION.getNumber());
    assertEquals(6, NodeServiceCapability.RPC.Type.VOLUME_MOUNT_GROUP.getNumber());
  }

  @Test
  void renamedMutableParameters_keepNumberAndJsonName() {
    FieldDescriptor f = CreateVolumeRequest.getDescriptor().findFieldByNumber(8);
    assertEquals("mutable_params", f.getName());
    assertEquals("mutableParameters", f.getJsonName());
    assertTrue(f.isMapField());
  }

  @Test
  void serviceNames_matchTheSpecsFullMethodNames() throws InvalidProtocolBufferException {
    assertEquals("csi.v1.Identity/Probe", IdentityGrpc.getProbeMethod().getFullMethodName());
    assertEquals("csi.v1.Node/NodeGetInfo", NodeGrpc.getNodeGetInfoMethod().getFullMethodName());
    assertEquals("csi.v1.Controller/ControllerGetCapabilities",
        ControllerGrpc.getControllerGetCapabilitiesMethod().getFullMethodName());
  }
}
