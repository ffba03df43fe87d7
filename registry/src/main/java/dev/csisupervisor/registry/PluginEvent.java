package dev.csisupervisor.registry;

import dev.csisupervisor.common.Bounds;
import java.time.Instant;

/**
 * One change of the registry, for one plugin type.
 *
 * @param sequence this type's event sequence number: 1, 2, 3, ... without gaps in commit order (restarts at 1
 *     when the registry is opened; the restored entries are in every subscription's snapshot, not events)
 * @param type the plugin type (equals {@code plugin.type()})
 * @param kind what happened
 * @param plugin the registration after the change; for {@link Kind#DEREGISTERED} the one that was removed
 * @param time when the change was committed, from the registry's clock
 */
public record PluginEvent(long sequence, PluginType type, Kind kind, PluginInfo plugin, Instant time) {

  /** What happened to the registration. */
  public enum Kind {
    /** A new key (type, name, allocId). */
    REGISTERED,
    /** An existing key with different content; see {@link PluginInfo#sameContentAs}. */
    UPDATED,
    /** The key was removed: deregistered, reconciled away, or its restore grace period ran out. */
    DEREGISTERED
  }

  public PluginEvent {
    Bounds.atLeast(sequence, 1, "sequence");
    Checks.type(type);
    Checks.notNull(kind, "kind");
    Checks.notNull(plugin, "plugin");
    Checks.notNull(time, "time");
    if (plugin.type() != type) {
      throw new IllegalArgumentException("plugin.type must equal type " + type + ", got " + plugin.type());
    }
  }
}
