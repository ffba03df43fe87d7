package dev.csisupervisor.volumes;

import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import dev.csisupervisor.volumes.VolumeRecordCodec.RecordFormatException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The volume records a start finds in the state store, and what recovery will do with each one an earlier run
 * left unfinished (in words, for the log and {@code VolumeManager.recovered()}). A record this version cannot
 * read stays in the store untouched and is reported, never guessed at.
 */
final class VolumeRestore {
  private static final Logger log = LoggerFactory.getLogger(VolumeRestore.class);

  private VolumeRestore() {}

  /** Reads {@code stored} (store key to bytes; keys outside the volumes' prefix are passed over) into {@code records}. */
  static List<String> restore(Map<String, byte[]> stored, Map<VolumeKey, VolumeRecord> records) {
    List<String> recovered = new ArrayList<>();
    int skipped = 0;
    for (Map.Entry<String, byte[]> e : stored.entrySet()) {
      if (!e.getKey().startsWith(VolumeKey.STORE_PREFIX)) {
        continue;
      }
      try {
        VolumeRecord r = VolumeRecordCodec.decode(e.getKey(), e.getValue());
        records.put(r.key(), r);
        if (r.hasWork()) {
          recovered.add(describeWork(r));
        }
      } catch (RecordFormatException ex) {
        // Left in the store untouched (a newer agent's record survives a downgrade); never guessed at.
        skipped++;
        recovered.add("volume record " + e.getKey() + " skipped: " + ex.getMessage());
        log.error("VOLUME RECORD SKIPPED: {} cannot be read ({}); it stays in the state store untouched",
            e.getKey(), ex.getMessage());
      }
    }
    if (!records.isEmpty() || skipped > 0) {
      log.info("restored {} volume record(s) ({} with an interrupted operation, {} skipped)", records.size(),
          records.values().stream().filter(VolumeRecord::hasWork).count(), skipped);
    }
    for (String line : recovered) {
      log.warn("volume recovery: {}", line);
    }
    return recovered;
  }

  private static String describeWork(VolumeRecord r) {
    List<String> parts = new ArrayList<>();
    for (UsageRecord u : r.usages().values()) {
      u.allocs().forEach((alloc, phase) -> {
        if (phase == AllocPhase.PUBLISHING) {
          parts.add("interrupted mount for alloc " + alloc + " (" + u.usage() + "): rolled back");
        } else if (phase == AllocPhase.UNPUBLISHING) {
          parts.add("interrupted unmount for alloc " + alloc + " (" + u.usage() + "): finished");
        } else if (phase == AllocPhase.LOST) {
          parts.add("lost mount for alloc " + alloc + " (" + u.usage() + "): mounted again");
        }
      });
    }
    r.stagings().forEach((name, s) -> {
      if (r.usersOf(name).isEmpty()) {
        parts.add("staging " + r.stagingPath(name) + " used by no allocation: unstaged");
      } else if (s.state() == StageState.LOST) {
        parts.add("lost staging " + r.stagingPath(name) + ": staged again");
      } else if (s.state() == StageState.STAGING) {
        parts.add("interrupted stage at " + r.stagingPath(name) + ": finished or undone");
      }
    });
    if (r.controller() == ControllerState.PUBLISHING
        || (r.controller() == ControllerState.PUBLISHED && r.usages().isEmpty() && r.stagings().isEmpty())) {
      parts.add("controller publication to " + r.controllerNodeId() + " unused: unpublished");
    }
    return "volume " + r.key() + ": " + String.join("; ", parts) + " once plugin " + r.pluginId() + " is ready";
  }
}
