package dev.csisupervisor.agent.config;

import dev.csisupervisor.common.PluginIds;
import dev.csisupervisor.supervisor.PluginLayout;
import static dev.csisupervisor.agent.config.ConfigLoader.BUILTIN_MOCK_PLUGIN;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.tasks.artifact.ArtifactSpec;
import dev.csisupervisor.tasks.process.RestartPolicy;
import dev.csisupervisor.tasks.resources.ResourceLimits;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a valid {@code plugins[i]} entry is (and the {@code defaults} it inherits), field by
 * field, in the order its problems are reported. Problems go to the config's {@link Problems};
 * an entry with any is not built.
 */
final class PluginRules {
  private static final Map<String, PluginKind> TYPES = Map.of("controller",
      PluginKind.CONTROLLER, "node", PluginKind.NODE, "monolith", PluginKind.MONOLITH);
  private static final Map<String, RestartPolicy.Mode> RESTART_MODES = Map.of(
      "delay", RestartPolicy.Mode.DELAY, "fail", RestartPolicy.Mode.FAIL);
  private static final Map<String, ArtifactSpec.Unpack> ARCHIVES = Map.of(
      "tar.gz", ArtifactSpec.Unpack.TAR_GZ, "tgz", ArtifactSpec.Unpack.TAR_GZ,
      "zip", ArtifactSpec.Unpack.ZIP, "none", ArtifactSpec.Unpack.NONE,
      "", ArtifactSpec.Unpack.NONE);
  private static final String LAUNCHED_ONLY =
      "only for launched plugins (with command), not with socket";

  private final Problems problems;
  private final Path csiRoot;
  private final ProbeSettings defaultProbe;
  private final RestartPolicy defaultRestart;
  private final boolean samplingOff;

  /**
   * @param csiRoot where launched plugins' sockets go (null if the config has none: their socket
   *     paths are not checked then)
   * @param samplingOff whether resource sampling is off (resource limits need it)
   */
  PluginRules(Problems problems, Path csiRoot, ProbeSettings defaultProbe,
      RestartPolicy defaultRestart, boolean samplingOff) {
    this.problems = problems;
    this.csiRoot = csiRoot;
    this.defaultProbe = defaultProbe;
    this.defaultRestart = defaultRestart;
    this.samplingOff = samplingOff;
  }

