package dev.csisupervisor.client;

import com.google.protobuf.Int64Value;
import com.google.protobuf.Timestamp;
import dev.csisupervisor.csi.v1.ControllerGetVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerModifyVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteSnapshotRequest;
import dev.csisupervisor.csi.v1.GetCapacityRequest;
import dev.csisupervisor.csi.v1.GetCapacityResponse;
import dev.csisupervisor.csi.v1.ListSnapshotsResponse;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.ListVolumesResponse;
import dev.csisupervisor.csi.v1.Snapshot;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.csisupervisor.csi.v1.VolumeCondition;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The messages of the Controller calls beyond create, delete, publish and expand ({@link VolumeProtos}): snapshots,
 * listing, validation, capacity and modify, each request from our values (already checked) and each response into
 * them, checking the fields CSI requires (a missing one is an {@link InvalidResponseException} naming it).
 */
final class ControllerProtos {
  private ControllerProtos() {}

  // ---- requests ----

  static dev.csisupervisor.csi.v1.CreateSnapshotRequest createSnapshot(CreateSnapshotRequest r) {
    return dev.csisupervisor.csi.v1.CreateSnapshotRequest.newBuilder()
        .setSourceVolumeId(r.sourceVolumeId())
        .setName(r.name())
        .putAllParameters(r.parameters())
        .putAllSecrets(r.secrets().reveal())
        .build();
  }

