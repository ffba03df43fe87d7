package dev.csisupervisor.common;

/**
 * Makes text that came from outside (a socket path, a key, a config value, a plugin's message)
 * safe to put in an exception message or a log line: control characters, and the Unicode line and
 * paragraph separators, are written as {@code \}{@code uXXXX} escapes, so the text always prints
 * as one readable line and cannot move the cursor, clear the screen or forge log lines.
 *
 * <p>Stateless and thread-safe.
 */
public final class Printable {
  private Printable() {}

  /** {@code text} with every unprintable character escaped; {@code text} itself if none is. */
  public static String escape(String text) {
    if (text == null) {
      return null;
    }
    StringBuilder sb = null;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (!needsEscape(c)) {
        if (sb != null) {
          sb.append(c);
        }
        continue;
      }
      if (sb == null) {
        sb = new StringBuilder(text.length() + 16).append(text, 0, i);
      }
      sb.append(String.format("\\u%04x", (int) c));
    }
    return sb == null ? text : sb.toString();
  }

  /** {@code text} escaped and in single quotes, so that blanks and empty text are visible. */
  public static String quote(String text) {
    return text == null ? "null" : "'" + escape(text) + "'";
  }

  private static boolean needsEscape(char c) {
    return Character.isISOControl(c) || c == '\u2028' || c == '\u2029';
  }
}
