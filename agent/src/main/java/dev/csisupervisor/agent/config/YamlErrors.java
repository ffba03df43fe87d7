package dev.csisupervisor.agent.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.deser.DeserializationProblemHandler;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The problems the YAML reading itself finds, each with its field and its line and column:
 * syntax errors, values of the wrong kind, duplicate keys, and unknown fields (all of them,
 * {@link UnknownFields}, not only the first). The values' own rules are {@link AgentConfigRules}'.
 */
final class YamlErrors {
  private YamlErrors() {}

  /**
   * Records every unknown key (with its path, line and the known keys there) and skips it, so
   * that one unknown key does not hide the config's other problems.
   */
  static final class UnknownFields extends DeserializationProblemHandler {
    private static final int MAX_UNKNOWN_REPORTED = 100;

    private final String yaml;
    private final List<String> problems = new ArrayList<>();
    private final List<Map.Entry<Integer, String>> found = new ArrayList<>();
    private int more;
    private String[] lines;

    UnknownFields(String yaml) {
      this.yaml = yaml;
    }

    /** The unknown fields found so far, in file order. */
    List<String> problems() {
      return problems;
    }

    @Override
    public boolean handleUnknownProperty(DeserializationContext ctxt, JsonParser p,
        JsonDeserializer<?> deserializer, Object beanOrClass, String name) throws IOException {
      JsonParser main = ctxt.getParser();
      JsonStreamContext holder;
      if (p == main) {
        // At the value: a container's own context is the child; its parent holds the key.
        holder = p.getParsingContext();
        if (p.currentToken() == JsonToken.START_OBJECT
            || p.currentToken() == JsonToken.START_ARRAY) {
          holder = holder.getParent();
        }
        holder = holder.getParent();
      } else {
        // Replayed from a buffer after the whole mapping was read: the main parser is just
        // past the mapping, in the context that holds it.
        holder = main.getParsingContext();
      }
      if (found.size() >= MAX_UNKNOWN_REPORTED) {
        // Enough to act on; locating each of thousands would cost more than it tells.
        more++;
        problems.removeIf(s -> s.startsWith("... and "));
        problems.add("... and " + more + " more unknown field(s)");
        p.skipChildren();
        return true;
      }
      String at = path(holder);
      String field = at.isEmpty() ? name : at + "." + name;
      if (lines == null) {
        lines = yaml.split("\n", -1);
      }
      JsonLocation loc = at.isEmpty() ? topLevelKeyLine(name, main.currentLocation())
          : keyLine(lines, name, main.currentLocation());
      found.add(Map.entry(loc == null ? Integer.MAX_VALUE : loc.getLineNr(),
          field + ": unknown field" + location(loc) + " (known fields: "
          + known(deserializer.getKnownPropertyNames()) + ")"));
      // In file order, whatever order the parser met them in.
      found.sort(Map.Entry.comparingByKey());
      problems.clear();
      found.forEach(e -> problems.add(e.getValue()));
      p.skipChildren();
      return true;
    }

    /** A top-level key starts a line, unindented. */
    private JsonLocation topLevelKeyLine(String key, JsonLocation loc) {
      Pattern top = Pattern.compile("^[\"']?" + Pattern.quote(key) + "[\"']?\\s*:");
      for (int i = 0; i < lines.length; i++) {
        if (top.matcher(lines[i]).find()) {
          return new JsonLocation(loc == null ? null : loc.contentReference(), -1, i + 1, 1);
        }
      }
      return keyLine(lines, key, loc);
    }

    private static String path(JsonStreamContext ctx) {
      java.util.ArrayDeque<String> parts = new java.util.ArrayDeque<>();
      for (JsonStreamContext c = ctx; c != null && !c.inRoot(); c = c.getParent()) {
        if (c.inArray()) {
          parts.addFirst("[" + Math.max(c.getCurrentIndex(), 0) + "]");
        } else if (c.inObject() && c.getCurrentName() != null) {
          JsonStreamContext parent = c.getParent();
          parts.addFirst((parent == null || parent.inRoot() ? "" : ".") + c.getCurrentName());
        }
      }
      String s = String.join("", parts);
      return s.startsWith(".") ? s.substring(1) : s;
    }
  }

  // ---- Jackson errors ------------------------------------------------------------------------

