package dev.csisupervisor.agent.config;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * How the agent logs: a default level, levels per logger (a package or a class), and the format.
 * Read from the config file's optional {@code log:} section, then overridden by the environment
 * ({@link #overriddenBy}):
 *
 * <pre>
 * log:
 *   level: info            # default level: trace, debug, info, warn, error or off
 *   format: text           # text | json (one JSON object per line)
 *   levels:                # per logger; the most specific name wins
 *     dev.csisupervisor.registry: debug
 * </pre>
 *
 * <pre>
 * CSI_AGENT_LOG_LEVEL=info,dev.csisupervisor.registry=debug
 * CSI_AGENT_LOG_FORMAT=json
 * </pre>
 *
 * @param level  the default (root) level
 * @param format text lines or JSON lines
 * @param levels levels per logger name, in the order written
 */
public record LogSettings(Level level, Format format, Map<String, Level> levels) {

  /** The default level, and {@code logger=level} entries, comma-separated. */
  public static final String LEVEL_ENV = "CSI_AGENT_LOG_LEVEL";
  /** {@code text} or {@code json}. */
  public static final String FORMAT_ENV = "CSI_AGENT_LOG_FORMAT";

  /** What the daemon does without a {@code log:} section: info, text. */
  public static final LogSettings DEFAULT = new LogSettings(Level.INFO, Format.TEXT, Map.of());

  /** Log levels, most verbose first; {@code OFF} logs nothing. */
  public enum Level { TRACE, DEBUG, INFO, WARN, ERROR, OFF }

  /** {@code TEXT}: one line per event, as people read it; {@code JSON}: one object per line. */
  public enum Format { TEXT, JSON }

  static final String SECTION = "log";
  private static final List<String> FIELDS = List.of("format", "level", "levels");
  /** A Java package or class name: dot-separated identifiers. */
  private static final Pattern LOGGER_NAME =
      Pattern.compile("\\p{javaJavaIdentifierStart}\\p{javaJavaIdentifierPart}*"
          + "(\\.\\p{javaJavaIdentifierStart}\\p{javaJavaIdentifierPart}*)*");
  private static final YAMLFactory YAML = YAMLFactory.builder()
      .enable(com.fasterxml.jackson.core.StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

  public LogSettings {
    requireNonNull(level, "level");
    requireNonNull(format, "format");
    levels = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(levels, "levels")));
    for (var e : levels.entrySet()) {
      requireNonNull(e.getValue(), "levels[" + e.getKey() + "]");
      if (!LOGGER_NAME.matcher(e.getKey()).matches()) {
        throw new IllegalArgumentException("levels: \"" + e.getKey()
            + "\" is not a logger name (a package or class, like dev.csisupervisor.registry)");
      }
    }
  }

  /** These settings with another default level. */
  public LogSettings withLevel(Level newLevel) {
    return new LogSettings(newLevel, format, levels);
  }

  /**
   * These settings overridden by {@link #LEVEL_ENV} and {@link #FORMAT_ENV} where they are set
   * (and not blank): the variable's default level and format replace these; its logger levels
   * are added to these, replacing the same logger's.
   *
   * @throws IllegalArgumentException naming the variable and the bad value
   */
  public LogSettings overriddenBy(Map<String, String> env) {
    Level newLevel = level;
    Format newFormat = format;
    Map<String, Level> newLevels = new LinkedHashMap<>(levels);
    String l = env.get(LEVEL_ENV);
    if (l != null && !l.isBlank()) {
      boolean sawDefault = false;
      for (String part : l.split(",", -1)) {
        String entry = part.strip();
        int eq = entry.indexOf('=');
        if (entry.isEmpty()) {
          throw new IllegalArgumentException(LEVEL_ENV + ": empty entry in \"" + l
              + "\" (write LEVEL or LOGGER=LEVEL, comma-separated)");
        } else if (eq < 0) {
          if (sawDefault) {
            throw new IllegalArgumentException(LEVEL_ENV + ": two default levels in \"" + l
                + "\" (write one LEVEL, then LOGGER=LEVEL entries)");
          }
          sawDefault = true;
          newLevel = level(entry, LEVEL_ENV);
        } else {
          String name = entry.substring(0, eq).strip();
          if (!LOGGER_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(LEVEL_ENV + ": \"" + name
                + "\" is not a logger name (a package or class, like dev.csisupervisor.registry)");
          }
          newLevels.remove(name); // an override moves to the end, as if written last
          newLevels.put(name, level(entry.substring(eq + 1).strip(), LEVEL_ENV + " (" + name + ")"));
        }
      }
    }
    String f = env.get(FORMAT_ENV);
    if (f != null && !f.isBlank()) {
      newFormat = format(f.strip(), FORMAT_ENV);
    }
    return new LogSettings(newLevel, newFormat, newLevels);
  }

  /**
   * The {@code log:} section of {@code yaml}; each problem with it is added to {@code problems}
   * (as {@code log.level: ... (line L, column C)}), and {@link #DEFAULT}'s value used instead.
   * YAML that does not parse, or is not a mapping, gives {@link #DEFAULT} and no problem here: the
   * config loader reports that.
   */
  static LogSettings parse(String yaml, List<String> problems) {
    try (JsonParser p = YAML.createParser(yaml)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return DEFAULT;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        p.nextToken();
        if (name.equals(SECTION)) {
          return section(p, problems);
        }
        p.skipChildren();
      }
    } catch (IOException e) {
      // Not YAML (or a duplicate key): the config loader reports where.
    }
    return DEFAULT;
  }

  private static LogSettings section(JsonParser p, List<String> problems) throws IOException {
    if (isEmpty(p)) {
      return DEFAULT;
    }
    if (p.currentToken() != JsonToken.START_OBJECT) {
      problems.add(SECTION + ": expected a mapping (level, format, levels)" + at(p));
      p.skipChildren();
      return DEFAULT;
    }
    Level level = DEFAULT.level();
    Format format = DEFAULT.format();
    Map<String, Level> levels = new LinkedHashMap<>();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      String path = SECTION + "." + field;
      JsonLocation keyAt = p.currentTokenLocation();
      p.nextToken();
      try {
        switch (field) {
          case "level" -> level = level(scalar(p, path), path);
          case "format" -> format = format(scalar(p, path), path);
          case "levels" -> levels(p, path, levels, problems);
          default -> {
            p.skipChildren();
            throw new IllegalArgumentException(path + ": unknown field" + at(keyAt)
                + " (known fields: " + String.join(", ", FIELDS) + ")");
          }
        }
      } catch (IllegalArgumentException e) {
        problems.add(e.getMessage().contains("(line ") ? e.getMessage() : e.getMessage() + at(p));
      }
    }
    return new LogSettings(level, format, levels);
  }

  private static void levels(JsonParser p, String path, Map<String, Level> into,
      List<String> problems) throws IOException {
    if (isEmpty(p)) {
      return;
    }
    if (p.currentToken() != JsonToken.START_OBJECT) {
      p.skipChildren();
      throw new IllegalArgumentException(path
          + ": expected a mapping of logger names to levels (dev.csisupervisor.registry: debug)");
    }
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      JsonLocation keyAt = p.currentTokenLocation();
      p.nextToken();
      String at = path + "." + name;
      try {
        if (!LOGGER_NAME.matcher(name).matches()) {
          p.skipChildren();
          throw new IllegalArgumentException(path + ": \"" + name + "\" is not a logger name"
              + " (a package or class, like dev.csisupervisor.registry)" + at(keyAt));
        }
        into.put(name, level(scalar(p, at), at));
      } catch (IllegalArgumentException e) {
        problems.add(e.getMessage().contains("(line ") ? e.getMessage() : e.getMessage() + at(p));
      }
    }
  }

  /** {@code key:} with nothing after it, which YAML reads as null or (at the end) as "". */
  private static boolean isEmpty(JsonParser p) throws IOException {
    return p.currentToken() == JsonToken.VALUE_NULL
        || p.currentToken() == JsonToken.VALUE_STRING && p.getText().isEmpty();
  }

  private static String scalar(JsonParser p, String path) throws IOException {
    if (p.currentToken().isScalarValue() && p.currentToken() != JsonToken.VALUE_NULL) {
      return p.getText();
    }
    p.skipChildren();
    throw new IllegalArgumentException(path + ": expected a single value (a string)");
  }

  private static Level level(String s, String what) {
    try {
      return Level.valueOf(s.strip().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(what + ": \"" + s + "\" is not a log level"
          + " (use trace, debug, info, warn, error or off)");
    }
  }

  private static Format format(String s, String what) {
    try {
      return Format.valueOf(s.strip().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(what + ": \"" + s + "\" is not a log format (use text or json)");
    }
  }

  private static String at(JsonParser p) {
    return at(p.currentTokenLocation());
  }

  private static String at(JsonLocation loc) {
    return loc == null || loc.getLineNr() < 1 ? ""
        : " (line " + loc.getLineNr() + ", column " + loc.getColumnNr() + ")";
  }
}
