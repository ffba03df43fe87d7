package dev.csisupervisor.agent.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.deser.DeserializationProblemHandler;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Reads the agent's YAML config into a validated {@link AgentConfig}.
 *
 * <p>Keys are snake_case; an unknown key, a value of the wrong kind, a duplicate key, and every
 * invalid value is an error. All problems found are reported together, each naming its field as a
 * path ({@code plugins[1].type}) and what is wrong. Relative paths (and a relative {@code command}
 * that contains a {@code /}) resolve against the config file's directory.
 *
 * <p>Stateless and thread-safe.
 */
public final class ConfigLoader {
  /** Linux {@code sun_path} holds 108 bytes including the terminating NUL. */
  public static final int MAX_SOCKET_PATH_BYTES = 107;

  /**
   * A {@code command} naming the mock CSI plugin bundled with the agent: the launcher runs it in a
   * JVM like the agent's own, from the agent's class path.
   */
  public static final String BUILTIN_MOCK_PLUGIN = "builtin:mock-plugin";

  private static final Pattern PLUGIN_ID = Pattern.compile("[A-Za-z0-9._-]{1,128}");
  private static final String SOCKET_FILE = "csi.sock";
  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
  /** Sampling /proc more often than this costs more than it tells. */
  static final Duration MIN_RESOURCE_INTERVAL = Duration.ofMillis(50);

  private static final ObjectMapper MAPPER = YAMLMapper.builder(new YAMLFactory())
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .build();

  /**
   * The largest config file read: a real one is a few KiB. Anything bigger is refused before it
   * is parsed, so a wrong file (a log, an image) fails at once instead of taking seconds and a
   * heap's worth of memory.
   */
  public static final int MAX_CONFIG_BYTES = 1024 * 1024;

  private ConfigLoader() {}

