package dev.csisupervisor.supervisor;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.regex.Pattern;

/** Argument checks shared by the public records; every message names the field and the value. */
final class Validation {
  /** Linux {@code sun_path} holds 108 bytes including the terminating NUL. */
  static final int MAX_SOCKET_PATH_BYTES = 107;

  private static final Pattern PLUGIN_ID = Pattern.compile("[A-Za-z0-9._-]{1,128}");

  private Validation() {}

  static void checkToken(String field, String value) {
    if (value.isBlank()) {
      throw new IllegalArgumentException(field + " must not be blank");
    }
    if (value.length() > 128) {
      throw new IllegalArgumentException(
          field + " must be at most 128 characters, got " + value.length());
    }
    for (int i = 0; i < value.length(); i++) {
      if (Character.isISOControl(value.charAt(i))) {
        throw new IllegalArgumentException(
            field + " must not contain control characters: " + quote(value));
      }
    }
  }

  /** A plugin id becomes a directory name under the CSI root: nothing that could escape it. */
  static void checkPluginId(String pluginId) {
    if (pluginId.isEmpty()) {
      throw new IllegalArgumentException("pluginId must not be empty");
    }
    if (pluginId.length() > 128) {
      throw new IllegalArgumentException(
          "pluginId must be at most 128 characters, got " + pluginId.length());
    }
    if (pluginId.equals(".") || pluginId.equals("..") || pluginId.contains("/")) {
      throw new IllegalArgumentException(
          "pluginId " + quote(pluginId) + " could escape the plugin root (no '/', '.' or '..')");
    }
    if (!PLUGIN_ID.matcher(pluginId).matches()) {
      throw new IllegalArgumentException(
          "pluginId " + quote(pluginId) + " must match [A-Za-z0-9._-]{1,128}");
    }
  }

  static void checkSocketPath(String field, Path socket) {
    int bytes = socket.toString().getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_SOCKET_PATH_BYTES) {
      throw new IllegalArgumentException(
          field + " " + socket + " is " + bytes + " bytes, over the unix socket limit of "
              + MAX_SOCKET_PATH_BYTES + " bytes");
    }
  }

  static String quote(String value) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : value.toCharArray()) {
      if (Character.isISOControl(c)) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }
}
