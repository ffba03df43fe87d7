package dev.csisupervisor.supervisor;

import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.registry.Fingerprint;

/**
 * The one place where what the csi-client read from a plugin ({@link PluginFingerprint}) becomes
 * what the registry keeps and persists ({@link Fingerprint}). The two records have the same
 * components on purpose, the registry's without any gRPC or CSI types; {@code
 * FingerprintMappingTest} fails if one gains a component the other lacks. What a scheduler derives
 * from the capabilities lives only on the registry's side.
 */
final class FingerprintMapping {
  private FingerprintMapping() {}

  static Fingerprint toRegistry(PluginFingerprint fp) {
    return new Fingerprint(fp.name(), fp.vendorVersion(), fp.manifest(), fp.pluginCapabilities(),
        fp.controllerCapabilities(), fp.nodeCapabilities(), fp.nodeId(), fp.maxVolumesPerNode(),
        fp.accessibleTopology());
  }
}
