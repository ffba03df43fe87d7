package dev.csisupervisor.registry;

/**
 * Makes a client for a registered plugin, e.g. a CSI client bound to its socket. Called by
 * {@link PluginRegistry#dispense} on the caller's thread, outside registry locks.
 *
 * @param <T> the client type
 */
@FunctionalInterface
public interface PluginDispenser<T> {
  T dispense(PluginInfo plugin) throws Exception;
}
