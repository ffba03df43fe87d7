package dev.csisupervisor.registry;

/** A {@link PluginDispenser} failed (threw or returned null) for a registered plugin. */
public final class PluginDispenseException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient PluginInfo plugin;

  public PluginDispenseException(PluginInfo plugin, String message, Throwable cause) {
    super("dispensing a client for " + plugin.key() + " failed: " + message, cause);
    this.plugin = plugin;
  }

  /** The plugin the client was for. */
  public PluginInfo plugin() {
    return plugin;
  }
}
