package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import java.util.Objects;

/**
 * What a volume is made from (CSI's {@code volume_content_source}), or what a snapshot is cut from: a snapshot by
 * its id, or a volume by its id. Immutable.
 *
 * @param type a snapshot or a volume
 * @param id the snapshot's or the volume's id as the plugin gave it
 */
public record VolumeSource(Type type, String id) {

  /** What a source is. */
  public enum Type {
    /** A snapshot: the new volume is restored from it (CREATE_DELETE_SNAPSHOT). */
    SNAPSHOT,
    /** A volume: the new volume is its clone (CLONE_VOLUME), or the snapshot is cut from it. */
    VOLUME
  }

  public VolumeSource {
    Objects.requireNonNull(type, "type");
    CsiIds.checkVolume(type == Type.SNAPSHOT ? "snapshotId" : "volumeId", id);
  }

  public static VolumeSource snapshot(String snapshotId) {
    return new VolumeSource(Type.SNAPSHOT, snapshotId);
  }

  public static VolumeSource volume(String volumeId) {
    return new VolumeSource(Type.VOLUME, volumeId);
  }

  /** "snapshot snap-1", "volume vol-1". */
  @Override
  public String toString() {
    return type.name().toLowerCase(java.util.Locale.ROOT) + " " + id;
  }
}
