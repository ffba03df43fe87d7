package dev.csisupervisor.volumes;

import java.time.Instant;
import java.util.Objects;

/**
 * Something that happened to a volume on this node, for listeners (task events, logs, metrics).
 *
 * @param kind what happened
 * @param pluginId the node plugin
 * @param volumeId the volume
 * @param allocId the allocation concerned, or {@code ""} for the volume as a whole
 * @param message details for a human (an error, the plugin's condition message); never a secret
 * @param time when, from the manager's clock
 */
public record VolumeEvent(Kind kind, String pluginId, String volumeId, String allocId, String message, Instant time) {

  /** What happened. */
  public enum Kind {
    /** Staged (if needed) and published for the allocation. */
    MOUNTED,
    /** Unpublished for the allocation (and unstaged if it was the last use). */
    UNMOUNTED,
    /** A mount failed; whatever it had done was undone (or is pending to be undone). */
    MOUNT_FAILED,
    /** A mount interrupted by a crash of the agent was rolled back after the restart. */
    ROLLED_BACK,
    /** A pending unmount or rollback could not be finished yet (plugin absent or failing); retried. */
    PENDING,
    /**
     * A mount the journal records is not in the mount table (a reboot, an unmount behind the agent's back): it
     * is mounted again at the same path as soon as its plugin is ready.
     */
    LOST,
    /** A lost mount was staged and published again at its recorded path. */
    REMOUNTED,
    /**
     * A stage, publish or controller publish answered DEADLINE_EXCEEDED, ABORTED or UNAVAILABLE: its outcome is
     * uncertain, and the same call is sent again until a final answer or the operation deadline.
     */
    UNCERTAIN,
    /** The plugin reports the volume's condition abnormal. */
    ABNORMAL,
    /** The plugin reports the volume's condition normal again. */
    NORMAL,
    /**
     * ControllerExpandVolume asked for a NodeExpandVolume that cannot be sent now (the volume is not published
     * here, or its node plugin is not ready), or the one sent at a mount failed: recorded, and sent after the
     * volume's next NodePublishVolume here.
     */
    NODE_EXPANSION_OWED,
    /** The NodeExpandVolume owed to a volume was done after its NodePublishVolume here, and is cleared. */
    NODE_EXPANDED
  }

  public VolumeEvent {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(pluginId, "pluginId");
    Objects.requireNonNull(volumeId, "volumeId");
    Objects.requireNonNull(allocId, "allocId");
    Objects.requireNonNull(message, "message");
    Objects.requireNonNull(time, "time");
  }
}