  static DeleteSnapshotRequest deleteSnapshot(String snapshotId, Secrets secrets) {
    return DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshotId).putAllSecrets(secrets.reveal()).build();
  }

  static dev.csisupervisor.csi.v1.ListSnapshotsRequest listSnapshots(ListSnapshotsRequest r) {
    dev.csisupervisor.csi.v1.ListSnapshotsRequest.Builder q = dev.csisupervisor.csi.v1.ListSnapshotsRequest
        .newBuilder().setMaxEntries(r.maxEntries()).putAllSecrets(r.secrets().reveal());
    r.startingToken().ifPresent(q::setStartingToken);
    r.sourceVolumeId().ifPresent(q::setSourceVolumeId);
    r.snapshotId().ifPresent(q::setSnapshotId);
    return q.build();
  }

  static ListVolumesRequest listVolumes(int maxEntries, Optional<String> startingToken) {
    ListVolumesRequest.Builder q = ListVolumesRequest.newBuilder().setMaxEntries(maxEntries);
    startingToken.ifPresent(q::setStartingToken);
    return q.build();
  }

  static ValidateVolumeCapabilitiesRequest validate(ValidateCapabilitiesRequest r) {
    ValidateVolumeCapabilitiesRequest.Builder q = ValidateVolumeCapabilitiesRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .putAllVolumeContext(r.volumeContext())
        .putAllParameters(r.parameters())
        .putAllMutableParams(r.mutableParameters())
        .putAllSecrets(r.secrets().reveal());
    r.capabilities().forEach(c -> q.addVolumeCapabilities(VolumeProtos.capability(c)));
    return q.build();
  }

  static GetCapacityRequest capacity(CapacityRequest r) {
    GetCapacityRequest.Builder q = GetCapacityRequest.newBuilder().putAllParameters(r.parameters());
    r.capabilities().forEach(c -> q.addVolumeCapabilities(VolumeProtos.capability(c)));
    r.accessibleTopology().ifPresent(t -> q.setAccessibleTopology(Topology.newBuilder().putAllSegments(t)));
    return q.build();
  }

  static ControllerModifyVolumeRequest modify(String volumeId, Map<String, String> mutableParameters, Secrets secrets) {
    return ControllerModifyVolumeRequest.newBuilder()
        .setVolumeId(volumeId)
        .putAllMutableParameters(mutableParameters)
        .putAllSecrets(secrets.reveal())
        .build();
  }

  // ---- responses ----

  static CsiSnapshot snapshot(Path socket, String method, String field, boolean present, Snapshot s)
      throws InvalidResponseException {
    if (!present) {
      throw new InvalidResponseException(socket, method, field + " is missing, but CSI requires it");
    }
    if (s.getSnapshotId().isBlank()) {
      throw new InvalidResponseException(socket, method, field + ".snapshot_id is empty, but CSI requires it");
    }
    if (s.getSourceVolumeId().isBlank()) {
      throw new InvalidResponseException(socket, method, field + ".source_volume_id is empty, but CSI requires it");
    }
    long size = VolumeProtos.capacity(socket, method, field + ".size_bytes", s.getSizeBytes());
    Optional<Instant> created = s.hasCreationTime() ? Optional.of(instant(s.getCreationTime())) : Optional.empty();
    return new CsiSnapshot(s.getSnapshotId(), s.getSourceVolumeId(), size, created, s.getReadyToUse());
  }

  static SnapshotPage snapshotPage(Path socket, String method, ListSnapshotsResponse response)
      throws InvalidResponseException {
    List<CsiSnapshot> entries = new ArrayList<>();
    for (int i = 0; i < response.getEntriesCount(); i++) {
      ListSnapshotsResponse.Entry e = response.getEntries(i);
      entries.add(snapshot(socket, method, "entries[" + i + "].snapshot", e.hasSnapshot(), e.getSnapshot()));
    }
    return new SnapshotPage(entries, token(response.getNextToken()));
  }

  static VolumePage volumePage(Path socket, String method, ListVolumesResponse response)
      throws InvalidResponseException {
    List<VolumeEntry> entries = new ArrayList<>();
    for (int i = 0; i < response.getEntriesCount(); i++) {
      ListVolumesResponse.Entry e = response.getEntries(i);
      String field = "entries[" + i + "]";
      CsiVolume v = VolumeProtos.volume(socket, method, field + ".volume", e.hasVolume(), e.getVolume());
      ListVolumesResponse.VolumeStatus s = e.getStatus();
      entries.add(new VolumeEntry(v, nodeIds(socket, method, field, s.getPublishedNodeIdsList()),
          condition(s.hasVolumeCondition(), s.getVolumeCondition())));
    }
    return new VolumePage(entries, token(response.getNextToken()));
  }

  static VolumeEntry volumeEntry(Path socket, String method, ControllerGetVolumeResponse response)
      throws InvalidResponseException {
    CsiVolume v = VolumeProtos.volume(socket, method, "volume", response.hasVolume(), response.getVolume());
    ControllerGetVolumeResponse.VolumeStatus s = response.getStatus();
    return new VolumeEntry(v, nodeIds(socket, method, "status", s.getPublishedNodeIdsList()),
        condition(s.hasVolumeCondition(), s.getVolumeCondition()));
  }

  static ValidationResult validation(Path socket, String method, ValidateVolumeCapabilitiesResponse response)
      throws InvalidResponseException {
    if (!response.hasConfirmed()) {
      return new ValidationResult(Optional.empty(), response.getMessage());
    }
    ValidateVolumeCapabilitiesResponse.Confirmed c = response.getConfirmed();
    if (c.getVolumeCapabilitiesCount() == 0) {
      throw new InvalidResponseException(socket, method,
          "confirmed.volume_capabilities is empty, but CSI requires it when confirmed is set");
    }
    List<VolumeCapability> capabilities = new ArrayList<>();
    for (int i = 0; i < c.getVolumeCapabilitiesCount(); i++) {
      capabilities.add(capability(socket, method, "confirmed.volume_capabilities[" + i + "]",
          c.getVolumeCapabilities(i)));
    }
    return new ValidationResult(Optional.of(new ValidationResult.Confirmed(capabilities, c.getVolumeContextMap(),
        c.getParametersMap(), c.getMutableParamsMap())), response.getMessage());
  }

  static CsiCapacity capacity(Path socket, String method, GetCapacityResponse r) throws InvalidResponseException {
    long available = VolumeProtos.capacity(socket, method, "available_capacity", r.getAvailableCapacity());
    return new CsiCapacity(available, size(socket, method, "maximum_volume_size", r.hasMaximumVolumeSize(),
        r.getMaximumVolumeSize()), size(socket, method, "minimum_volume_size", r.hasMinimumVolumeSize(),
        r.getMinimumVolumeSize()));
  }

  /** A capability the plugin sent back: one access type and a known access mode. */
  static VolumeCapability capability(Path socket, String method, String field,
      dev.csisupervisor.csi.v1.VolumeCapability c) throws InvalidResponseException {
    Optional<AccessMode> mode = AccessMode.ofValue(c.getAccessMode().getModeValue());
    if (mode.isEmpty()) {
      throw new InvalidResponseException(socket, method, field + ".access_mode.mode is "
          + c.getAccessMode().getModeValue() + ", not an access mode this client knows");
    }
    try {
      return switch (c.getAccessTypeCase()) {
        case BLOCK -> VolumeCapability.block(mode.get());
        case MOUNT -> new VolumeCapability(VolumeCapability.AccessType.MOUNT, c.getMount().getFsType(),
            c.getMount().getMountFlagsList(), c.getMount().getVolumeMountGroup(), mode.get());
        default -> throw new InvalidResponseException(socket, method, field
            + " has no access_type (block or mount), but CSI requires one");
      };
    } catch (IllegalArgumentException e) {
      throw new InvalidResponseException(socket, method, field + " is not valid: " + e.getMessage());
    }
  }

  private static List<String> nodeIds(Path socket, String method, String field, List<String> ids)
      throws InvalidResponseException {
    for (int i = 0; i < ids.size(); i++) {
      if (ids.get(i).isBlank()) {
        throw new InvalidResponseException(socket, method, field + ".published_node_ids[" + i + "] is empty");
      }
    }
    return ids;
  }

  private static Optional<VolumeStats.Condition> condition(boolean present, VolumeCondition c) {
    return present ? Optional.of(new VolumeStats.Condition(c.getAbnormal(), c.getMessage())) : Optional.empty();
  }

  private static OptionalLong size(Path socket, String method, String field, boolean present, Int64Value v)
      throws InvalidResponseException {
    return present ? OptionalLong.of(VolumeProtos.capacity(socket, method, field, v.getValue())) : OptionalLong.empty();
  }

  private static Optional<String> token(String next) {
    return next.isEmpty() ? Optional.empty() : Optional.of(next);
  }

  private static Instant instant(Timestamp t) {
    return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
  }
}
