package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.NodeGrpc;
import io.grpc.MethodDescriptor;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * One volume call of {@link CsiClient} with valid arguments, and the CSI method it makes: for
 * tests that treat every volume call alike (errors, deadlines, secrets).
 */
record VolumeRpc(MethodDescriptor<?, ?> method, Function<CsiClient, CompletableFuture<?>> call) {

  /** Every volume call, each with {@code secrets} where it takes them and {@code capability} where it takes one. */
  static List<VolumeRpc> all(Path dir, Secrets secrets, VolumeCapability capability) {
    Path staging = dir.resolve("staging");
    Path target = dir.resolve("target");
    String id = "vol-1";
    return List.of(
        new VolumeRpc(NodeGrpc.getNodeStageVolumeMethod(), c -> c.nodeStageVolumeAsync(
            new NodeStageRequest(id, Map.of(), staging, capability, secrets, Map.of()))),
        new VolumeRpc(NodeGrpc.getNodeUnstageVolumeMethod(), c -> c.nodeUnstageVolumeAsync(id, staging)),
        new VolumeRpc(NodeGrpc.getNodePublishVolumeMethod(), c -> c.nodePublishVolumeAsync(
            new NodePublishRequest(id, Map.of(), Optional.of(staging), target, capability, false, secrets, Map.of()))),
        new VolumeRpc(NodeGrpc.getNodeUnpublishVolumeMethod(), c -> c.nodeUnpublishVolumeAsync(id, target)),
        new VolumeRpc(NodeGrpc.getNodeGetVolumeStatsMethod(),
            c -> c.nodeGetVolumeStatsAsync(id, target, Optional.of(staging))),
        new VolumeRpc(NodeGrpc.getNodeExpandVolumeMethod(), c -> c.nodeExpandVolumeAsync(new NodeExpandRequest(
            id, target, CapacityRange.atLeast(1 << 20), Optional.of(staging), Optional.of(capability), secrets))),
        new VolumeRpc(ControllerGrpc.getCreateVolumeMethod(), c -> c.createVolumeAsync(new CreateVolumeRequest(
            "data", Optional.of(CapacityRange.atLeast(1 << 20)), List.of(capability), Map.of(), secrets))),
        new VolumeRpc(ControllerGrpc.getDeleteVolumeMethod(), c -> c.deleteVolumeAsync(id, secrets)),
        new VolumeRpc(ControllerGrpc.getControllerPublishVolumeMethod(), c -> c.controllerPublishVolumeAsync(
            new ControllerPublishRequest(id, "node-1", capability, false, secrets, Map.of()))),
        new VolumeRpc(ControllerGrpc.getControllerUnpublishVolumeMethod(),
            c -> c.controllerUnpublishVolumeAsync(id, "node-1", secrets)),
        new VolumeRpc(ControllerGrpc.getControllerExpandVolumeMethod(), c -> c.controllerExpandVolumeAsync(
            id, CapacityRange.atLeast(1 << 20), Optional.of(capability), secrets)),
        new VolumeRpc(ControllerGrpc.getCreateSnapshotMethod(), c -> c.createSnapshotAsync(
            new CreateSnapshotRequest(id, "snap", Map.of(), secrets))),
        new VolumeRpc(ControllerGrpc.getDeleteSnapshotMethod(), c -> c.deleteSnapshotAsync("snap-1", secrets)),
        new VolumeRpc(ControllerGrpc.getListSnapshotsMethod(), c -> c.listSnapshotsAsync(new ListSnapshotsRequest(
            0, Optional.empty(), Optional.of(id), Optional.empty(), secrets))),
        new VolumeRpc(ControllerGrpc.getListVolumesMethod(), c -> c.listVolumesAsync(0, Optional.empty())),
        new VolumeRpc(ControllerGrpc.getControllerGetVolumeMethod(), c -> c.controllerGetVolumeAsync(id)),
        new VolumeRpc(ControllerGrpc.getValidateVolumeCapabilitiesMethod(), c -> c.validateVolumeCapabilitiesAsync(
            new ValidateCapabilitiesRequest(id, Map.of(), List.of(capability), Map.of(), Map.of(), secrets))),
        new VolumeRpc(ControllerGrpc.getGetCapacityMethod(), c -> c.getCapacityAsync(
            new CapacityRequest(List.of(capability), Map.of(), Optional.empty()))),
        new VolumeRpc(ControllerGrpc.getControllerModifyVolumeMethod(), c -> c.controllerModifyVolumeAsync(
            id, Map.of("iops", "3000"), secrets)));
  }

  String fullName() {
    return method.getFullMethodName();
  }

  CompletableFuture<?> callOn(CsiClient client) {
    return call.apply(client);
  }

  @Override
  public String toString() {
    return method.getBareMethodName();
  }

  /** The value of a call that must succeed (10 s at most). */
  static <T> T await(CompletableFuture<T> call) throws Exception {
    try {
      return call.get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      throw new AssertionError("call failed: " + e.getCause(), e.getCause());
    }
  }

  /** The failure of a call that must fail (10 s at most): the future holds the exception itself. */
  static Throwable failureOf(CompletableFuture<?> call) {
    return assertThrows(ExecutionException.class, () -> call.get(10, TimeUnit.SECONDS)).getCause();
  }
}
