package dev.csisupervisor.agent.config;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

  /**
   * Writes {@code yaml} as {@link #write} does and loads it: that must fail, with a message that
   * names the file and contains each of {@code expected}.
   */
  static ConfigException failsToLoad(Path dir, String yaml, String... expected) throws IOException {
    Path f = write(dir, yaml);
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(f));
    assertTrue(e.getMessage().startsWith(f + ": "), e.getMessage());
    for (String s : expected) {
      assertTrue(e.getMessage().contains(s), e.getMessage());
    }
    return e;
  }
}
