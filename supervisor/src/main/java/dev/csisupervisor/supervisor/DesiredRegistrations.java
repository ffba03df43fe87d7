package dev.csisupervisor.supervisor;

import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The registrations one hook wants in the registry (its desired state; {@link RegistrationSync} brings the
 * registry there), numbered by a version that grows with every change, and the registration whose commit the
 * hook awaits. Guarded by the hook's lock: every method is called with it held.
 */
final class DesiredRegistrations {
  /** A registration waiting for its commit: what it registers, what was wanted before (to undo it). */
  record Registration(PluginFingerprint fingerprint, Map<PluginType, PluginInfo> before, String skipped,
      boolean driverReplaced) {}

  private final CsiPluginConfig config;
  private final String allocId;
  private final PluginTaskFiles files;
  /** Asks for a sync (on the registry executor); called after every change. */
  private final Runnable requestSync;
  private final Map<PluginType, PluginInfo> wanted = new LinkedHashMap<>();
  private long version;
  /** The version whose commit a registration awaits; 0: none. */
  private long awaited;
  private Registration pending;
  private boolean detached;

  DesiredRegistrations(CsiPluginConfig config, String allocId, PluginTaskFiles files, Runnable requestSync) {
    this.config = config;
    this.allocId = allocId;
    this.files = files;
    this.requestSync = requestSync;
  }

  /** This desired state as {@link RegistrationSync}'s owner; {@code synced} hears the end of each sync. */
  RegistrationSync.Owner owner(SyncListener synced) {
    return new RegistrationSync.Owner() {
      @Override
      public RegistrationSync.Desired desired() {
        return DesiredRegistrations.this.desired();
      }

      @Override
      public void synced(long version, RuntimeException failure) {
        synced.synced(version, failure);
      }
    };
  }

  /** Hears that a sync of a version finished (under the hook's lock); {@code failure} null if it committed. */
  @FunctionalInterface
  interface SyncListener {
    void synced(long version, RuntimeException failure);
  }

  /** What a sync should write now; null once detached (the registrations are left for a new agent). */
  RegistrationSync.Desired desired() {
    return detached ? null : new RegistrationSync.Desired(new LinkedHashMap<>(wanted), version);
  }

  /** The wanted types, in the order they were added. */
  Set<PluginType> types() {
    return Collections.unmodifiableSet(new LinkedHashSet<>(wanted.keySet()));
  }

  /** The fingerprint the wanted registrations carry, if there are any. */
  Optional<Fingerprint> fingerprint() {
    return wanted.values().stream().findFirst().map(PluginInfo::fingerprint);
  }

  /** Whether a registration awaits its commit. */
  boolean awaiting() {
    return awaited != 0;
  }

  /** Wants {@code fp} registered as {@code as}'s types, healthy since {@code health}; its commit is awaited. */
  void register(RegisteredTypes as, PluginFingerprint fp, PluginHealth health, boolean driverReplaced) {
    Map<PluginType, PluginInfo> before = new LinkedHashMap<>(wanted);
    wanted.clear();
    for (PluginType type : as.types()) {
      wanted.put(type, info(type, fp, health));
    }
    pending = new Registration(fp, before, as.skipped(), driverReplaced);
    awaited = ++version;
    requestSync.run();
  }

  /** The wanted registrations with {@code health} (a health-only change). */
  void health(PluginHealth health) {
    wanted.replaceAll((type, info) -> info.withHealth(health));
    version++;
    requestSync.run();
  }

  /**
   * A sync of {@code syncedVersion} finished: the registration whose commit it was (no longer awaited), or null
   * if it was no such commit.
   */
  Registration completes(long syncedVersion) {
    if (awaited == 0 || syncedVersion < awaited) {
      return null;
    }
    Registration r = pending;
    pending = null;
    awaited = 0;
    return r;
  }

  /** Whether {@code syncedVersion} is what is wanted now (nothing changed since). */
  boolean isCurrent(long syncedVersion) {
    return syncedVersion == version;
  }

  /** The registration {@code r} did not commit: back to what was wanted before it (nothing, for a first one). */
  void undo(Registration r) {
    wanted.clear();
    wanted.putAll(r.before());
    version++;
    requestSync.run();
  }

  /** Whether {@code r} registers a new build: other types, or another fingerprint, than what it replaced. */
  boolean newBuild(Registration r) {
    if (r.before().isEmpty()) {
      return false;
    }
    Fingerprint now = FingerprintMapping.toRegistry(r.fingerprint());
    return !r.before().keySet().equals(wanted.keySet())
        || r.before().values().stream().anyMatch(info -> !info.fingerprint().equals(now));
  }

  /** No registration awaits its commit any more (supervision ended). */
  void stopAwaiting() {
    pending = null;
    awaited = 0;
  }

  /** Nothing is wanted: the next sync deregisters everything (the caller syncs). */
  void clear() {
    wanted.clear();
    version++;
  }

  /** Nothing more is written: what is registered stays for a new agent. */
  void detach() {
    detached = true;
    wanted.clear();
  }

  private PluginInfo info(PluginType type, PluginFingerprint fp, PluginHealth health) {
    Map<String, String> options = new LinkedHashMap<>();
    options.put("provider", fp.name());
    options.put("mount_point", files.pluginDir().toString());
    if (config.externalSocket() == null) {
      options.put("container_mount_point", config.mountDir());
    }
    return new PluginInfo(type, config.pluginId(), fp.vendorVersion(), allocId, files.socket(), options,
        FingerprintMapping.toRegistry(fp), health, false);
  }
}
