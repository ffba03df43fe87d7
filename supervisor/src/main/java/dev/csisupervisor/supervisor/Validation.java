package dev.csisupervisor.supervisor;

import dev.csisupervisor.common.PluginIds;
import dev.csisupervisor.common.Printable;

/** Argument checks shared by the public records; every message names the field and the value. */
final class Validation {
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
            field + " must not contain control characters: " + Printable.quote(value));
      }
    }
  }

  /** A plugin id becomes a directory name under the CSI root: nothing that could escape it. */
  static void checkPluginId(String pluginId) {
    PluginIds.problem(pluginId).ifPresent(problem -> {
      throw new IllegalArgumentException("pluginId " + problem);
    });
  }
}
