package dev.csisupervisor.volumes;

import dev.csisupervisor.client.Secrets;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * An unmount of a volume from an allocation, as {@link VolumeManager#unmount(UnmountRequest)} takes it.
 *
 * @param pluginId the node plugin
 * @param volumeId the volume
 * @param allocId the allocation
 * @param controllerSecrets secrets for the controller side (ControllerUnpublishVolume at the last use), kept in
 *     memory until it is done; never written or logged
 * @param secretsFile where they came from, if from a file: the record keeps this path (never the values) and
 *     reads it again when the controller step comes, after a restart too
 * @param force the node plugin is gone for good: what it cannot do (it is not ready, or fails), the agent does
 *     itself, as the kubelet's orphan clean-up does: unmounts the targets and the staging, removes the empty
 *     target directories; then the controller side. What cannot be done stays pending and is reported.
 */
public record UnmountRequest(String pluginId, String volumeId, String allocId, Secrets controllerSecrets,
    Optional<Path> secretsFile, boolean force) {

  public UnmountRequest {
    VolumeIds.checkPlugin(pluginId);
    VolumeIds.checkVolume("volumeId", volumeId);
    VolumeIds.check("allocId", allocId);
    Objects.requireNonNull(controllerSecrets, "controllerSecrets");
    VolumeSecrets.checkFile(secretsFile);
  }

  /** A plain unmount: no secrets, not forced. */
  public static UnmountRequest of(String pluginId, String volumeId, String allocId) {
    return new UnmountRequest(pluginId, volumeId, allocId, Secrets.none(), Optional.empty(), false);
  }

  /** The same unmount with controller secrets given by value. */
  public UnmountRequest withSecrets(Secrets secrets) {
    return new UnmountRequest(pluginId, volumeId, allocId, secrets, Optional.empty(), force);
  }

  /** The same unmount with controller secrets read from {@code file} (an absolute path the record keeps). */
  public UnmountRequest withSecretsFile(Secrets secrets, Path file) {
    return new UnmountRequest(pluginId, volumeId, allocId, secrets, Optional.of(file), force);
  }

  /** The same unmount, forced. */
  public UnmountRequest forced() {
    return new UnmountRequest(pluginId, volumeId, allocId, controllerSecrets, secretsFile, true);
  }

  VolumeKey key() {
    return new VolumeKey(pluginId, volumeId);
  }
}
