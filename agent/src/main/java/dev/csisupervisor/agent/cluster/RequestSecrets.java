package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.common.SecretsFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * The secrets of a cluster request, read on the controller agent's machine from the file the request names (never
 * from etcd, which keeps only the path). With a secrets directory ({@code cluster.secrets_dir}) only files under
 * it are read, after resolving every symbolic link of the path, so that whoever can write a request into etcd
 * cannot have the controller agent read (and send to a plugin) any other file of its machine. Immutable.
 */
final class RequestSecrets {
  private final String nodeId;
  private final Optional<Path> directory;

  /** @param directory the only directory secrets files are read under; empty: anywhere (tests) */
  RequestSecrets(String nodeId, Optional<Path> directory) {
    this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
    this.directory = Objects.requireNonNull(directory, "directory");
    directory.ifPresent(d -> {
      if (!d.isAbsolute()) {
        throw new IllegalArgumentException("secrets directory must be an absolute path, got " + d);
      }
    });
  }

  /**
   * The secrets in {@code file} ({@link Secrets#none()} without one).
   *
   * @throws Unreadable naming the file, why, and what every possible controller agent needs
   */
  Secrets read(String pluginId, Optional<Path> file) throws Unreadable {
    if (file.isEmpty()) {
      return Secrets.none();
    }
    Path f = file.get();
    try {
      Path real = f.toRealPath();
      if (directory.isPresent() && !real.startsWith(directory.get().toRealPath())) {
        throw new Unreadable("the secrets file " + f + (real.equals(f) ? "" : " (" + real + ")") + " is not under "
            + "cluster.secrets_dir " + directory.get() + " of controller agent " + nodeId + ", so it is not read; "
            + "put it there on every agent that may be the controller agent of " + pluginId);
      }
      return Secrets.of(SecretsFiles.read(real));
    } catch (IOException | IllegalArgumentException e) {
      throw new Unreadable("the secrets file " + f + " cannot be read on controller agent " + nodeId + " ("
          + e.getMessage() + "); every agent that may be the controller agent of " + pluginId + " needs it at that "
          + "path" + directory.map(d -> ", under cluster.secrets_dir " + d).orElse(""));
    }
  }

  /** A request's secrets cannot be read here: the request fails with the message. */
  static final class Unreadable extends Exception {
    private static final long serialVersionUID = 1L;

    Unreadable(String message) {
      super(message);
    }
  }
}
