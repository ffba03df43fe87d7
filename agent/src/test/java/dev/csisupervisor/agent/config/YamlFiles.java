package dev.csisupervisor.agent.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Config files for the loader's tests. */
final class YamlFiles {
  private YamlFiles() {}

  /** Writes {@code yaml} to {@code <dir>/agent.yaml} and returns its path. */
  static Path write(Path dir, String yaml) throws IOException {
    Path f = dir.resolve("agent.yaml");
    Files.writeString(f, yaml);
    return f;
  }
}
