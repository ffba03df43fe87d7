package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.Map;
import java.util.Objects;

/**
 * {@code CreateSnapshot}'s request.
 *
 * @param sourceVolumeId the volume to cut it from; not blank
 * @param name the CO's name for the snapshot, the idempotency key (sending it again answers the same snapshot, with
 *     its readiness now); not blank
 * @param parameters opaque parameters for the plugin, or empty
 * @param secrets {@code CREATE_DELETE_SNAPSHOT} secrets; never shown
 */
public record CreateSnapshotRequest(String sourceVolumeId, String name, Map<String, String> parameters,
    Secrets secrets) {
  public CreateSnapshotRequest {
    Values.requireNonBlank(sourceVolumeId, "sourceVolumeId");
    Values.requireNonBlank(name, "name");
    parameters = Values.copyOf(parameters, "parameters");
    Objects.requireNonNull(secrets, "secrets");
  }
}
