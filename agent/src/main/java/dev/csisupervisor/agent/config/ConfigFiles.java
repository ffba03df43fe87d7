package dev.csisupervisor.agent.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reading the config file again for one section of it (cluster:, log:), after the loader read it whole. */
final class ConfigFiles {
  private ConfigFiles() {}

  /** The text of {@code abs} (an absolute, normalized path). */
  static String read(Path abs) throws ConfigException {
    try {
      return Files.readString(abs, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ConfigException(abs, "cannot read config file: " + e.getMessage());
    }
  }
}
