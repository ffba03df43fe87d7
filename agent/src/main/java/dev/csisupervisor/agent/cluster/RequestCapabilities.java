package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.VolumeSource;
import dev.csisupervisor.client.CsiCapabilities;
import java.util.Set;
import java.util.TreeSet;

/**
 * The controller capabilities a request needs of its plugin: checked by the CLI before it asks (capabilities first)
 * and by the controller agent before each call.
 */
public final class RequestCapabilities {
  private RequestCapabilities() {}

  /**
   * CREATE_DELETE_VOLUME for creates and deletes (with CREATE_DELETE_SNAPSHOT from a snapshot, CLONE_VOLUME from a
   * volume, MODIFY_VOLUME with mutable parameters: CSI), CREATE_DELETE_SNAPSHOT for snapshots and their deletes,
   * MODIFY_VOLUME for a modify; nothing for a register (ValidateVolumeCapabilities is every controller's).
   */
  public static Set<String> needs(ClusterVolumeRequest r) {
    Set<String> out = new TreeSet<>();
    switch (r.kind()) {
      case CREATE, DELETE -> out.add(CsiCapabilities.CREATE_DELETE_VOLUME);
      case SNAPSHOT, SNAPSHOT_DELETE -> out.add(CsiCapabilities.CREATE_DELETE_SNAPSHOT);
      case MODIFY -> out.add(CsiCapabilities.MODIFY_VOLUME);
      case REGISTER -> { }
    }
    if (r.kind() == ClusterVolumeRequest.Kind.CREATE) {
      r.spec().source().ifPresent(f -> out.add(f.type() == VolumeSource.Type.SNAPSHOT
          ? CsiCapabilities.CREATE_DELETE_SNAPSHOT : CsiCapabilities.CLONE_VOLUME));
      if (!r.spec().mutableParameters().isEmpty()) {
        out.add(CsiCapabilities.MODIFY_VOLUME);
      }
    }
    return out;
  }
}
