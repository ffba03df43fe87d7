package dev.csisupervisor.supervisor;

import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginType;
import java.nio.file.Path;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one hook's registrations say to the log and as task events: a committed registration (a first one, or a
 * new build; a health-only change says nothing here), the types it skipped, and a driver replaced on the socket.
 * Stateless beyond its wiring; called under the hook's lock (the events go out later, outside it).
 */
final class RegistrationReport {
  private static final Logger log = LoggerFactory.getLogger(RegistrationReport.class);

  private final String pluginId;
  private final String allocId;
  private final Path socket;
  private final TaskNotifications notifications;

  RegistrationReport(String pluginId, String allocId, Path socket, TaskNotifications notifications) {
    this.pluginId = pluginId;
    this.allocId = allocId;
    this.socket = socket;
    this.notifications = notifications;
  }

  /** Another driver answers on the socket than the one registered. */
  void driverReplaced(Fingerprint old, PluginFingerprint now) {
    String message = "plugin " + pluginId + ": driver " + old.name() + " " + old.vendorVersion()
        + " was replaced on " + socket + " by " + now.name() + " " + now.vendorVersion();
    log.warn("plugin={} alloc={}: {}", pluginId, allocId, message);
    notifications.event(TaskEvent.DRIVER_REPLACED, message);
  }

  /**
   * Registration {@code r} committed, registering {@code types}.
   *
   * @param first the plugin's first registration since it started
   * @param newBuild it replaced registrations of other types or another fingerprint
   */
  void committed(DesiredRegistrations.Registration r, Set<PluginType> types, boolean first, boolean newBuild) {
    for (PluginType type : types) {
      if (!r.before().containsKey(type) || newBuild) {
        log.info("registered plugin={} type={} alloc={} version={}", pluginId, type, allocId,
            r.fingerprint().vendorVersion());
      }
    }
    // Health-only changes are reported as healthy/unhealthy events, not as a new registration.
    if (!first && !newBuild) {
      return;
    }
    notifications.event(TaskEvent.PLUGIN_REGISTERED, (first ? "registered " : "updated ") + pluginId + " "
        + r.fingerprint().vendorVersion() + " as " + types);
    if (r.skipped() != null) {
      log.info("plugin={} alloc={}: {}", pluginId, allocId, r.skipped());
      notifications.event(TaskEvent.PLUGIN_PARTIAL, r.skipped());
    }
  }
}
