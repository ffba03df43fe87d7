package dev.csisupervisor.supervisor;

import dev.csisupervisor.common.CsiEndpoint;
import dev.csisupervisor.common.SocketPaths;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A plugin task's place on the host: its directory under the CSI root ({@code <csiRoot>/<type>/<id>/}, mode 0700)
 * and its socket there, or an external plugin's socket as configured. Made at prestart with the mounts and
 * environment the task gets; a socket the task left behind is removed at stop. Thread-safe (no state but paths).
 */
final class PluginTaskFiles {
  private static final Logger log = LoggerFactory.getLogger(PluginTaskFiles.class);

  private final CsiPluginConfig config;
  private final Path pluginDir;
  private final Path socket;

  /** @throws IllegalArgumentException if the socket path is longer than a unix socket's (107 bytes) */
  PluginTaskFiles(CsiPluginConfig config, Path csiRoot) {
    this.config = config;
    if (config.externalSocket() != null) {
      this.socket = config.externalSocket();
      this.pluginDir = socket.getParent();
    } else {
      this.pluginDir = PluginLayout.pluginDir(csiRoot, config.type(), config.pluginId());
      this.socket = SocketPaths.checkLength("socket path", pluginDir.resolve(PluginLayout.SOCKET_FILE));
    }
  }

  Path pluginDir() {
    return pluginDir;
  }

  Path socket() {
    return socket;
  }

  /**
   * Makes the plugin's directory (idempotent: a restarted task finds it in place) and says what the task mounts
   * (its directory at the mount dir, bidirectional; {@code /dev}) and where it finds its endpoint. An external
   * plugin gets nothing.
   */
  PrestartResponse prestart(PrestartRequest request) throws IOException {
    List<TaskMount> mounts = new ArrayList<>();
    Map<String, String> env = new LinkedHashMap<>();
    if (config.externalSocket() == null) {
      Files.createDirectories(pluginDir);
      Files.setPosixFilePermissions(pluginDir, PosixFilePermissions.fromString("rwx------"));
      mounts.add(new TaskMount(pluginDir, config.mountDir(), TaskMount.Propagation.BIDIRECTIONAL, false));
      mounts.add(new TaskMount(Path.of("/dev"), "/dev", TaskMount.Propagation.HOST_TO_TASK, false));
      if (!request.taskEnv().containsKey(CsiEndpoint.ENV)) {
        env.put(CsiEndpoint.ENV, CsiEndpoint.of(Path.of(config.mountDir(), PluginLayout.SOCKET_FILE)));
      }
    }
    return new PrestartResponse(mounts, env);
  }

  /** Removes the socket a stopped task left behind (never an external plugin's, never a directory). */
  void removeLeftoverSocket() {
    if (config.externalSocket() != null) {
      return;
    }
    try {
      if (Files.exists(socket, LinkOption.NOFOLLOW_LINKS) && !Files.isDirectory(socket, LinkOption.NOFOLLOW_LINKS)) {
        Files.delete(socket);
        log.info("plugin={} left its socket behind; removed {}", config.pluginId(), socket);
      }
    } catch (IOException e) {
      log.warn("plugin={}: could not remove leftover socket {}", config.pluginId(), socket, e);
    }
  }
}
