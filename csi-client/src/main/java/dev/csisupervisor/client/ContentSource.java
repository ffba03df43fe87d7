package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.Objects;

/**
 * CSI's {@code VolumeContentSource}: what a new volume is pre-populated from, a snapshot (a restore,
 * needs {@code CREATE_DELETE_SNAPSHOT}) or another volume (a clone, needs {@code CLONE_VOLUME}). Immutable.
 *
 * @param kind a snapshot or a volume
 * @param id the snapshot's or the volume's id, as the plugin made it; not blank
 */
public record ContentSource(Kind kind, String id) {

  /** CSI's {@code VolumeContentSource.type} oneof. */
  public enum Kind { SNAPSHOT, VOLUME }

  public ContentSource {
    Objects.requireNonNull(kind, "kind");
    Values.requireNonBlank(id, kind == Kind.SNAPSHOT ? "snapshotId" : "volumeId");
  }

  /** Restored from the snapshot {@code snapshotId}. */
  public static ContentSource snapshot(String snapshotId) {
    return new ContentSource(Kind.SNAPSHOT, snapshotId);
  }

  /** Cloned from the volume {@code volumeId}. */
  public static ContentSource volume(String volumeId) {
    return new ContentSource(Kind.VOLUME, volumeId);
  }

  @Override
  public String toString() {
    return kind.name().toLowerCase(java.util.Locale.ROOT) + ":" + id;
  }
}
