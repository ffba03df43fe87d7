package dev.csisupervisor.volumes;

import dev.csisupervisor.common.Values;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.common.Printable;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Objects;

/**
 * A task's claim on a volume: what {@link VolumeManager#mount} mounts.
 *
 * @param pluginId the node plugin's id (its registry name)
 * @param volumeId the volume, as its controller named it: a directory name here, so not blank, at
 *     most 128 bytes, not {@code .} or {@code ..}, no {@code /}, NUL or control characters
 * @param allocId the allocation the volume is mounted for; the same rules as {@code volumeId}
 * @param capability how the volume is accessed; a reader-only access mode needs {@code readOnly}
 * @param readOnly whether the task gets it read-only
 * @param volumeContext the volume's context from its creation (passed to stage and publish)
 * @param publishContext a publish context obtained elsewhere (by a scheduler's controller publish);
 *     ignored when this node's agent makes the controller publish itself
 * @param secrets stage and publish secrets; passed to the plugin, never written or logged
 * @param secretsFile where {@code secrets} came from, if from a file of {@code key=value} lines: the record
 *     keeps this path (never the values) and reads the file again when a later step needs secrets (the mount
 *     done again after a reboot, the controller unpublish)
 */
public record VolumeClaim(String pluginId, String volumeId, String allocId, VolumeCapability capability,
    boolean readOnly, Map<String, String> volumeContext, Map<String, String> publishContext, Secrets secrets,
    Optional<Path> secretsFile) {

  public VolumeClaim {
    VolumeIds.checkPlugin(pluginId);
    VolumeIds.checkVolume("volumeId", volumeId);
    VolumeIds.check("allocId", allocId);
    Objects.requireNonNull(capability, "capability");
    if (!readOnly && !capability.accessMode().writable()) {
      throw new IllegalArgumentException("readOnly must be true for access mode " + capability.accessMode()
          + " (volume " + Printable.quote(volumeId) + ")");
    }
    volumeContext = Values.copyOf(volumeContext, "volumeContext");
    publishContext = Values.copyOf(publishContext, "publishContext");
    Objects.requireNonNull(secrets, "secrets");
    VolumeSecrets.checkFile(secretsFile);
  }

  /** A claim whose secrets are given by value only. */
  public VolumeClaim(String pluginId, String volumeId, String allocId, VolumeCapability capability, boolean readOnly,
      Map<String, String> volumeContext, Map<String, String> publishContext, Secrets secrets) {
    this(pluginId, volumeId, allocId, capability, readOnly, volumeContext, publishContext, secrets, Optional.empty());
  }

  /** A claim without contexts or secrets. */
  public static VolumeClaim of(String pluginId, String volumeId, String allocId, VolumeCapability capability,
      boolean readOnly) {
    return new VolumeClaim(pluginId, volumeId, allocId, capability, readOnly, Map.of(), Map.of(), Secrets.none());
  }

  /** The same claim with these secrets (by value: no file). */
  public VolumeClaim withSecrets(Secrets secrets) {
    return new VolumeClaim(pluginId, volumeId, allocId, capability, readOnly, volumeContext, publishContext, secrets,
        Optional.empty());
  }

  /** The same claim with these secrets, read from {@code file} (an absolute path), which the record keeps. */
  public VolumeClaim withSecretsFile(Secrets secrets, Path file) {
    return new VolumeClaim(pluginId, volumeId, allocId, capability, readOnly, volumeContext, publishContext, secrets,
        Optional.of(file));
  }

  /** The same claim with this publish context (the cluster's controller publish answered it). */
  public VolumeClaim withPublishContext(Map<String, String> publishContext) {
    return new VolumeClaim(pluginId, volumeId, allocId, capability, readOnly, volumeContext, publishContext, secrets,
        secretsFile);
  }

  /** The same claim with this volume context. */
  public VolumeClaim withVolumeContext(Map<String, String> volumeContext) {
    return new VolumeClaim(pluginId, volumeId, allocId, capability, readOnly, volumeContext, publishContext, secrets,
        secretsFile);
  }

  /**
   * Whether a stage or publish of this claim done again later (after a reboot) needs the claim itself: it has
   * mount flags or secrets by value, and neither is ever stored.
   */
  boolean redoNeedsClaim() {
    return !capability.mountFlags().isEmpty() || (!secrets.isEmpty() && secretsFile.isEmpty());
  }

  /** How this claim uses the volume. */
  public VolumeUsage usage() {
    return new VolumeUsage(capability.accessType(), capability.accessMode(), readOnly);
  }

  VolumeKey key() {
    return new VolumeKey(pluginId, volumeId);
  }
}
