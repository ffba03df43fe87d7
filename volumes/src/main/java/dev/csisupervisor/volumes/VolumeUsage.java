package dev.csisupervisor.volumes;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.VolumeCapability.AccessType;
import java.util.Locale;
import java.util.Objects;

/**
 * How a volume is used on this node: access type, access mode and read-only flag. A volume is
 * staged once per usage ({@code staging/<volume>/<usage>}) and published once per allocation and
 * usage ({@code per-alloc/<alloc>/<volume>/<usage>}), as in Nomad's {@code csimanager}.
 */
public record VolumeUsage(AccessType accessType, AccessMode accessMode, boolean readOnly) {
  public VolumeUsage {
    Objects.requireNonNull(accessType, "accessType");
    Objects.requireNonNull(accessMode, "accessMode");
  }

  /** Whether this usage writes to the volume. */
  public boolean writes() {
    return !readOnly && accessMode.writable();
  }

  /** The usage's directory name, e.g. {@code mount-single-node-writer-rw}. */
  public String dirName() {
    return accessType.name().toLowerCase(Locale.ROOT) + "-"
        + accessMode.name().toLowerCase(Locale.ROOT).replace('_', '-') + (readOnly ? "-ro" : "-rw");
  }

  @Override
  public String toString() {
    return dirName();
  }
}
