package dev.csisupervisor.volumes;

import java.util.Map;

/**
 * What the volume manager's parts share: the records in memory (changed only by the manager, on a volume's
 * lane, after the change is committed; the parts read them), the plugins, the lanes, the CSI calls with their
 * retries, and the listeners.
 */
record VolumeContext(Map<VolumeKey, VolumeRecord> records, Plugins plugins, VolumeLanes lanes, CsiCalls calls,
    VolumeEvents events) {}
