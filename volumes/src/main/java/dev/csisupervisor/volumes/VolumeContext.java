package dev.csisupervisor.volumes;

import java.util.Map;

/**
 * What the volume manager's parts share: the records in memory (changed only by the manager, on a volume's
 * lane, after the change is committed; the parts read them), the plugins, the lanes, the CSI calls with their
 * retries, the listeners, and the machine's mounts and the secrets of later steps.
 */
record VolumeContext(Map<VolumeKey, VolumeRecord> records, ReadyPlugins plugins, VolumeLanes lanes,
    CsiCalls calls, VolumeEvents events, Services services) {
  /** The machine's side: its mount table, where secrets come from, and the cluster's claims (if any). */
  record Services(HostMounts mounts, VolumeSecrets secrets, ClusterClaims clusterClaims) {}

  HostMounts mounts() {
    return services.mounts();
  }

  VolumeSecrets secrets() {
    return services.secrets();
  }

  ClusterClaims clusterClaims() {
    return services.clusterClaims();
  }
}
