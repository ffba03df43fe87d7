package dev.csisupervisor.client;

import dev.csisupervisor.common.Printable;
import java.util.List;
import java.util.Objects;

/**
 * CSI's {@code VolumeCapability}: how a volume is accessed (a file system mount or a raw block
 * device) and by whom ({@link AccessMode}).
 *
 * <p>CSI says mount flags MAY hold sensitive information: {@link #toString()} shows how many there
 * are, never their text, and callers that persist a capability should leave them out
 * ({@link #withoutMountFlags()}).
 *
 * @param accessType mount or block
 * @param fsType the file system type for a mount, {@code ""} for the plugin's default; {@code ""} for block
 * @param mountFlags extra mount options for a mount (copied, in order); empty for block
 * @param volumeMountGroup the group that should own the mounted volume ({@code VOLUME_MOUNT_GROUP}),
 *     {@code ""} for none; always {@code ""} for block
 * @param accessMode how the volume is shared
 */
public record VolumeCapability(AccessType accessType, String fsType, List<String> mountFlags,
    String volumeMountGroup, AccessMode accessMode) {

  /** CSI's {@code access_type} oneof. */
  public enum AccessType { MOUNT, BLOCK }

  public VolumeCapability {
    Objects.requireNonNull(accessType, "accessType");
    Objects.requireNonNull(fsType, "fsType");
    Objects.requireNonNull(mountFlags, "mountFlags");
    Objects.requireNonNull(volumeMountGroup, "volumeMountGroup");
    Objects.requireNonNull(accessMode, "accessMode");
    mountFlags = List.copyOf(mountFlags);
    if (accessType == AccessType.BLOCK
        && (!fsType.isEmpty() || !mountFlags.isEmpty() || !volumeMountGroup.isEmpty())) {
      throw new IllegalArgumentException(
          "a block volume has no fsType, mountFlags or volumeMountGroup, got fsType " + Printable.quote(fsType)
              + ", " + mountFlags.size() + " mount flag(s), volumeMountGroup " + Printable.quote(volumeMountGroup));
    }
    checkText(fsType, "fsType");
    checkText(volumeMountGroup, "volumeMountGroup");
    for (int i = 0; i < mountFlags.size(); i++) {
      if (mountFlags.get(i).isBlank()) {
        throw new IllegalArgumentException("mountFlags[" + i + "] must not be blank");
      }
    }
  }

  /** A file system mount with the plugin's default file system and no flags. */
  public static VolumeCapability mount(AccessMode accessMode) {
    return new VolumeCapability(AccessType.MOUNT, "", List.of(), "", accessMode);
  }

  /** A file system mount. */
  public static VolumeCapability mount(String fsType, List<String> mountFlags, AccessMode accessMode) {
    return new VolumeCapability(AccessType.MOUNT, fsType, mountFlags, "", accessMode);
  }

  /** A raw block device. */
  public static VolumeCapability block(AccessMode accessMode) {
    return new VolumeCapability(AccessType.BLOCK, "", List.of(), "", accessMode);
  }

  /** The same capability with {@code volumeMountGroup} set (mount only). */
  public VolumeCapability withVolumeMountGroup(String group) {
    return new VolumeCapability(accessType, fsType, mountFlags, group, accessMode);
  }

  /** The same capability without mount flags: what may be written to disk or shown. */
  public VolumeCapability withoutMountFlags() {
    return mountFlags.isEmpty() ? this : new VolumeCapability(accessType, fsType, List.of(), volumeMountGroup, accessMode);
  }

  private static void checkText(String value, String field) {
    for (int i = 0; i < value.length(); i++) {
      if (Character.isISOControl(value.charAt(i))) {
        throw new IllegalArgumentException(field + " must not contain control characters, got " + Printable.quote(value));
      }
    }
  }

  /** Mount flags are counted, not shown (CSI: they may be sensitive). */
  @Override
  public String toString() {
    return accessType == AccessType.BLOCK
        ? "block/" + accessMode
        : "mount(" + (fsType.isEmpty() ? "default fs" : fsType)
            + (mountFlags.isEmpty() ? "" : ", " + mountFlags.size() + " flag(s)")
            + (volumeMountGroup.isEmpty() ? "" : ", group " + volumeMountGroup) + ")/" + accessMode;
  }
}
