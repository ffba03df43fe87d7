package dev.csisupervisor.tasks.artifact;

import static java.util.Objects.requireNonNull;

import java.nio.file.Path;

/**
 * One installed revision of a plugin's artifact.
 *
 * @param pluginId   the plugin
 * @param sha256     the verified SHA-256 of the downloaded file
 * @param dir        {@code <data_dir>/plugins/<id>_<sha256 prefix>}
 * @param executable the entry to run, inside {@code dir}
 */
public record Revision(String pluginId, String sha256, Path dir, Path executable) {
  public Revision {
    requireNonNull(pluginId, "pluginId");
    requireNonNull(sha256, "sha256");
    requireNonNull(dir, "dir");
    requireNonNull(executable, "executable");
    if (!executable.normalize().startsWith(dir)) {
      throw new IllegalArgumentException("executable " + executable + " is not inside " + dir);
    }
  }

  /** The revision's name, its directory's: {@code <id>_<sha256 prefix>}. */
  public String name() {
    return dir.getFileName().toString();
  }
}