  /**
   * Reads and validates {@code file}.
   *
   * @throws ConfigException naming the file and every problem: unreadable, not YAML, unknown or
   *     duplicate fields, missing or invalid values
   */
  public static AgentConfig load(Path file) throws ConfigException {
    Path abs = file.toAbsolutePath().normalize();
    String text;
    try {
      if (Files.isDirectory(abs)) {
        throw new ConfigException(abs, "cannot read config file: it is a directory");
      }
      long size = Files.size(abs);
      if (size > MAX_CONFIG_BYTES) {
        throw new ConfigException(abs, tooBig(size));
      }
      byte[] bytes;
      try (var in = Files.newInputStream(abs)) {
        // It may have grown since: read no more than the limit allows.
        bytes = in.readNBytes(MAX_CONFIG_BYTES + 1);
      }
      if (bytes.length > MAX_CONFIG_BYTES) {
        throw new ConfigException(abs, tooBig(bytes.length));
      }
      text = new String(bytes, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      throw new ConfigException(abs, "cannot read config file: no such file");
    } catch (AccessDeniedException e) {
      throw new ConfigException(abs, "cannot read config file: permission denied");
    } catch (IOException e) {
      throw new ConfigException(abs, "cannot read config file: " + e.getMessage());
    }
    return parse(text, abs);
  }

  /**
   * Validates YAML text as if read from {@code file} (relative paths resolve against its directory).
   *
   * @throws ConfigException naming the file and every problem
   */
  public static AgentConfig parse(String yaml, Path file) throws ConfigException {
    Path abs = file.toAbsolutePath().normalize();
    if (yaml.length() > MAX_CONFIG_BYTES) {
      throw new ConfigException(abs, tooBig(yaml.length()));
    }
    if (yaml.isBlank()) {
      throw new ConfigException(abs, "config file is empty (data_dir and plugins are required)");
    }
    RawConfig.Root raw;
    UnknownFields unknown = new UnknownFields(yaml);
    try {
      raw = MAPPER.readerFor(RawConfig.Root.class).withHandler(unknown).readValue(yaml);
    } catch (JsonProcessingException e) {
      List<String> all = new ArrayList<>(unknown.problems);
      all.add(describe(e, yaml));
      throw new ConfigException(abs, all);
    } catch (IOException e) {
      throw new ConfigException(abs, "cannot read config: " + e.getMessage());
    }
    if (raw == null) {
      throw new ConfigException(abs, "config file is empty (data_dir and plugins are required)");
    }
    List<String> earlier = new ArrayList<>(unknown.problems);
    LogSettings.parse(yaml, earlier); // the log: section's problems, each with its line
    return new Validator(abs, earlier).validate(raw);
  }

  private static String tooBig(long size) {
    return "config file is " + size + " bytes, over the limit of " + MAX_CONFIG_BYTES
        + " bytes (is it the right file?)";
  }

  /**
   * Records every unknown key (with its path, line and the known keys there) and skips it, so
   * that one unknown key does not hide the config's other problems.
   */
  private static final class UnknownFields extends DeserializationProblemHandler {
    private static final int MAX_UNKNOWN_REPORTED = 100;

    private final String yaml;
    private final List<String> problems = new ArrayList<>();
    private final List<Map.Entry<Integer, String>> found = new ArrayList<>();
    private int more;
    private String[] lines;

    UnknownFields(String yaml) {
      this.yaml = yaml;
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

  private static String describe(JsonProcessingException e, String yaml) {
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
    if (Map.class.isAssignableFrom(type) || type.isRecord()) {
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

  // ---- validation ----------------------------------------------------------------------------

  /** Collects every problem; builds the config only if there is none. */
  private static final class Validator {
    private final Path file;
    private final Path baseDir;
    private final List<String> problems = new ArrayList<>();

    Validator(Path file, List<String> earlier) {
      this.file = file;
      this.baseDir = file.getParent() != null ? file.getParent() : Path.of("/");
      problems.addAll(earlier);
    }

    AgentConfig validate(RawConfig.Root raw) throws ConfigException {
      Path dataDir = null;
      if (raw.dataDir() == null || raw.dataDir().isBlank()) {
        problems.add("data_dir: missing (the agent's data directory, e.g. /var/lib/csi-agent)");
      } else {
        dataDir = path("data_dir", raw.dataDir());
        if (dataDir != null && Files.exists(dataDir) && !Files.isDirectory(dataDir)) {
          problems.add("data_dir: " + dataDir + " exists and is not a directory");
        }
      }
      Path csiRoot = raw.csiRoot() == null
          ? (dataDir == null ? null : dataDir.resolve(AgentConfig.DEFAULT_CSI_ROOT))
          : path("csi_root", raw.csiRoot());
      Path adminSocket = raw.adminSocket() == null
          ? (dataDir == null ? null : dataDir.resolve(AgentConfig.DEFAULT_ADMIN_SOCKET))
          : path("admin_socket", raw.adminSocket());
      if (adminSocket != null) {
        checkSocketLength(raw.adminSocket() == null ? "data_dir" : "admin_socket",
            "the admin socket", adminSocket);
      }
      InetSocketAddress metrics = metricsAddress(raw.metricsAddress());
      boolean leaveRunning = raw.leaveRunning() != null && raw.leaveRunning();
      Duration grace = duration("shutdown_grace", raw.shutdownGrace(),
          AgentConfig.DEFAULT_SHUTDOWN_GRACE, false);
      long logMaxBytes = AgentConfig.DEFAULT_LOG_MAX_BYTES;
      if (raw.logMaxSize() != null) {
        logMaxBytes = check("log_max_size", raw.logMaxSize(), Units::size, logMaxBytes);
        if (logMaxBytes < 1024) {
          problems.add("log_max_size: must be at least 1KiB, got " + raw.logMaxSize());
          logMaxBytes = AgentConfig.DEFAULT_LOG_MAX_BYTES;
        }
      }
      int logMaxFiles = AgentConfig.DEFAULT_LOG_MAX_FILES;
      if (raw.logMaxFiles() != null) {
        if (raw.logMaxFiles() < 0) {
          problems.add("log_max_files: must be >= 0, got " + raw.logMaxFiles());
        } else {
          logMaxFiles = raw.logMaxFiles();
        }
      }

      Path discoveryDir = null;
      if (raw.discoveryDir() != null) {
        discoveryDir = path("discovery_dir", raw.discoveryDir());
        if (discoveryDir != null) {
          // The shortest socket it can hold is "<dir>/x".
          checkSocketLength("discovery_dir", "a socket in it, like",
              discoveryDir.resolve("x"));
        }
      }
      Duration resourceInterval = raw.resourceInterval() != null
          && raw.resourceInterval().strip().equalsIgnoreCase("off") ? Duration.ZERO
          : duration("resource_interval", raw.resourceInterval(),
              AgentConfig.DEFAULT_RESOURCE_INTERVAL, false);
      if (!resourceInterval.isZero() && resourceInterval.compareTo(MIN_RESOURCE_INTERVAL) < 0) {
        problems.add("resource_interval: must be at least " + Units.format(MIN_RESOURCE_INTERVAL)
            + " (or off), got " + raw.resourceInterval());
        resourceInterval = AgentConfig.DEFAULT_RESOURCE_INTERVAL;
      }
      int resourceHistory = AgentConfig.DEFAULT_RESOURCE_HISTORY;
      if (raw.resourceHistory() != null) {
        if (raw.resourceHistory() < 1 || raw.resourceHistory() > AgentConfig.MAX_RESOURCE_HISTORY) {
          problems.add("resource_history: must be 1 to " + AgentConfig.MAX_RESOURCE_HISTORY
              + " samples, got " + raw.resourceHistory());
        } else {
          resourceHistory = raw.resourceHistory();
        }
      }

      RawConfig.Defaults d = raw.defaults();
      ProbeSettings defaultProbe = d == null ? ProbeSettings.DEFAULT
          : probe("defaults", d.healthTimeout(), d.probeInterval(), d.probeTimeout(),
              d.initialBackoff(), d.maxBackoff(), ProbeSettings.DEFAULT);
      RestartPolicy defaultRestart = d == null || d.restart() == null ? RestartPolicy.DEFAULT
          : restart("defaults.restart", d.restart(), RestartPolicy.DEFAULT);

      List<PluginSpec> plugins = new ArrayList<>();
      if (raw.plugins() == null) {
        problems.add("plugins: missing (a list of plugins, each with id, type and command or"
            + " socket; write 'plugins: []' for none)");
      } else {
        Map<String, Integer> seen = new HashMap<>();
        for (int i = 0; i < raw.plugins().size(); i++) {
          RawConfig.Plugin p = raw.plugins().get(i);
          String at = "plugins[" + i + "]";
          if (p == null) {
            problems.add(at + ": empty entry (each plugin needs id, type and command or socket)");
            continue;
          }
          if (p.id() != null) {
            Integer first = seen.putIfAbsent(p.id(), i);
            if (first != null) {
              problems.add(at + ".id: duplicate id \"" + p.id() + "\" (also plugins[" + first
                  + "])");
              // Its other problems are reported too; the entry itself is not used.
              plugin(at, p, csiRoot, defaultProbe, defaultRestart, resourceInterval.isZero());
              continue;
            }
          }
          PluginSpec spec = plugin(at, p, csiRoot, defaultProbe, defaultRestart,
              resourceInterval.isZero());
          if (spec != null) {
            plugins.add(spec);
          }
        }
      }
      if (!problems.isEmpty()) {
        throw new ConfigException(file, problems);
      }
      try {
        return new AgentConfig(file, dataDir, csiRoot, adminSocket, metrics, leaveRunning, grace,
            logMaxBytes, logMaxFiles, plugins, discoveryDir, resourceInterval, resourceHistory,
            defaultProbe);
      } catch (IllegalArgumentException e) {
        throw new ConfigException(file, e.getMessage());
      }
    }

    private PluginSpec plugin(String at, RawConfig.Plugin p, Path csiRoot,
        ProbeSettings defaultProbe, RestartPolicy defaultRestart, boolean samplingOff) {
      int before = problems.size();
      String id = p.id();
      if (id == null || id.isEmpty()) {
        problems.add(at + ".id: missing (the plugin's id, e.g. \"ebs\")");
        id = null;
      } else if (id.equals(".") || id.equals("..") || id.contains("/")) {
        problems.add(at + ".id: \"" + id + "\" could escape the plugin root (no '/', '.' or '..')");
        id = null;
      } else if (!PLUGIN_ID.matcher(id).matches()) {
        problems.add(at + ".id: \"" + id + "\" must be 1 to 128 of A-Z a-z 0-9 . _ -");
        id = null;
      }
      PluginKind kind = null;
      if (p.type() == null) {
        problems.add(at + ".type: missing (controller, node or monolith)");
      } else {
        kind = switch (p.type().strip().toLowerCase(Locale.ROOT)) {
          case "controller" -> PluginKind.CONTROLLER;
          case "node" -> PluginKind.NODE;
          case "monolith" -> PluginKind.MONOLITH;
          default -> null;
        };
        if (kind == null) {
          problems.add(at + ".type: \"" + p.type() + "\" is not a plugin type"
              + " (use controller, node or monolith)");
        }
      }
      String command = p.command();
      Path socket = null;
      ArtifactSpec artifact = null;
      int sources = (command == null ? 0 : 1) + (p.socket() == null ? 0 : 1)
          + (p.artifact() == null ? 0 : 1);
      if (sources > 1) {
        List<String> given = new ArrayList<>();
        if (command != null) {
          given.add("command");
        }
        if (p.artifact() != null) {
          given.add("artifact");
        }
        if (p.socket() != null) {
          given.add("socket");
        }
        problems.add(at + ": has " + (given.size() == 2 ? "both " + given.get(0) + " and "
            + given.get(1) : "command, artifact and socket") + " (use one: command or"
            + " artifact: the agent launches the plugin; socket: it only supervises one started"
            + " elsewhere)");
      } else if (sources == 0) {
        problems.add(at + ": needs command or artifact (to launch the plugin) or socket (to"
            + " supervise one started elsewhere)");
      } else if (p.artifact() != null) {
        artifact = artifact(at + ".artifact", p.artifact());
        if (id != null && kind != null && csiRoot != null) {
          Path derived = csiRoot.resolve(typeDir(kind)).resolve(id).resolve(SOCKET_FILE);
          checkSocketLength(at + ".id", "its socket", derived);
        }
      } else if (command != null) {
        if (command.isBlank()) {
          problems.add(at + ".command: must not be empty");
        }
        if (id != null && kind != null && csiRoot != null) {
          Path derived = csiRoot.resolve(typeDir(kind)).resolve(id).resolve(SOCKET_FILE);
          checkSocketLength(at + ".id", "its socket", derived);
        }
      } else {
        if (p.socket().isBlank()) {
          problems.add(at + ".socket: must not be empty");
        } else {
          socket = path(at + ".socket", p.socket());
          if (socket != null) {
            checkSocketLength(at + ".socket", "the socket", socket);
          }
        }
        if (p.args() != null) {
          problems.add(at + ".args: only for launched plugins (with command), not with socket");
        }
        if (p.env() != null) {
          problems.add(at + ".env: only for launched plugins (with command), not with socket");
        }
        if (p.restart() != null) {
          problems.add(at + ".restart: only for launched plugins (with command), not with"
              + " socket");
        }
        for (String[] f : new String[][] {{"max_memory_bytes", p.maxMemoryBytes()},
            {"max_cpu_percent", p.maxCpuPercent()}, {"limit_grace", p.limitGrace()}}) {
          if (f[1] != null) {
            problems.add(at + "." + f[0] + ": only for launched plugins (with command or"
                + " artifact), not with socket");
          }
        }
      }
      ResourceLimits limits = p.socket() != null ? ResourceLimits.NONE
          : limits(at, p, samplingOff);
      List<String> args = new ArrayList<>();
      if (p.args() != null) {
        for (int i = 0; i < p.args().size(); i++) {
          String a = p.args().get(i);
          if (a == null) {
            problems.add(at + ".args[" + i + "]: empty value (write \"\" for an empty argument)");
          } else {
            args.add(a);
          }
        }
      }
      Map<String, String> env = new LinkedHashMap<>();
      if (p.env() != null) {
        for (Map.Entry<String, String> e : p.env().entrySet()) {
          String key = e.getKey();
          if (key.isEmpty() || key.contains("=") || key.indexOf('\0') >= 0) {
            problems.add(at + ".env: \"" + key + "\" is not a valid variable name");
          } else if (Interpolation.AGENT_VARIABLES.contains(key)) {
            problems.add(at + ".env." + key + ": set by the agent for every launched plugin;"
                + " remove it");
          } else if (e.getValue() == null) {
            problems.add(at + ".env." + key + ": empty value (write \"\" for an empty string)");
          } else {
            env.put(key, e.getValue());
          }
        }
      }
      if (p.socket() == null && id != null && kind != null && csiRoot != null) {
        command = interpolate(at, id, kind, csiRoot, command, args, env);
      }
      if (command != null && p.socket() == null && p.artifact() == null && !command.isBlank()
          && !command.startsWith(BUILTIN_MOCK_PLUGIN)) {
        if (command.contains("/") && !command.startsWith("/")) {
          command = baseDir.resolve(command).normalize().toString();
        }
        checkCommand(at + ".command", command);
      }
      ProbeSettings probe = probe(at, p.healthTimeout(), p.probeInterval(), p.probeTimeout(),
          p.initialBackoff(), p.maxBackoff(), defaultProbe);
      RestartPolicy restart = p.restart() == null ? defaultRestart
          : restart(at + ".restart", p.restart(), defaultRestart);
      if (problems.size() > before) {
        return null;
      }
      PluginSpec spec;
      try {
        spec = new PluginSpec(id, kind, artifact != null ? null : command, args, env, socket,
            probe, restart, artifact, limits);
        // What the supervisor will be given: its own checks run here, not at launch time.
        toSupervisorConfig(spec);
      } catch (IllegalArgumentException e) {
        problems.add(at + ": " + e.getMessage());
        return null;
      }
      return spec;
    }

    /**
     * Expands {@code ${VAR}} in {@code env} values (agent variables only), then in
     * {@code command} and {@code args} (agent variables and env), in place; returns the command.
     */
    private String interpolate(String at, String id, PluginKind kind, Path csiRoot,
        String command, List<String> args, Map<String, String> env) {
      Map<String, String> vars = new LinkedHashMap<>(
          Interpolation.agentVariables(id, Interpolation.socket(csiRoot, kind, id)));
      for (Map.Entry<String, String> e : env.entrySet()) {
        e.setValue(expand(at + ".env." + e.getKey(), e.getValue(), vars,
            " (env values may use " + String.join(", ", dollar(vars.keySet())) + ")"));
      }
      vars.putAll(env);
      String known = " (known: " + String.join(", ", dollar(vars.keySet())) + ")";
      String cmd = command == null || command.startsWith(BUILTIN_MOCK_PLUGIN) ? command
          : expand(at + ".command", command, vars, known);
      for (int i = 0; i < args.size(); i++) {
        args.set(i, expand(at + ".args[" + i + "]", args.get(i), vars, known));
      }
      return cmd;
    }

    private String expand(String field, String value, Map<String, String> vars, String known) {
      try {
        return Interpolation.expand(value, vars);
      } catch (Interpolation.UnknownVariableException e) {
        problems.add(field + ": " + e.getMessage() + known + "; write $${ for a literal ${");
        return value;
      }
    }

    private static List<String> dollar(Collection<String> names) {
      return names.stream().map(n -> "${" + n + "}").toList();
    }

    /** A command given as a path must be a file that can be executed; a missing one may appear. */
    private void checkCommand(String field, String command) {
      if (!command.contains("/")) {
        return; // looked up on PATH at launch
      }
      Path p = Path.of(command);
      if (Files.isDirectory(p)) {
        problems.add(field + ": " + command + " is a directory, not an executable file");
      } else if (Files.exists(p) && !Files.isExecutable(p)) {
        problems.add(field + ": " + command + " is not executable (chmod +x, or check the"
            + " path)");
      }
    }

    private ArtifactSpec artifact(String at, RawConfig.Artifact a) {
      int before = problems.size();
      URI url = null;
      if (a.url() == null || a.url().isBlank()) {
        problems.add(at + ".url: missing (http://, https:// or file:/// URL of the plugin's"
            + " executable or archive)");
      } else {
        try {
          url = new URI(a.url().strip());
          String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
          if (!scheme.equals("http") && !scheme.equals("https") && !scheme.equals("file")) {
            problems.add(at + ".url: \"" + a.url() + "\" must be an http, https or file URL");
            url = null;
          } else if (scheme.equals("file") && (url.getPath() == null
              || !url.getPath().startsWith("/"))) {
            problems.add(at + ".url: \"" + a.url() + "\" must be an absolute file URL"
                + " (file:///dir/file)");
            url = null;
          } else if (!scheme.equals("file") && (url.getHost() == null || url.getHost().isEmpty())) {
            problems.add(at + ".url: \"" + a.url() + "\" has no host");
            url = null;
          }
        } catch (URISyntaxException e) {
          problems.add(at + ".url: \"" + a.url() + "\" is not a valid URL: " + e.getReason());
        }
      }
      String sha = a.sha256() == null ? null : a.sha256().strip().toLowerCase(Locale.ROOT);
      if (sha == null || sha.isEmpty()) {
        problems.add(at + ".sha256: missing (the SHA-256 of the file, 64 hex digits; the"
            + " agent runs nothing it cannot verify)");
      } else if (!SHA256.matcher(sha).matches()) {
        problems.add(at + ".sha256: \"" + a.sha256() + "\" must be 64 hex digits");
      }
      ArtifactSpec.Unpack unpack = ArtifactSpec.Unpack.NONE;
      if (a.unpack() != null) {
        switch (a.unpack().strip().toLowerCase(Locale.ROOT)) {
          case "tar.gz", "tgz" -> unpack = ArtifactSpec.Unpack.TAR_GZ;
          case "zip" -> unpack = ArtifactSpec.Unpack.ZIP;
          case "none", "" -> unpack = ArtifactSpec.Unpack.NONE;
          default -> problems.add(at + ".unpack: \"" + a.unpack() + "\" is not an archive format"
              + " (use tar.gz or zip, or leave it out for a single executable)");
        }
      }
      String entry = a.entry();
      if (entry == null) {
        if (unpack != ArtifactSpec.Unpack.NONE) {
          problems.add(at + ".entry: missing (the executable's path inside the archive, e.g."
              + " bin/plugin)");
        } else if (url != null) {
          entry = defaultEntry(url);
        }
      } else {
        try {
          ArtifactSpec.checkEntry(entry);
        } catch (IllegalArgumentException e) {
          problems.add(at + ".entry: " + e.getMessage());
          entry = null;
        }
        if (entry != null && unpack == ArtifactSpec.Unpack.NONE && entry.contains("/")) {
          problems.add(at + ".entry: \"" + entry + "\" must be a file name without '/' when the"
              + " artifact is not unpacked (it names the downloaded file)");
        }
      }
      Duration timeout = duration(at + ".timeout", a.timeout(), ArtifactSpec.DEFAULT_TIMEOUT,
          true);
      int attempts = ArtifactSpec.DEFAULT_ATTEMPTS;
      if (a.attempts() != null) {
        if (a.attempts() < 1 || a.attempts() > ArtifactSpec.MAX_ATTEMPTS) {
          problems.add(at + ".attempts: must be 1 to " + ArtifactSpec.MAX_ATTEMPTS + ", got "
              + a.attempts());
        } else {
          attempts = a.attempts();
        }
      }
      if (problems.size() > before) {
        return null;
      }
      try {
        return new ArtifactSpec(url, sha, unpack, entry, timeout, attempts);
      } catch (IllegalArgumentException e) {
        problems.add(at + ": " + e.getMessage());
        return null;
      }
    }

    /** A single-file artifact is saved under its URL's last path segment, if that is a name. */
    private static String defaultEntry(URI url) {
      String path = url.getPath() == null ? "" : url.getPath();
      String last = path.substring(path.lastIndexOf('/') + 1);
      return PLUGIN_ID.matcher(last).matches() && !last.equals(".") && !last.equals("..")
          ? last : "plugin";
    }

    private ResourceLimits limits(String at, RawConfig.Plugin p, boolean samplingOff) {
      int before = problems.size();
      long memory = 0;
      if (p.maxMemoryBytes() != null) {
        memory = check(at + ".max_memory_bytes", p.maxMemoryBytes(), Units::size, 0L);
        if (problems.size() == before && memory <= 0) {
          problems.add(at + ".max_memory_bytes: must be greater than 0, got "
              + p.maxMemoryBytes());
        }
      }
      double cpu = 0;
      if (p.maxCpuPercent() != null) {
        String v = p.maxCpuPercent().strip();
        if (v.endsWith("%")) {
          v = v.substring(0, v.length() - 1).strip();
        }
        try {
          cpu = Double.parseDouble(v);
          if (!(cpu > 0) || Double.isInfinite(cpu)) {
            problems.add(at + ".max_cpu_percent: must be a number greater than 0 (100 = one"
                + " core), got " + p.maxCpuPercent());
          }
        } catch (NumberFormatException e) {
          problems.add(at + ".max_cpu_percent: \"" + p.maxCpuPercent() + "\" is not a number"
              + " (percent of one core, e.g. 50 or 150)");
        }
      }
      Duration grace = duration(at + ".limit_grace", p.limitGrace(),
          ResourceLimits.DEFAULT_GRACE, false);
      if (p.limitGrace() != null && p.maxMemoryBytes() == null && p.maxCpuPercent() == null) {
        problems.add(at + ".limit_grace: only with max_memory_bytes or max_cpu_percent");
      }
      if (problems.size() > before) {
        return ResourceLimits.NONE;
      }
      ResourceLimits limits = new ResourceLimits(memory, cpu, grace);
      if (limits.any() && samplingOff) {
        problems.add(at + "." + (memory > 0 ? "max_memory_bytes" : "max_cpu_percent")
            + ": needs resource sampling, but resource_interval is off");
      }
      return limits;
    }

    private ProbeSettings probe(String at, String healthTimeout, String probeInterval,
        String probeTimeout, String initialBackoff, String maxBackoff, ProbeSettings base) {
      String prefix = at.isEmpty() ? "" : at + ".";
      int before = problems.size();
      Duration ht = duration(prefix + "health_timeout", healthTimeout, base.healthTimeout(),
          false);
      Duration pi = duration(prefix + "probe_interval", probeInterval, base.probeInterval(), true);
      Duration pt = duration(prefix + "probe_timeout", probeTimeout, base.probeTimeout(), true);
      Duration ib = duration(prefix + "initial_backoff", initialBackoff, base.initialBackoff(),
          true);
      Duration mb = duration(prefix + "max_backoff", maxBackoff, base.maxBackoff(), true);
      if (problems.size() > before) {
        return base;
      }
      try {
        return new ProbeSettings(ht, pi, pt, ib, mb);
      } catch (IllegalArgumentException e) {
        problems.add(prefix + "max_backoff: " + e.getMessage());
        return base;
      }
    }

    private RestartPolicy restart(String at, RawConfig.Restart r, RestartPolicy base) {
      int before = problems.size();
      int attempts = base.attempts();
      if (r.attempts() != null) {
        if (r.attempts() < 0) {
          problems.add(at + ".attempts: must be >= 0, got " + r.attempts());
        } else {
          attempts = r.attempts();
        }
      }
      Duration interval = duration(at + ".interval", r.interval(), base.interval(), true);
      Duration delay = duration(at + ".delay", r.delay(), base.delay(), false);
      RestartPolicy.Mode mode = base.mode();
      if (r.mode() != null) {
        switch (r.mode().strip().toLowerCase(Locale.ROOT)) {
          case "delay" -> mode = RestartPolicy.Mode.DELAY;
          case "fail" -> mode = RestartPolicy.Mode.FAIL;
          default -> problems.add(at + ".mode: \"" + r.mode() + "\" is not a restart mode"
              + " (use delay or fail)");
        }
      }
      if (problems.size() > before) {
        return base;
      }
      try {
        return new RestartPolicy(attempts, interval, delay, mode);
      } catch (IllegalArgumentException e) {
        problems.add(at + ": " + e.getMessage());
        return base;
      }
    }

    private Duration duration(String field, String value, Duration dflt, boolean positive) {
      if (value == null) {
        return dflt;
      }
      Duration d = check(field, value, Units::duration, dflt);
      if (positive && d.isZero()) {
        problems.add(field + ": must be greater than 0");
        return dflt;
      }
      return d;
    }

    private <T> T check(String field, String value, Function<String, T> parser, T dflt) {
      try {
        return parser.apply(value);
      } catch (IllegalArgumentException e) {
        problems.add(field + ": " + e.getMessage());
        return dflt;
      }
    }

    private Path path(String field, String value) {
      if (value.isBlank()) {
        problems.add(field + ": must not be empty");
        return null;
      }
      if (value.indexOf('\0') >= 0) {
        problems.add(field + ": contains a NUL character");
        return null;
      }
      try {
        return baseDir.resolve(value).normalize();
      } catch (RuntimeException e) {
        problems.add(field + ": \"" + value + "\" is not a valid path: " + e.getMessage());
        return null;
      }
    }

    private void checkSocketLength(String field, String what, Path socket) {
      int bytes = socket.toString().getBytes(StandardCharsets.UTF_8).length;
      if (bytes > MAX_SOCKET_PATH_BYTES) {
        problems.add(field + ": " + what + " " + socket + " is " + bytes
            + " bytes, over the unix socket limit of " + MAX_SOCKET_PATH_BYTES + " bytes");
      }
    }

    private InetSocketAddress metricsAddress(String value) {
      if (value == null) {
        return AgentConfig.defaultMetricsAddress();
      }
      String v = value.strip();
      if (v.isEmpty() || v.equalsIgnoreCase("off") || v.equalsIgnoreCase("none")) {
        return null;
      }
      int colon = v.lastIndexOf(':');
      if (colon <= 0 || colon == v.length() - 1) {
        problems.add("metrics_address: \"" + value + "\" must be host:port (e.g. 127.0.0.1:9464),"
            + " or off");
        return null;
      }
      String host = v.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      }
      int port;
      try {
        port = Integer.parseInt(v.substring(colon + 1));
      } catch (NumberFormatException e) {
        port = -1;
      }
      if (port < 0 || port > 65535) {
        problems.add("metrics_address: port of \"" + value + "\" must be 0 to 65535");
        return null;
      }
      // Unresolved: resolving happens when the endpoint binds, where a failure is reported.
      return InetSocketAddress.createUnresolved(host, port);
    }
  }

  // ---- shared with the agent -----------------------------------------------------------------

  /** Whether {@code id} is a valid plugin id: 1 to 128 of A-Z a-z 0-9 . _ -, not . or .. */
  public static boolean validPluginId(String id) {
    return id != null && PLUGIN_ID.matcher(id).matches() && !id.equals(".") && !id.equals("..");
  }

  /** The directory name of a plugin type under the CSI root, as the supervisor lays it out. */
  public static String typeDir(PluginKind kind) {
    return switch (kind) {
      case CONTROLLER -> "controller";
      case NODE -> "node";
      case MONOLITH -> "monolith";
    };
  }

  /** The supervisor's view of a plugin spec. */
  public static CsiPluginConfig toSupervisorConfig(PluginSpec spec) {
    ProbeSettings p = spec.probe();
    return CsiPluginConfig.builder(spec.id(), spec.type())
        .healthTimeout(p.healthTimeout())
        .probeInterval(p.probeInterval())
        .probeTimeout(p.probeTimeout())
        .initialBackoff(p.initialBackoff())
        .maxBackoff(p.maxBackoff())
        .externalSocket(spec.socket())
        .build();
  }
}
