package dev.csisupervisor.volumes;

import dev.csisupervisor.common.PluginIds;
import dev.csisupervisor.common.Printable;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * What a volume id or an allocation id may be here: each becomes one directory name under the CSI
 * root ({@code staging/<volume>/...}, {@code per-alloc/<alloc>/<volume>/...}), so it must not be able
 * to name another directory. Not blank, at most 128 bytes in UTF-8 (CSI's limit for ids), not
 * {@code .} or {@code ..}, no {@code /}, NUL or other control characters.
 */
final class VolumeIds {
  /** CSI's size limit for an id, in bytes. */
  static final int MAX_BYTES = 128;

  private VolumeIds() {}

  /** @throws IllegalArgumentException naming {@code field} and what is wrong with the value */
  static String check(String field, String value) {
    Objects.requireNonNull(value, field);
    if (value.isBlank()) {
      throw new IllegalArgumentException(field + " must not be blank, got " + Printable.quote(value));
    }
    if (value.equals(".") || value.equals("..")) {
      throw new IllegalArgumentException(field + " must not be . or .., got " + Printable.quote(value));
    }
    int bytes = value.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_BYTES) {
      throw new IllegalArgumentException(field + " must be at most " + MAX_BYTES + " bytes, got " + bytes + " bytes");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '/') {
        throw new IllegalArgumentException(field + " must not contain '/', got " + Printable.quote(value));
      }
      if (Character.isISOControl(c)) {
        throw new IllegalArgumentException(field + " must not contain NUL or control characters, got "
            + Printable.quote(value));
      }
    }
    return value;
  }

  /** @throws IllegalArgumentException naming the plugin id's problem */
  static String checkPlugin(String pluginId) {
    Objects.requireNonNull(pluginId, "pluginId");
    PluginIds.problem(pluginId).ifPresent(p -> {
      throw new IllegalArgumentException("pluginId " + p);
    });
    return pluginId;
  }
}
