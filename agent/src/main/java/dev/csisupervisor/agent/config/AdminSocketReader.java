package dev.csisupervisor.agent.config;

import dev.csisupervisor.common.SocketPaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;

/**
 * The admin socket a config file gives the daemon, for the CLI's {@code --config} and {@code $CSI_AGENT_CONFIG}:
 * the same path as {@code ConfigLoader.load(file).adminSocket()}, without the whole config model (Jackson's YAML
 * mapper and every rule of the file: some 300 classes and a fifth of a CLI command's time).
 *
 * <p>The CLI needs two top-level keys, {@code data_dir} and {@code admin_socket}. A file written the usual way
 * (block style at the top level; each of the two a plain path or a quoted one on its own line) is read here by
 * a small scanner that knows YAML's quoted scalars and flow collections well enough to see whether a line at
 * the left margin really is a top-level key. Anything it is not sure of (block scalars, a value over several
 * lines, anchors, aliases, tags, several documents, tabs, a value YAML would read as something other than a
 * string, a path the daemon would refuse) goes to the daemon's own reading ({@link ConfigLoader}), which then
 * gives the answer or its error, word for word. The rest of the file is not checked: the daemon checks it when
 * it reads the file ({@code run}, {@code reload}).
 *
 * <p>Stateless and thread-safe.
 */
public final class AdminSocketReader {
  /** Plain scalars YAML 1.1 (Jackson's reading) resolves to null or a boolean, not to a string. */
  private static final Set<String> NOT_STRINGS = Set.of("null", "true", "false", "yes", "no", "on", "off", "y", "n");

  private AdminSocketReader() {}

  /**
   * The admin socket of the agent {@code file} configures.
   *
   * @throws ConfigException as {@link ConfigLoader#load} throws it, for the file and for these two keys
   */
  public static Path adminSocket(Path file) throws ConfigException {
    Path abs = file.toAbsolutePath().normalize();
    String text = ConfigFile.read(abs);
    Optional<Path> quick = quick(text, abs);
    return quick.isPresent() ? quick.get() : ConfigLoader.parse(text, abs).adminSocket();
  }

  /**
   * The admin socket from {@code text} read as the config file {@code abs} (absolute, normalized), or empty
   * when the scanner is not sure: then only the daemon's reading can tell.
   */
  static Optional<Path> quick(String text, Path abs) {
    Path baseDir = abs.getParent() != null ? abs.getParent() : Path.of("/");
    Scanner s = new Scanner(text);
    if (!s.scan()) {
      return Optional.empty();
    }
    Optional<Path> dataDir = path(s.dataDir, baseDir);
    if (dataDir.isEmpty() || Files.exists(dataDir.get()) && !Files.isDirectory(dataDir.get())) {
      return Optional.empty();
    }
    Optional<Path> socket = s.adminSocket == null ? Optional.of(dataDir.get().resolve(AgentConfig.DEFAULT_ADMIN_SOCKET))
        : path(s.adminSocket, baseDir);
    return socket.filter(SocketPaths::fits);
  }

