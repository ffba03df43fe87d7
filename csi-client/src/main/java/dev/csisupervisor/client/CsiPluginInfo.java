package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.Map;
import java.util.Objects;

/**
 * The answer to CSI {@code Identity.GetPluginInfo}. Immutable.
 *
 * @param name the plugin's name (CSI requires it: never blank)
 * @param vendorVersion the plugin's opaque version string; empty if the plugin sent none
 * @param manifest opaque extra information; empty if none (sorted, unmodifiable)
 */
public record CsiPluginInfo(String name, String vendorVersion, Map<String, String> manifest) {
  public CsiPluginInfo {
    Values.requireNonBlank(name, "name");
    Objects.requireNonNull(vendorVersion, "vendorVersion");
    manifest = Values.copyOf(manifest, "manifest");
  }
}