  /** One problem for a Jackson error: the field, what was expected, and where. */
  static String describe(JsonProcessingException e, String yaml) {
    JsonLocation loc = e.getLocation();
    if (e.getProcessor() instanceof JsonParser p && p.currentTokenLocation() != null
        && p.currentTokenLocation().getLineNr() > 0) {
      // Where the offending key or value starts, not where the parser stopped after it.
      loc = p.currentTokenLocation();
    }
    String where = location(loc);
    if (e instanceof UnrecognizedPropertyException u) {
      String field = path(u.getPath());
      where = location(keyLine(yaml, u.getPropertyName(), loc));
      return field + ": unknown field" + where + " (known fields: " + known(u.getKnownPropertyIds())
          + ")";
    }
    if (e instanceof MismatchedInputException m && !m.getPath().isEmpty()) {
      return path(m.getPath()) + ": expected " + kind(m.getTargetType()) + where;
    }
    if (e instanceof JsonMappingException m && !m.getPath().isEmpty()) {
      return path(m.getPath()) + ": " + firstLine(e.getOriginalMessage()) + where;
    }
    if (e instanceof MismatchedInputException m) {
      return "expected a mapping of settings at the top level" + where;
    }
    return "not valid YAML" + where + ": " + firstLine(e.getOriginalMessage());
  }

  /**
   * The YAML parser reports where it stopped, which for a key is after its value: look back from
   * there for the line that holds the key.
   */
  private static JsonLocation keyLine(String yaml, String key, JsonLocation loc) {
    if (loc == null || loc.getLineNr() < 1) {
      return loc;
    }
    return keyLine(yaml.split("\n", -1), key, loc);
  }

  private static JsonLocation keyLine(String[] lines, String key, JsonLocation loc) {
    if (loc == null || loc.getLineNr() < 1) {
      return loc;
    }
    Pattern p = Pattern.compile("^[\\s-]*[\"']?" + Pattern.quote(key) + "[\"']?\\s*:");
    for (int i = Math.min(loc.getLineNr(), lines.length); i >= 1; i--) {
      java.util.regex.Matcher m = p.matcher(lines[i - 1]);
      if (m.find() || lines[i - 1].contains(key + ":")) {
        int col = lines[i - 1].indexOf(key) + 1;
        return new JsonLocation(loc.contentReference(), -1, i, Math.max(col, 1));
      }
    }
    return loc;
  }

  private static String path(List<JsonMappingException.Reference> refs) {
    StringBuilder sb = new StringBuilder();
    for (JsonMappingException.Reference r : refs) {
      if (r.getFieldName() != null) {
        if (sb.length() > 0) {
          sb.append('.');
        }
        sb.append(r.getFieldName());
      } else if (r.getIndex() >= 0) {
        sb.append('[').append(r.getIndex()).append(']');
      }
    }
    return sb.length() == 0 ? "(top level)" : sb.toString();
  }

  private static String known(Collection<Object> ids) {
    TreeSet<String> names = new TreeSet<>();
    if (ids != null) {
      ids.forEach(id -> names.add(String.valueOf(id)));
    }
    return String.join(", ", names);
  }

  private static String kind(Class<?> type) {
    if (type == null) {
      return "a different kind of value";
    }
    if (List.class.isAssignableFrom(type) || type.isArray()) {
      return "a list";
    }
    // RawConfig's types are records or (Supervision, Plugin) plain classes: all mappings.
    if (Map.class.isAssignableFrom(type) || type.isRecord()
        || type.getEnclosingClass() == RawConfig.class) {
      return "a mapping";
    }
    if (type == Integer.class || type == int.class || type == Long.class) {
      return "an integer";
    }
    if (type == Boolean.class || type == boolean.class) {
      return "true or false";
    }
    if (type == String.class) {
      return "a single value (a string)";
    }
    return "a " + type.getSimpleName();
  }

  private static String location(JsonLocation loc) {
    if (loc == null || loc.getLineNr() < 1) {
      return "";
    }
    return " (line " + loc.getLineNr() + ", column " + loc.getColumnNr() + ")";
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "";
    }
    int nl = s.indexOf('\n');
    return (nl < 0 ? s : s.substring(0, nl)).strip();
  }
}
