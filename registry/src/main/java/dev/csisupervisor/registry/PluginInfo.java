package dev.csisupervisor.registry;

import java.nio.file.Path;
import java.util.Map;

/**
 * One registered plugin instance.
 *
 * @param type controller or node
 * @param name the plugin id, {@code [A-Za-z0-9._-]{1,128}} and not "." or ".."
 * @param version the plugin version as configured or fingerprinted; may be {@code ""}, never null
 * @param allocId the allocation (task group instance) running the plugin: not blank, at most 128 characters,
 *     no control characters
 * @param socketPath the plugin's unix socket
 * @param options the task's plugin options (copied, sorted, immutable)
 * @param fingerprint what the plugin reported
 * @param health the last probe result
 * @param restored true while this entry was loaded from the state file at startup and nobody re-registered
 *     it since; never persisted, and {@link PluginRegistry#register} ignores it (stores {@code false})
 */
public record PluginInfo(
    PluginType type,
    String name,
    String version,
    String allocId,
    Path socketPath,
    Map<String, String> options,
    Fingerprint fingerprint,
    PluginHealth health,
    boolean restored) {

  public PluginInfo {
    Checks.type(type);
    Checks.pluginName(name);
    Checks.notNull(version, "version");
    Checks.allocId(allocId);
    Checks.notNull(socketPath, "socketPath");
    if (socketPath.toString().isEmpty()) {
      throw new IllegalArgumentException("socketPath must not be empty");
    }
    options = Checks.stringMap(options, "options");
    Checks.notNull(fingerprint, "fingerprint");
    Checks.notNull(health, "health");
  }

  /** This registration's key (type, name, allocId). */
  public PluginKey key() {
    return new PluginKey(type, name, allocId);
  }

  public PluginInfo withRestored(boolean restored) {
    return restored == this.restored ? this : new PluginInfo(type, name, version, allocId, socketPath, options, fingerprint, health, restored);
  }

  public PluginInfo withHealth(PluginHealth health) {
    return new PluginInfo(type, name, version, allocId, socketPath, options, fingerprint, health, restored);
  }

  public PluginInfo withVersion(String version) {
    return new PluginInfo(type, name, version, allocId, socketPath, options, fingerprint, health, restored);
  }

  public PluginInfo withSocketPath(Path socketPath) {
    return new PluginInfo(type, name, version, allocId, socketPath, options, fingerprint, health, restored);
  }

  public PluginInfo withOptions(Map<String, String> options) {
    return new PluginInfo(type, name, version, allocId, socketPath, options, fingerprint, health, restored);
  }

  public PluginInfo withFingerprint(Fingerprint fingerprint) {
    return new PluginInfo(type, name, version, allocId, socketPath, options, fingerprint, health, restored);
  }

  /**
   * Equality that ignores {@link #restored()} and {@code health.since()}: what the registry compares to decide
   * whether a re-registration changes anything. A supervisor re-registering after an agent restart with the
   * same plugin, or reporting the same health at a later time, is therefore a no-op.
   */
  public boolean sameContentAs(PluginInfo other) {
    return other != null
        && type == other.type
        && name.equals(other.name)
        && version.equals(other.version)
        && allocId.equals(other.allocId)
        && socketPath.equals(other.socketPath)
        && options.equals(other.options)
        && fingerprint.equals(other.fingerprint)
        && health.sameStateAs(other.health);
  }
}
