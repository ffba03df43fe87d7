package dev.csisupervisor.common;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A secrets file: one {@code key=value} per line, blank lines and {@code #} comments ignored, the value
 * everything after the first {@code =}. The CLI reads it for a request; the volume manager keeps only its path
 * and reads it again when a later step (a controller unpublish, a mount done again) needs the secrets. No
 * message ever shows a value or a whole line. Stateless.
 */
public final class SecretsFiles {
  private SecretsFiles() {}

  /**
   * The file's secrets, in file order.
   *
   * @throws IOException if it cannot be read (the message names the file)
   * @throws IllegalArgumentException naming the file and the line that is not {@code key=value}
   */
  public static Map<String, String> read(Path file) throws IOException {
    List<String> lines;
    try {
      lines = Files.readAllLines(file);
    } catch (IOException e) {
      throw new IOException("secrets file " + file + " cannot be read: " + e, e);
    }
    Map<String, String> secrets = new LinkedHashMap<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      int eq = line.indexOf('=');
      if (eq <= 0 || line.substring(0, eq).isBlank()) {
        throw new IllegalArgumentException("secrets file " + file + " line " + (i + 1)
            + ": expected key=value (the line is not shown: it may hold a secret)");
      }
      secrets.put(line.substring(0, eq).strip(), line.substring(eq + 1));
    }
    return secrets;
  }
}
