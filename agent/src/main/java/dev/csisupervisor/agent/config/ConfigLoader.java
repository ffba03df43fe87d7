package dev.csisupervisor.agent.config;

import dev.csisupervisor.common.SocketPaths;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.PluginLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads the agent's YAML config into a validated {@link AgentConfig}.
 *
 * <p>Keys are snake_case; an unknown key, a value of the wrong kind, a duplicate key, and every
 * invalid value is an error. All problems found are reported together, each naming its field as a
 * path ({@code plugins[1].type}) and what is wrong. Relative paths (and a relative {@code command}
 * that contains a {@code /}) resolve against the config file's directory.
 *
 * <p>Reading is in two steps: Jackson maps the YAML onto {@link RawConfig} (its errors, with
 * line and column, are {@link YamlErrors}'); then the rules of {@link AgentConfigRules} and
 * {@link PluginRules} check every value and build the {@link AgentConfig}.
 *
 * <p>Stateless and thread-safe.
 */
public final class ConfigLoader {
  /**
   * A {@code command} naming the mock CSI plugin bundled with the agent: the launcher runs it in a
   * JVM like the agent's own, from the agent's class path.
   */
  public static final String BUILTIN_MOCK_PLUGIN = "builtin:mock-plugin";

  private static final ObjectMapper MAPPER = YAMLMapper.builder(new YAMLFactory())
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
      .build();

  /** The largest config file read: {@link ConfigFile#MAX_BYTES}. */
  public static final int MAX_CONFIG_BYTES = ConfigFile.MAX_BYTES;

  private ConfigLoader() {}

  /**
   * Reads and validates {@code file}.
   *
   * @throws ConfigException naming the file and every problem: unreadable, not YAML, unknown or
   *     duplicate fields, missing or invalid values
   */
  public static AgentConfig load(Path file) throws ConfigException {
    Path abs = file.toAbsolutePath().normalize();
    return parse(ConfigFile.read(abs), abs);
  }

  /** What one read of the config file holds: the agent's config and its cluster: and log: sections. */
  public record Sections(AgentConfig agent, Optional<ClusterConfig> cluster, LogSettings log) {}

  /**
   * Reads the config file once and validates all of it: the agent's config (with the log: section's
   * problems), then the cluster: section.
   *
   * @throws ConfigException naming the file and every problem
   */
  public static Sections loadSections(Path file) throws ConfigException {
    Path abs = file.toAbsolutePath().normalize();
    String text = ConfigFile.read(abs);
    Validated v = validate(text, abs);
    return new Sections(v.agent(), ClusterConfig.parse(text, abs), v.log());
  }

  /**
   * Validates YAML text as if read from {@code file} (relative paths resolve against its directory).
   *
   * @throws ConfigException naming the file and every problem
   */
  public static AgentConfig parse(String yaml, Path file) throws ConfigException {
    return validate(yaml, file).agent();
  }

  /** The agent's config and its log: section, validated together from one parse of {@code yaml}. */
  private record Validated(AgentConfig agent, LogSettings log) {}

  private static Validated validate(String yaml, Path file) throws ConfigException {
    Path abs = file.toAbsolutePath().normalize();
    if (yaml.length() > MAX_CONFIG_BYTES) {
      throw new ConfigException(abs, ConfigFile.tooBig(yaml.length()));
    }
    if (yaml.isBlank()) {
      throw new ConfigException(abs, "config file is empty (data_dir and plugins are required)");
    }
    RawConfig.Root raw;
    YamlErrors.UnknownFields unknown = new YamlErrors.UnknownFields(yaml);
    try {
      raw = MAPPER.readerFor(RawConfig.Root.class).withHandler(unknown).readValue(yaml);
    } catch (JsonProcessingException e) {
      List<String> all = new ArrayList<>(unknown.problems());
      all.add(YamlErrors.describe(e, yaml));
      throw new ConfigException(abs, all);
    }
    if (raw == null) {
      throw new ConfigException(abs, "config file is empty (data_dir and plugins are required)");
    }
    List<String> earlier = new ArrayList<>(unknown.problems());
    LogSettings log = LogSettings.parse(yaml, earlier); // the log: section's problems, each with its line
    return new Validated(new AgentConfigRules(abs, earlier).validate(raw), log);
  }

  // ---- shared with the agent -----------------------------------------------------------------

  /**
   * Reports {@code field: <what> <socket> is N bytes, over the unix socket limit of 107 bytes}
   * if {@code socket} does not fit a unix socket address.
   */
  static void checkSocketPath(Problems problems, String field, String what, Path socket) {
    if (!SocketPaths.fits(socket)) {
      problems.add(field, SocketPaths.tooLong(what, socket));
    }
  }

  /**
   * The supervisor's view of a plugin spec. A plugin the agent launches runs on the host, so it sees its
   * directory where the host has it: its mount point (what the volume manager gives it staging and target
   * paths under) is {@code <csiRoot>/<type>/<id>}, not a container's {@code /csi}.
   */
  public static CsiPluginConfig toSupervisorConfig(PluginSpec spec, Path csiRoot) {
    CsiPluginConfig c = spec.probe().supervisorConfig(spec.id(), spec.type(), spec.socket());
    if (spec.socket() != null || csiRoot == null) {
      return c;
    }
    return c.withMountDir(PluginLayout.pluginDir(csiRoot, spec.type(), spec.id()).toString());
  }
}
