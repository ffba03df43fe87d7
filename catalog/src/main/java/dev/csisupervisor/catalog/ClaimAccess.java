package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Printable;

/**
 * How a claim's allocation uses the volume, as {@code ControllerPublishVolume} must be told it (CSI's
 * {@code volume_capability}: a block device, or a file system of a type): the controller agent publishes with the
 * claim's access type, not always as a mount. Mount flags are not kept (they may hold credentials, and are the node's
 * business: {@code NodePublishVolume} gets them).
 *
 * @param block a raw block device; else a mounted file system
 * @param fsType the file system type asked for ({@code ""}: the plugin's default); empty for a block device
 */
public record ClaimAccess(boolean block, String fsType) {
  /** A mount with the plugin's default file system: what claims recorded before the access type was kept mean. */
  public static final ClaimAccess MOUNT = new ClaimAccess(false, "");
  /** A raw block device. */
  public static final ClaimAccess BLOCK = new ClaimAccess(true, "");

  public ClaimAccess {
    if (fsType == null) {
      throw new IllegalArgumentException("fsType must not be null");
    }
    if (block && !fsType.isEmpty()) {
      throw new IllegalArgumentException("fsType must be empty for a block volume, got " + Printable.quote(fsType));
    }
    if (fsType.length() > 128 || !fsType.strip().equals(fsType)) {
      throw new IllegalArgumentException("fsType " + Printable.quote(fsType)
          + " is not a file system type (at most 128 characters, no leading or trailing blanks)");
    }
  }

  /** A mount of a file system of type {@code fsType} ({@code ""}: the plugin's default). */
  public static ClaimAccess mount(String fsType) {
    return fsType == null || fsType.isEmpty() ? MOUNT : new ClaimAccess(false, fsType);
  }

  @Override
  public String toString() {
    return block ? "block" : fsType.isEmpty() ? "mount" : "mount (" + fsType + ")";
  }
}
