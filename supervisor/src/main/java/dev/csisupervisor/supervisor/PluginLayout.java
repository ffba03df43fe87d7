package dev.csisupervisor.supervisor;

import dev.csisupervisor.client.PluginKind;
import java.nio.file.Path;

/**
 * Where a plugin's socket lives under the CSI root: {@code <csiRoot>/<type>/<pluginId>/csi.sock},
 * with {@code <type>} the kind's {@link PluginKind#dirName() directory name}. The supervisor
 * makes the directory at prestart; a launcher that starts the plugin itself hands it the same
 * path.
 *
 * <p>Stateless and thread-safe.
 */
public final class PluginLayout {
  /** The socket's file name in its plugin directory (and in the task's mount directory). */
  public static final String SOCKET_FILE = "csi.sock";

  private PluginLayout() {}

  /** {@code <csiRoot>/<type>/<pluginId>}: the plugin's own directory (mode 0700). */
  public static Path pluginDir(Path csiRoot, PluginKind kind, String pluginId) {
    return csiRoot.resolve(kind.dirName()).resolve(pluginId);
  }

  /** {@code <csiRoot>/<type>/<pluginId>/csi.sock}: the socket the plugin serves CSI on. */
  public static Path socket(Path csiRoot, PluginKind kind, String pluginId) {
    return pluginDir(csiRoot, kind, pluginId).resolve(SOCKET_FILE);
  }
}
