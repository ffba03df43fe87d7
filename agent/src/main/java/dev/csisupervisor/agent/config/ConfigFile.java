package dev.csisupervisor.agent.config;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Reading a config file's text, with the errors every reader of it gives (no such file, permission denied, a
 * directory, too big). Apart from {@link ConfigLoader} so that a reader of one key ({@link AdminSocketReader})
 * does not bring up the YAML mapper with it. Stateless.
 */
final class ConfigFile {
  /**
   * The largest config file read: a real one is a few KiB. Anything bigger is refused before it
   * is parsed, so a wrong file (a log, an image) fails at once instead of taking seconds and a
   * heap's worth of memory.
   */
  static final int MAX_BYTES = 1024 * 1024;

  private ConfigFile() {}

  /** The text of the config file {@code abs}, at most {@link #MAX_BYTES}. */
  static String read(Path abs) throws ConfigException {
    String text;
    try {
      if (Files.isDirectory(abs)) {
        throw new ConfigException(abs, "cannot read config file: it is a directory");
      }
      long size = Files.size(abs);
      if (size > MAX_BYTES) {
        throw new ConfigException(abs, tooBig(size));
      }
      byte[] bytes;
      try (var in = Files.newInputStream(abs)) {
        // It may have grown since: read no more than the limit allows.
        bytes = in.readNBytes(MAX_BYTES + 1);
      }
      if (bytes.length > MAX_BYTES) {
        throw new ConfigException(abs, tooBig(bytes.length));
      }
      text = new String(bytes, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new ConfigException(abs, "cannot read config file: no such file");
    } catch (AccessDeniedException e) {
      throw new ConfigException(abs, "cannot read config file: permission denied");
    } catch (IOException e) {
      throw new ConfigException(abs, "cannot read config file: " + e.getMessage());
    }
    return text;
  }

  static String tooBig(long size) {
    return "config file is " + size + " bytes, over the limit of " + MAX_BYTES
        + " bytes (is it the right file?)";
  }
}
