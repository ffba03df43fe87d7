package dev.csisupervisor.client;

import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.NodeGrpc;

/** Full gRPC names of the calls the client makes, as they appear in error messages. */
final class CsiMethods {
  private CsiMethods() {}

  static final String PROBE = IdentityGrpc.getProbeMethod().getFullMethodName();
  static final String GET_PLUGIN_INFO = IdentityGrpc.getGetPluginInfoMethod().getFullMethodName();
  static final String GET_PLUGIN_CAPABILITIES =
      IdentityGrpc.getGetPluginCapabilitiesMethod().getFullMethodName();
  static final String CONTROLLER_GET_CAPABILITIES =
      ControllerGrpc.getControllerGetCapabilitiesMethod().getFullMethodName();
  static final String NODE_GET_CAPABILITIES = NodeGrpc.getNodeGetCapabilitiesMethod().getFullMethodName();
  static final String NODE_GET_INFO = NodeGrpc.getNodeGetInfoMethod().getFullMethodName();
  static final String CREATE_VOLUME = ControllerGrpc.getCreateVolumeMethod().getFullMethodName();
  static final String CREATE_SNAPSHOT = ControllerGrpc.getCreateSnapshotMethod().getFullMethodName();
  static final String LIST_SNAPSHOTS = ControllerGrpc.getListSnapshotsMethod().getFullMethodName();
  static final String LIST_VOLUMES = ControllerGrpc.getListVolumesMethod().getFullMethodName();
  static final String CONTROLLER_GET_VOLUME = ControllerGrpc.getControllerGetVolumeMethod().getFullMethodName();
  static final String VALIDATE_VOLUME_CAPABILITIES =
      ControllerGrpc.getValidateVolumeCapabilitiesMethod().getFullMethodName();
  static final String GET_CAPACITY = ControllerGrpc.getGetCapacityMethod().getFullMethodName();

  /** Whether {@code fullMethodName} belongs to the Identity service, which every CSI plugin implements. */
  static boolean isIdentity(String fullMethodName) {
    return fullMethodName.startsWith(IdentityGrpc.SERVICE_NAME + "/");
  }
}
