package dev.csisupervisor.volumes;

import dev.csisupervisor.common.CsiIds;
import java.nio.charset.StandardCharsets;

/**
 * What a volume id and an allocation id may be here. A volume id is whatever the spec allows (a controller
 * names it: {@code projects/p/zones/z/disks/d}, {@code /subscriptions/...}): not empty, at most 128 bytes of
 * UTF-8, no NUL; its directory name under the CSI root is a hash of it ({@link #dirName}, as the kubelet's
 * {@code sha256(handle)}), never the id itself. An allocation id becomes one directory name as it is
 * ({@code per-alloc/<alloc>/...}), so it must not be able to name another directory: not blank, at most 128
 * bytes, not {@code .} or {@code ..}, no {@code /}, NUL or other control characters.
 */
final class VolumeIds {
  /** CSI's size limit for an id, in bytes. */
  static final int MAX_BYTES = CsiIds.MAX_BYTES;

  private VolumeIds() {}

  /**
   * A volume id (or a volume name) as CSI allows it.
   *
   * @throws IllegalArgumentException naming {@code field} and what is wrong with the value
   */
  static String checkVolume(String field, String value) {
    return CsiIds.checkVolume(field, value);
  }

  /** A volume id's directory name: the hex SHA-256 of its UTF-8 bytes (64 characters, any id). */
  static String dirName(String volumeId) {
    return sha256(volumeId);
  }

  /** Hex SHA-256 of a string's UTF-8 bytes. */
  static String sha256(String s) {
    try {
      return java.util.HexFormat.of().formatHex(
          java.security.MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }

  /** @throws IllegalArgumentException naming {@code field} and what is wrong with the value */
  static String check(String field, String value) {
    return CsiIds.checkName(field, value);
  }

  /** @throws IllegalArgumentException naming the plugin id's problem */
  static String checkPlugin(String pluginId) {
    return CsiIds.checkPlugin("pluginId", pluginId);
  }
}
