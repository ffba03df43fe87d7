package dev.csisupervisor.common;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * What a CSI volume id and an allocation id may be, shared by the node volume manager and the cluster catalog.
 * A volume id is whatever the spec allows (a controller names it: {@code projects/p/zones/z/disks/d},
 * {@code /subscriptions/...}): not empty, at most 128 bytes of UTF-8, no NUL. An allocation id becomes one
 * directory name as it is, so it must not be able to name another directory: not blank, at most 128 bytes, not
 * {@code .} or {@code ..}, no {@code /}, NUL or other control characters. Stateless and thread-safe.
 */
public final class CsiIds {
  /** CSI's size limit for an id, in bytes. */
  public static final int MAX_BYTES = 128;

  private CsiIds() {}

  /**
   * A volume id (or a volume name) as CSI allows it.
   *
   * @throws IllegalArgumentException naming {@code field} and what is wrong with the value
   */
  public static String checkVolume(String field, String value) {
    Objects.requireNonNull(value, field);
    if (value.isEmpty()) {
      throw new IllegalArgumentException(field + " must not be empty");
    }
    java.nio.charset.CharsetEncoder utf8 = StandardCharsets.UTF_8.newEncoder();
    if (!utf8.canEncode(value)) {
      throw new IllegalArgumentException(field + " must be valid UTF-8 (it has an unpaired surrogate), got "
          + Printable.quote(value));
    }
    int bytes = value.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_BYTES) {
      throw new IllegalArgumentException(field + " must be at most " + MAX_BYTES + " bytes (CSI's size limit), got "
          + bytes + " bytes");
    }
    if (value.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(field + " must not contain NUL, got " + Printable.quote(value));
    }
    return value;
  }

  /**
   * An allocation id (one directory name).
   *
   * @throws IllegalArgumentException naming {@code field} and what is wrong with the value
   */
  public static String checkName(String field, String value) {
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
  public static String checkPlugin(String field, String pluginId) {
    Objects.requireNonNull(pluginId, field);
    PluginIds.problem(pluginId).ifPresent(p -> {
      throw new IllegalArgumentException(field + " " + p);
    });
    return pluginId;
  }
}
