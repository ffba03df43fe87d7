package dev.csisupervisor.volumes;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.volumes.ReadyPlugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Whether a claim may be mounted on this node, decided before any call: the capabilities its access mode
 * needs from the node plugin, its access mode against the allocations already holding the volume here, and
 * the plugin's {@code max_volumes_per_node}, counting the new volumes whose mount has not committed its
 * intent yet (a reserved slot, released once it has). Thread-safe (its own monitor guards the slots).
 */
final class VolumeAdmission {
  private final Map<VolumeKey, VolumeRecord> records;
  /** New volumes being mounted whose intent is not committed yet, per plugin. */
  private final Map<String, Integer> reservedSlots = new HashMap<>();

  VolumeAdmission(Map<VolumeKey, VolumeRecord> records) {
    this.records = records;
  }

  /** Why {@code c} is refused given the volume's record {@code rec} (null: a new volume here), if it is. */
  Optional<VolumeException> check(NodePlugin node, VolumeClaim c, VolumeRecord rec) {
    AccessMode mode = c.capability().accessMode();
    if (mode.needsSingleNodeMultiWriterCapability() && !node.has(CsiCapabilities.SINGLE_NODE_MULTI_WRITER)) {
      return Optional.of(new VolumeException(Reason.UNSUPPORTED, "node plugin " + c.pluginId()
          + " does not offer SINGLE_NODE_MULTI_WRITER, which access mode " + mode + " needs"));
    }
    if (!c.capability().volumeMountGroup().isEmpty() && !node.has("VOLUME_MOUNT_GROUP")) {
      return Optional.of(new VolumeException(Reason.UNSUPPORTED, "node plugin " + c.pluginId()
          + " does not offer VOLUME_MOUNT_GROUP, which volumeMountGroup needs"));
    }
    if (rec == null) {
      return Optional.empty();
    }
    for (UsageRecord u : rec.usages().values()) {
      for (String holder : u.allocs().keySet()) {
        if (holder.equals(c.allocId())) {
          continue;
        }
        AccessMode held = u.usage().accessMode();
        if (mode == AccessMode.SINGLE_NODE_SINGLE_WRITER || held == AccessMode.SINGLE_NODE_SINGLE_WRITER) {
          return Optional.of(conflict(c, holder, "is SINGLE_NODE_SINGLE_WRITER: one allocation only"));
        }
        boolean oneWriter = (c.usage().writes() && mode.singleWriter()) || (u.usage().writes() && held.singleWriter());
        if (oneWriter && c.usage().writes() && u.usage().writes()) {
          return Optional.of(conflict(c, holder, "allows one writer (" + (mode.singleWriter() ? mode : held)
              + ") and that allocation writes to it"));
        }
      }
    }
    return Optional.empty();
  }

  /**
   * Why {@code c} may not use the volume's staging {@code name} of {@code rec}, if it may not: CSI allows one
   * staging per volume, so a second usage must share its access type, fs type, mount group and mount flags.
   */
  Optional<VolumeException> checkStaging(VolumeClaim c, VolumeRecord rec, String name) {
    VolumeRecord.Staging s = name.isEmpty() ? null : rec.stagings().get(name);
    if (s == null) {
      return Optional.empty();
    }
    String wanted = VolumeRecord.compatibility(c.capability());
    if (wanted.equals(s.compatibility())) {
      return Optional.empty();
    }
    String holders = rec.usersOf(name).stream().flatMap(u -> u.allocs().keySet().stream()).sorted().toList().toString();
    return Optional.of(new VolumeException(Reason.ACCESS_CONFLICT, "volume " + c.volumeId() + " of plugin "
        + c.pluginId() + " is staged on this node for alloc(s) " + holders + " with "
        + VolumeRecord.compatibilityDifference(s.compatibility(), wanted)
        + "; one staging per volume (CSI), so alloc " + c.allocId() + " is refused"));
  }

  private static VolumeException conflict(VolumeClaim c, String holder, String why) {
    return new VolumeException(Reason.ACCESS_CONFLICT, "volume " + c.volumeId() + " of plugin " + c.pluginId()
        + " is held by alloc " + holder + " on this node and " + why + "; alloc " + c.allocId() + " is refused");
  }

  /** A slot for a new volume of {@code c}'s plugin, or why there is none; {@link #release} gives it back. */
  synchronized Optional<VolumeException> reserveSlot(NodePlugin node, VolumeClaim c) {
    long max = node.maxVolumes();
    if (max > 0) {
      // A record that only owes a node expansion is no volume on this node.
      long used = records.values().stream().filter(r -> r.pluginId().equals(c.pluginId()) && r.onNode()).count()
          + reservedSlots.getOrDefault(c.pluginId(), 0);
      if (used >= max) {
        return Optional.of(new VolumeException(Reason.LIMIT_REACHED, "node plugin " + c.pluginId()
            + " allows " + max + " volume(s) per node (max_volumes_per_node) and " + used
            + " are in use here; volume " + c.volumeId() + " for alloc " + c.allocId() + " is refused"));
      }
    }
    reservedSlots.merge(c.pluginId(), 1, Integer::sum);
    return Optional.empty();
  }

  /** Gives back the slot a mount reserved ({@code reserved}: whether it did): its intent committed, or failed. */
  synchronized void release(boolean reserved, String pluginId) {
    if (reserved) {
      reservedSlots.computeIfPresent(pluginId, (k, n) -> n <= 1 ? null : n - 1);
    }
  }
}
