package dev.csisupervisor.common;

import java.util.Optional;

/**
 * What a plugin id may be: 1 to {@value #MAX_LENGTH} characters of {@code A-Z a-z 0-9 . _ -},
 * and neither {@code .} nor {@code ..}. A plugin id becomes a directory name
 * ({@code <csiRoot>/<type>/<id>/}) and a registry key, so nothing that could leave its directory
 * or split a key is allowed.
 *
 * <p>Stateless and thread-safe.
 */
public final class PluginIds {
  /** The longest plugin id, in characters. */
  public static final int MAX_LENGTH = 128;

  /**
   * The characters an id may hold, as messages write them. The same set names a node in the cluster
   * catalog and each segment of its key prefix: what names a directory here names a key there.
   */
  public static final String CHARACTERS = "A-Z a-z 0-9 . _ -";

  private PluginIds() {}

  /** Whether {@code id} is a valid plugin id; {@code null} is not. */
  public static boolean isValid(String id) {
    return id != null && !id.isEmpty() && id.length() <= MAX_LENGTH && !id.equals(".") && !id.equals("..")
        && onlyIdCharacters(id);
  }

  /** Whether every character of {@code s} is one of {@link #CHARACTERS} (true for ""). */
  public static boolean onlyIdCharacters(String s) {
    // A loop, not a regex: the registry checks every name a restore decodes.
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '.' || c == '_' || c == '-')) {
        return false;
      }
    }
    return true;
  }

  /**
   * What is wrong with {@code id}, worded to follow the name of the field it came from
   * ({@code "pluginId " + problem}: {@code pluginId must be 1 to 128 of A-Z a-z 0-9 . _ -, got
   * 'my plugin'}), the value quoted by {@link Printable#quote}; empty if it is valid.
   */
  public static Optional<String> problem(String id) {
    if (id == null) {
      return Optional.of("must not be null");
    }
    if (isValid(id)) {
      return Optional.empty();
    }
    if (id.isEmpty()) {
      return Optional.of("must not be empty");
    }
    if (id.length() > MAX_LENGTH) {
      return Optional.of("must be at most " + MAX_LENGTH + " characters, got " + id.length());
    }
    if (id.equals(".") || id.equals("..") || id.contains("/")) {
      return Optional.of("must not be '.' or '..' or contain '/' (it could escape the plugin root),"
          + " got " + Printable.quote(id));
    }
    return Optional.of("must be 1 to " + MAX_LENGTH + " of " + CHARACTERS + ", got " + Printable.quote(id));
  }
}
