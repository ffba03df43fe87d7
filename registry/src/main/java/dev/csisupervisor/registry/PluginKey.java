package dev.csisupervisor.registry;

import dev.csisupervisor.common.Printable;

/**
 * The identity of one registration: (type, name, allocId). One name may have several instances (one per
 * allocation). {@link #storeKey()} is the stable string form used as the state store key.
 */
public record PluginKey(PluginType type, String name, String allocId) {

  /** Every registry record's store key starts with this. */
  public static final String STORE_PREFIX = "plugin/";

  public PluginKey {
    Checks.type(type);
    Checks.pluginName(name);
    Checks.allocId(allocId);
  }

  /** {@code plugin/<type id>/<name>/<allocId>}, e.g. {@code plugin/csi-node/ebs/8f2c...}. */
  public String storeKey() {
    return STORE_PREFIX + type.id() + "/" + name + "/" + allocId;
  }

  /**
   * Parses {@link #storeKey()}'s form.
   *
   * @throws IllegalArgumentException naming the key and what is wrong with it
   */
  public static PluginKey fromStoreKey(String key) {
    if (key == null || !key.startsWith(STORE_PREFIX)) {
      throw new IllegalArgumentException("store key must start with '" + STORE_PREFIX + "', got " + (key == null ? "null" : Printable.quote(key)));
    }
    // The name cannot contain '/', the allocId may: split into at most three parts after the prefix.
    String[] parts = key.substring(STORE_PREFIX.length()).split("/", 3);
    if (parts.length != 3) {
      throw new IllegalArgumentException("store key must be " + STORE_PREFIX + "<type>/<name>/<allocId>, got " + Printable.quote(key));
    }
    try {
      return new PluginKey(PluginType.parse(parts[0]), parts[1], parts[2]);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("bad store key " + Printable.quote(key) + ": " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return type.id() + "/" + name + "@" + allocId;
  }
}