  /** The entry at {@code at} ({@code plugins[i]}), or null if it has problems. */
  PluginSpec plugin(String at, RawConfig.Plugin p) {
    int before = problems.count();
    String id = problems.value(at + ".id", p.id == null || p.id.isEmpty() ? null : p.id)
        .required("the plugin's id, e.g. \"ebs\"")
        .check(PluginIds::isValid, v -> PluginIds.problem(v).orElseThrow())
        .orNull();
    PluginKind kind = problems.oneOf(at + ".type", p.type, TYPES,
            "is not a plugin type (use controller, node or monolith)")
        .required("controller, node or monolith")
        .orNull();

    // Exactly one of: command or artifact (the agent launches it), socket (started elsewhere).
    String command = p.command;
    Path socket = null;
    ArtifactSpec artifact = null;
    List<String> sources = new ArrayList<>();
    if (command != null) {
      sources.add("command");
    }
    if (p.artifact != null) {
      sources.add("artifact");
    }
    if (p.socket != null) {
      sources.add("socket");
    }
    if (sources.size() > 1) {
      problems.add(at, "has " + (sources.size() == 2 ? "both " + sources.get(0) + " and "
          + sources.get(1) : "command, artifact and socket") + " (use one: command or"
          + " artifact: the agent launches the plugin; socket: it only supervises one started"
          + " elsewhere)");
    } else if (sources.isEmpty()) {
      problems.add(at, "needs command or artifact (to launch the plugin) or socket (to"
          + " supervise one started elsewhere)");
    } else if (p.artifact != null) {
      artifact = artifact(at + ".artifact", p.artifact);
      checkDerivedSocket(at, id, kind);
    } else if (command != null) {
      problems.value(at + ".command", command).check(c -> !c.isBlank(), "must not be empty");
      checkDerivedSocket(at, id, kind);
    } else {
      socket = problems.path(at + ".socket", p.socket).orNull();
      if (socket != null) {
        checkSocketPath(at + ".socket", "the socket", socket);
      }
      problems.absent(at + ".args", p.args, LAUNCHED_ONLY);
      problems.absent(at + ".env", p.env, LAUNCHED_ONLY);
      problems.absent(at + ".restart", p.restart, LAUNCHED_ONLY);
      String limitsLaunchedOnly = "only for launched plugins (with command or artifact), not"
          + " with socket";
      problems.absent(at + ".max_memory_bytes", p.maxMemoryBytes, limitsLaunchedOnly);
      problems.absent(at + ".max_cpu_percent", p.maxCpuPercent, limitsLaunchedOnly);
      problems.absent(at + ".limit_grace", p.limitGrace, limitsLaunchedOnly);
    }
    ResourceLimits limits = p.socket != null ? ResourceLimits.NONE : limits(at, p);
    List<String> args = args(at, p.args);
    Map<String, String> env = env(at, p.env);
    if (p.socket == null && id != null && kind != null && csiRoot != null) {
      command = interpolate(at, id, kind, command, args, env);
    }
    if (command != null && p.socket == null && p.artifact == null && !command.isBlank()
        && !command.startsWith(BUILTIN_MOCK_PLUGIN)) {
      if (command.contains("/") && !command.startsWith("/")) {
        command = problems.baseDir().resolve(command).normalize().toString();
      }
      checkCommand(at + ".command", command);
    }
    ProbeSettings probe = probe(problems, at, p, defaultProbe);
    RestartPolicy restart = p.restart == null ? defaultRestart
        : restart(problems, at + ".restart", p.restart, defaultRestart);
    if (problems.count() > before) {
      return null;
    }
    try {
      PluginSpec spec = new PluginSpec(id, kind, artifact != null ? null : command, args, env,
          socket, probe, restart, artifact, limits);
      // What the supervisor will be given: its own checks run here, not at launch time.
      ConfigLoader.toSupervisorConfig(spec, csiRoot);
      return spec;
    } catch (IllegalArgumentException e) {
      problems.add(at, e.getMessage());
      return null;
    }
  }

  /** A launched plugin's socket is {@code <csi_root>/<type>/<id>/csi.sock}: it must fit too. */
  private void checkDerivedSocket(String at, String id, PluginKind kind) {
    if (id != null && kind != null && csiRoot != null) {
      checkSocketPath(at + ".id", "its socket", PluginLayout.socket(csiRoot, kind, id));
    }
  }

  private void checkSocketPath(String field, String what, Path socket) {
    ConfigLoader.checkSocketPath(problems, field, what, socket);
  }

  /** {@code args}: no empty (null) entry. */
  private List<String> args(String at, List<String> raw) {
    List<String> args = new ArrayList<>();
    for (int i = 0; raw != null && i < raw.size(); i++) {
      if (raw.get(i) == null) {
        problems.add(at + ".args[" + i + "]", "empty value (write \"\" for an empty argument)");
      } else {
        args.add(raw.get(i));
      }
    }
    return args;
  }

  /** {@code env}: valid names, none the agent sets itself, no empty (null) value. */
  private Map<String, String> env(String at, Map<String, String> raw) {
    Map<String, String> env = new LinkedHashMap<>();
    if (raw == null) {
      return env;
    }
    for (Map.Entry<String, String> e : raw.entrySet()) {
      String key = e.getKey();
      if (key.isEmpty() || key.contains("=") || key.indexOf('\0') >= 0) {
        problems.add(at + ".env", "\"" + key + "\" is not a valid variable name");
      } else if (Interpolation.AGENT_VARIABLES.contains(key)) {
        problems.add(at + ".env." + key, "set by the agent for every launched plugin; remove it");
      } else if (e.getValue() == null) {
        problems.add(at + ".env." + key, "empty value (write \"\" for an empty string)");
      } else {
        env.put(key, e.getValue());
      }
    }
    return env;
  }