  /** A path as the daemon's rules resolve it: against the config file's directory, normalized. */
  private static Optional<Path> path(String value, Path baseDir) {
    if (value == null || value.isBlank()) {
      return Optional.empty();
    }
    try {
      return Optional.of(baseDir.resolve(value).normalize());
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  /**
   * One pass over the text: the values of {@code data_dir} and {@code admin_socket}, each a string for sure, or
   * {@link #scan} false. It follows quoted scalars and flow collections across lines (where a line at the left
   * margin may be inside a string, not a key) and refuses whatever it does not follow.
   */
  private static final class Scanner {
    private final String text;
    String dataDir;
    String adminSocket;
    private boolean seenDataDir;
    private boolean seenAdminSocket;
    /** Inside a quoted scalar across lines: its quote, else 0. */
    private char quote;
    /** How deep in [ ] and { } the scan is. */
    private int flow;
    /** The last line was one of our two keys: the next one must be at the left margin (no continuation). */
    private boolean ownValue;

    Scanner(String text) {
      this.text = text;
    }

    boolean scan() {
      if (text.indexOf('\t') >= 0 || text.indexOf('\r') >= 0 || text.indexOf('\uFEFF') >= 0) {
        return false;
      }
      for (String line : text.split("\n", -1)) {
        if (!line(line)) {
          return false;
        }
      }
      return quote == 0 && flow == 0 && seenDataDir;
    }

    private boolean line(String line) {
      boolean margin = !line.isEmpty() && line.charAt(0) != ' ';
      if (line.isBlank()) {
        return true; // blank lines change nothing (not even a quoted scalar's text we do not keep)
      }
      if (ownValue && !margin) {
        return false; // a plain value continued on the next line, or a nested one: not ours to read
      }
      ownValue = false;
      if (quote != 0 || flow != 0) {
        return !margin && tokens(line, 0); // a line at the margin inside a string or collection: unsure
      }
      if (!margin) {
        return tokens(line, 0);
      }
      if (line.charAt(0) == '#') {
        return true;
      }
      // A top-level key: a plain word, a colon, then a space or the end.
      int colon = 0;
      while (colon < line.length() && (Character.isLetterOrDigit(line.charAt(colon)) || line.charAt(colon) == '_')) {
        colon++;
      }
      if (colon == 0 || colon >= line.length() || line.charAt(colon) != ':'
          || colon + 1 < line.length() && line.charAt(colon + 1) != ' ') {
        return false; // ---, %, -, ?, {, a quoted key, an anchor, a merge key: unsure
      }
      String key = line.substring(0, colon);
      if (key.equals("data_dir") || key.equals("admin_socket")) {
        String value = value(line.substring(colon + 1));
        if (value == null) {
          return false;
        }
        if (key.equals("data_dir")) {
          if (seenDataDir) {
            return false; // a duplicate: the daemon refuses the file
          }
          seenDataDir = true;
          dataDir = value;
        } else {
          if (seenAdminSocket) {
            return false;
          }
          seenAdminSocket = true;
          adminSocket = value;
        }
        ownValue = true;
        return true;
      }
      return tokens(line, colon + 1);
    }

    /**
     * The value after {@code key:} when it is a string for sure, on this line: a plain path, or a quoted one
     * without escapes; else null.
     */
    private static String value(String rest) {
      String v = rest.strip();
      int comment = v.indexOf(" #");
      if (v.startsWith("#")) {
        return null; // nothing on this line: the value is below it, or null
      }
      if (v.startsWith("\"") || v.startsWith("'")) {
        char q = v.charAt(0);
        StringBuilder sb = new StringBuilder();
        int i = 1;
        for (; i < v.length(); i++) {
          char c = v.charAt(i);
          if (q == '"' && c == '\\') {
            return null; // escapes: left to YAML
          }
          if (c == q) {
            if (q == '\'' && i + 1 < v.length() && v.charAt(i + 1) == '\'') {
              sb.append('\'');
              i++;
              continue;
            }
            break;
          }
          sb.append(c);
        }
        if (i >= v.length()) {
          return null; // goes on to the next line
        }
        String after = v.substring(i + 1).strip();
        return after.isEmpty() || after.startsWith("#") ? sb.toString() : null;
      }
      String plain = (comment >= 0 ? v.substring(0, comment) : v).strip();
      if (plain.isEmpty() || !plainString(plain)) {
        return null;
      }
      return plain;
    }

    /** A plain scalar YAML reads as this very string: a path of safe characters, not a number, null or boolean. */
    private static boolean plainString(String s) {
      char first = s.charAt(0);
      if (!(first == '/' || Character.isLetter(first) || s.startsWith("./") || s.startsWith("../"))) {
        return false;
      }
      for (int i = 0; i < s.length(); i++) {
        char c = s.charAt(i);
        if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '.'
            || c == '_' || c == '-')) {
          return false;
        }
      }
      return !NOT_STRINGS.contains(s.toLowerCase(java.util.Locale.ROOT));
    }

    /**
     * Follows quoted scalars and flow collections through {@code line} from {@code from}, as YAML reads them;
     * false where it cannot be sure: a quote inside a plain scalar, a block scalar, an anchor, alias or tag.
     */
    private boolean tokens(String line, int from) {
      boolean start = true; // at a place where a node may start (after indentation, "- ", ": ", "[", "{", ",")
      boolean afterQuote = false; // the last thing was a quoted scalar's end
      for (int i = from; i < line.length(); i++) {
        char c = line.charAt(i);
        if (quote == '"') {
          if (c == '\\') {
            i++;
          } else if (c == '"') {
            quote = 0;
            start = false;
            afterQuote = true;
          }
          continue;
        }
        if (quote == '\'') {
          if (c == '\'') {
            if (i + 1 < line.length() && line.charAt(i + 1) == '\'') {
              i++;
            } else {
              quote = 0;
              start = false;
              afterQuote = true;
            }
          }
          continue;
        }
        if (c == ' ') {
          continue;
        }
        boolean spaceBefore = i == 0 || line.charAt(i - 1) == ' ';
        if (c == '#' && spaceBefore) {
          return true; // a comment to the end of the line
        }
        if (start && (c == '"' || c == '\'')) {
          quote = c;
          continue;
        }
        if (c == '"' || c == '\'') {
          return false; // inside a plain scalar: literal to YAML, but unsure here
        }
        if (start && (c == '|' || c == '>' || c == '&' || c == '*' || c == '!' || c == '%' || c == '@'
            || c == '`')) {
          return false; // a block scalar, anchor, alias, tag or reserved indicator
        }
        boolean indicator = i + 1 >= line.length() || line.charAt(i + 1) == ' ';
        if ((c == '-' || c == '?') && start && indicator) {
          continue; // a sequence entry or a complex key: a node starts after it
        }
        // ':' ends a key before a space, or (in a flow collection, JSON-style) right after a quoted key.
        if (c == ':' && (indicator || flow > 0 && afterQuote)) {
          start = true;
          afterQuote = false;
          continue;
        }
        afterQuote = false;
        if ((c == '[' || c == '{') && (start || flow > 0)) {
          flow++;
          start = true;
          continue;
        }
        if ((c == ']' || c == '}') && flow > 0) {
          flow--;
          start = false;
          continue;
        }
        if (c == ',' && flow > 0) {
          start = true;
          continue;
        }
        start = false; // inside a plain scalar
      }
      return true;
    }
  }
}