  /**
   * Expands {@code ${VAR}} in {@code env} values (agent variables only), then in
   * {@code command} and {@code args} (agent variables and env), in place; returns the command.
   */
  private String interpolate(String at, String id, PluginKind kind, String command,
      List<String> args, Map<String, String> env) {
    Map<String, String> vars = new LinkedHashMap<>(
        Interpolation.agentVariables(id, PluginLayout.socket(csiRoot, kind, id)));
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
      problems.add(field, e.getMessage() + known + "; write $${ for a literal ${");
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
      problems.add(field, command + " is a directory, not an executable file");
    } else if (Files.exists(p) && !Files.isExecutable(p)) {
      problems.add(field, command + " is not executable (chmod +x, or check the path)");
    }
  }

  // ---- artifact ----------------------------------------------------------------------------

  private ArtifactSpec artifact(String at, RawConfig.Artifact a) {
    int before = problems.count();
    URI url = problems.parsed(at + ".url", a.url() == null || a.url().isBlank() ? null : a.url(),
            PluginRules::artifactUrl)
        .required("http://, https:// or file:/// URL of the plugin's executable or archive")
        .orNull();
    String sha = problems.value(at + ".sha256", a.sha256() == null || a.sha256().isBlank() ? null
            : a.sha256().strip().toLowerCase(Locale.ROOT))
        .required("the SHA-256 of the file, 64 hex digits; the agent runs nothing it cannot"
            + " verify")
        .check(ArtifactSpec::isSha256,
            v -> "\"" + a.sha256() + "\" must be 64 hex digits")
        .orNull();
    ArtifactSpec.Unpack unpack = problems.oneOf(at + ".unpack", a.unpack(), ARCHIVES,
            "is not an archive format (use tar.gz or zip, or leave it out for a single"
            + " executable)")
        .orElse(ArtifactSpec.Unpack.NONE);
    String entry = a.entry();
    if (entry == null) {
      if (unpack != ArtifactSpec.Unpack.NONE) {
        problems.add(at + ".entry", "missing (the executable's path inside the archive, e.g."
            + " bin/plugin)");
      } else if (url != null) {
        entry = defaultEntry(url);
      }
    } else {
      ArtifactSpec.Unpack u = unpack;
      entry = problems.parsed(at + ".entry", entry, e -> {
            ArtifactSpec.checkEntry(e);
            return e;
          })
          .check(e -> u != ArtifactSpec.Unpack.NONE || !e.contains("/"),
              e -> "\"" + e + "\" must be a file name without '/' when the artifact is not"
                  + " unpacked (it names the downloaded file)")
          .orNull();
    }
    Duration timeout = problems.duration(at + ".timeout", a.timeout()).positive()
        .orElse(ArtifactSpec.DEFAULT_TIMEOUT);
    int attempts = problems.value(at + ".attempts", a.attempts())
        .between(1, ArtifactSpec.MAX_ATTEMPTS, "")
        .orElse(ArtifactSpec.DEFAULT_ATTEMPTS);
    if (problems.count() > before) {
      return null;
    }
    try {
      return new ArtifactSpec(url, sha, unpack, entry, timeout, attempts);
    } catch (IllegalArgumentException e) {
      problems.add(at, e.getMessage());
      return null;
    }
  }

  /** An http, https or absolute file URL, with a host unless a file URL. */
  private static URI artifactUrl(String written) {
    URI url;
    try {
      url = new URI(written.strip());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("\"" + written + "\" is not a valid URL: "
          + e.getReason());
    }
    String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
    if (!scheme.equals("http") && !scheme.equals("https") && !scheme.equals("file")) {
      throw new IllegalArgumentException("\"" + written + "\" must be an http, https or file URL");
    }
    if (scheme.equals("file") && (url.getPath() == null || !url.getPath().startsWith("/"))) {
      throw new IllegalArgumentException("\"" + written + "\" must be an absolute file URL"
          + " (file:///dir/file)");
    }
    if (!scheme.equals("file") && (url.getHost() == null || url.getHost().isEmpty())) {
      throw new IllegalArgumentException("\"" + written + "\" has no host");
    }
    return url;
  }

  /** A single-file artifact is saved under its URL's last path segment, if that is a name. */
  private static String defaultEntry(URI url) {
    String path = url.getPath() == null ? "" : url.getPath();
    String last = path.substring(path.lastIndexOf('/') + 1);
    return PluginIds.isValid(last) ? last : "plugin";
  }

  // ---- resource limits ---------------------------------------------------------------------

  private ResourceLimits limits(String at, RawConfig.Plugin p) {
    int before = problems.count();
    long memory = problems.size(at + ".max_memory_bytes", p.maxMemoryBytes)
        .check(m -> m > 0, m -> "must be greater than 0, got " + p.maxMemoryBytes)
        .orElse(0L);
    double cpu = problems.parsed(at + ".max_cpu_percent", p.maxCpuPercent,
            PluginRules::percent)
        .check(c -> c > 0 && !Double.isInfinite(c), c -> "must be a number greater than 0 (100"
            + " = one core), got " + p.maxCpuPercent)
        .orElse(0.0);
    Duration grace = problems.duration(at + ".limit_grace", p.limitGrace)
        .orElse(ResourceLimits.DEFAULT_GRACE);
    if (p.limitGrace != null && p.maxMemoryBytes == null && p.maxCpuPercent == null) {
      problems.add(at + ".limit_grace", "only with max_memory_bytes or max_cpu_percent");
    }
    if (problems.count() > before) {
      return ResourceLimits.NONE;
    }
    ResourceLimits limits = new ResourceLimits(memory, cpu, grace);
    if (limits.any() && samplingOff) {
      problems.add(at + "." + (memory > 0 ? "max_memory_bytes" : "max_cpu_percent"),
          "needs resource sampling, but resource_interval is off");
    }
    return limits;
  }

  /** Percent of one core: {@code 50}, {@code 150%}. */
  private static double percent(String written) {
    String v = written.strip();
    if (v.endsWith("%")) {
      v = v.substring(0, v.length() - 1).strip();
    }
    try {
      return Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("\"" + written + "\" is not a number (percent of one"
          + " core, e.g. 50 or 150)");
    }
  }

  // ---- probe and restart (also the defaults) -----------------------------------------------

  /** The probe settings at {@code at} ({@code ""}: top level), defaulting to {@code base}'s. */
  static ProbeSettings probe(Problems problems, String at, RawConfig.Supervision s,
      ProbeSettings base) {
    String prefix = at.isEmpty() ? "" : at + ".";
    int before = problems.count();
    Duration ht = problems.duration(prefix + "health_timeout", s.healthTimeout)
        .orElse(base.healthTimeout());
    Duration pi = problems.duration(prefix + "probe_interval", s.probeInterval).positive()
        .orElse(base.probeInterval());
    Duration pt = problems.duration(prefix + "probe_timeout", s.probeTimeout).positive()
        .orElse(base.probeTimeout());
    Duration ib = problems.duration(prefix + "initial_backoff", s.initialBackoff).positive()
        .orElse(base.initialBackoff());
    Duration mb = problems.duration(prefix + "max_backoff", s.maxBackoff).positive()
        .orElse(base.maxBackoff());
    if (problems.count() > before) {
      return base;
    }
    try {
      return new ProbeSettings(ht, pi, pt, ib, mb);
    } catch (IllegalArgumentException e) {
      problems.add(prefix + "max_backoff", e.getMessage());
      return base;
    }
  }

  /** The restart policy at {@code at}, each setting defaulting to {@code base}'s. */
  static RestartPolicy restart(Problems problems, String at, RawConfig.Restart r,
      RestartPolicy base) {
    int before = problems.count();
    int attempts = problems.value(at + ".attempts", r.attempts()).atLeast(0)
        .orElse(base.attempts());
    Duration interval = problems.duration(at + ".interval", r.interval()).positive()
        .orElse(base.interval());
    Duration delay = problems.duration(at + ".delay", r.delay()).orElse(base.delay());
    RestartPolicy.Mode mode = problems.oneOf(at + ".mode", r.mode(), RESTART_MODES,
            "is not a restart mode (use delay or fail)")
        .orElse(base.mode());
    if (problems.count() > before) {
      return base;
    }
    try {
      return new RestartPolicy(attempts, interval, delay, mode);
    } catch (IllegalArgumentException e) {
      problems.add(at, e.getMessage());
      return base;
    }
  }
}
