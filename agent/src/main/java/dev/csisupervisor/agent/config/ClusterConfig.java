package dev.csisupervisor.agent.config;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.csisupervisor.catalog.CatalogKeys;
import dev.csisupervisor.catalog.EtcdOptions;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The agent config's optional {@code cluster:} section: publish this node's registry to the etcd cluster
 * catalog. Absent means off (a single node needs no etcd).
 *
 * <pre>
 * cluster:
 *   endpoints: [http://10.0.0.1:2379, http://10.0.0.2:2379]   # or one comma-separated string
 *   node_id: node-1            # default: the host name
 *   prefix: /csi-supervisor    # default
 *   lease_ttl: 15s             # default; whole seconds, at least 2s
 *   ca_file: /etc/etcd/ca.pem  # TLS (implies https); relative paths resolve against the config file
 *   cert_file: client.pem      # client certificate, with key_file
 *   key_file: client-key.pem
 *   user: csi                  # etcd authentication, with password_file (or password)
 *   password_file: etcd-password  # its first line is the password; keeps it out of the config
 *   detach_after: 0s           # cluster volumes: how long a lost node keeps its claims before the elected
 *                              # controller agent unpublishes them (the fence) and releases them; 0s: forever
 *   secrets_dir: /etc/csi-agent/secrets  # default; as controller agent, the only directory (symbolic links
 *                              # resolved) a cluster request's --secrets-file is read from
 *   controller_check_interval: 60s  # default; as controller agent, how often each led plugin's volumes are checked
 *                              # (conditions, leaks, lost publications) and its capacity read; 0s: never
 * </pre>
 *
 * @param etcd how to reach etcd
 * @param nodeId this node's id in the catalog
 * @param prefix the key prefix
 * @param leaseTtl the node lease's TTL
 * @param detachAfter how long a lost node keeps its volume claims before the fence; zero: until it comes back
 *     or an operator forces (the default)
 * @param secretsDir the only directory the controller agent reads requests' secrets files under
 * @param controllerCheckInterval how often the controller agent checks each plugin id it leads (health, leaks,
 *     capacity); zero: never
 */
public record ClusterConfig(EtcdOptions etcd, String nodeId, String prefix, Duration leaseTtl, Duration detachAfter,
    Path secretsDir, Duration controllerCheckInterval) {

  public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(15);
  public static final Path DEFAULT_SECRETS_DIR = Path.of("/etc/csi-agent/secrets");
  public static final Duration DEFAULT_CONTROLLER_CHECK_INTERVAL = Duration.ofSeconds(60);
  /** A shorter interval would keep a plugin busy answering lists: at least this, or 0 (off). */
  public static final Duration MIN_CONTROLLER_CHECK_INTERVAL = Duration.ofSeconds(1);
  static final Set<String> FIELDS = Set.of("endpoints", "node_id", "prefix", "lease_ttl", "ca_file", "cert_file",
      "key_file", "user", "password", "password_file", "request_timeout", "detach_after", "secrets_dir",
      "controller_check_interval");

  private static final ObjectMapper YAML = YAMLMapper.builder(new YAMLFactory())
      .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION).build();

  public ClusterConfig {
    if (etcd == null) {
      throw new IllegalArgumentException("cluster.endpoints must not be empty");
    }
    CatalogKeys.checkNodeId(nodeId);
    CatalogKeys.checkPrefix(prefix);
    if (leaseTtl == null || leaseTtl.compareTo(Duration.ofSeconds(2)) < 0 || leaseTtl.toMillis() % 1000 != 0) {
      throw new IllegalArgumentException("cluster.lease_ttl must be whole seconds and at least 2s, got " + leaseTtl);
    }
    if (detachAfter == null || detachAfter.isNegative()) {
      throw new IllegalArgumentException("cluster.detach_after must not be negative, got " + detachAfter);
    }
    if (secretsDir == null || !secretsDir.isAbsolute()) {
      throw new IllegalArgumentException("cluster.secrets_dir must be an absolute path, got " + secretsDir);
    }
    checkInterval(controllerCheckInterval);
  }

  /** With the default {@code controller_check_interval}. */
  public ClusterConfig(EtcdOptions etcd, String nodeId, String prefix, Duration leaseTtl, Duration detachAfter,
      Path secretsDir) {
    this(etcd, nodeId, prefix, leaseTtl, detachAfter, secretsDir, DEFAULT_CONTROLLER_CHECK_INTERVAL);
  }

  private static void checkInterval(Duration d) {
    if (d == null || d.isNegative() || (!d.isZero() && d.compareTo(MIN_CONTROLLER_CHECK_INTERVAL) < 0)) {
      throw new IllegalArgumentException("cluster.controller_check_interval must be 0s (off) or at least "
          + MIN_CONTROLLER_CHECK_INTERVAL.toSeconds() + "s, got " + d);
    }
  }

  /** With the default {@code secrets_dir}. */
  public ClusterConfig(EtcdOptions etcd, String nodeId, String prefix, Duration leaseTtl, Duration detachAfter) {
    this(etcd, nodeId, prefix, leaseTtl, detachAfter, DEFAULT_SECRETS_DIR);
  }

  /** Without {@code detach_after} (a lost node's claims stay until it is back or forced). */
  public ClusterConfig(EtcdOptions etcd, String nodeId, String prefix, Duration leaseTtl) {
    this(etcd, nodeId, prefix, leaseTtl, Duration.ZERO);
  }

  /**
   * The {@code cluster:} section of the agent config file, if it has one.
   *
   * @throws ConfigException naming the file and each bad field ({@code cluster.endpoints: ...})
   */
  public static Optional<ClusterConfig> load(Path file) throws ConfigException {
    Path abs = file.toAbsolutePath().normalize();
    return parse(ConfigFile.read(abs), abs);
  }

  /** Like {@link #load} for YAML text read from {@code file}. */
  public static Optional<ClusterConfig> parse(String yaml, Path file) throws ConfigException {
    Path abs = file.toAbsolutePath().normalize();
    JsonNode root;
    try {
      root = YAML.readTree(yaml);
    } catch (JsonProcessingException e) {
      throw new ConfigException(abs, "not valid YAML: " + e.getOriginalMessage());
    }
    JsonNode c = root == null ? null : root.get("cluster");
    if (c == null || c.isNull()) {
      return Optional.empty();
    }
    return Optional.of(fromNode(c, abs));
  }

  private static ClusterConfig fromNode(JsonNode c, Path file) throws ConfigException {
    List<String> problems = new ArrayList<>();
    if (!c.isObject()) {
      throw new ConfigException(file, "cluster: expected a mapping (endpoints, node_id, prefix, lease_ttl, ...)");
    }
    for (Iterator<String> it = c.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!FIELDS.contains(f)) {
        problems.add("cluster." + f + ": unknown field (known fields: " + String.join(", ", new TreeSet<>(FIELDS)) + ")");
      }
    }
    Path base = file.getParent() == null ? Path.of("/") : file.getParent();

    List<URI> endpoints = null;
    JsonNode ep = c.get("endpoints");
    try {
      if (ep == null || ep.isNull()) {
        problems.add("cluster.endpoints: missing (etcd client URLs, e.g. [http://127.0.0.1:2379])");
      } else if (ep.isArray()) {
        List<String> list = new ArrayList<>();
        for (JsonNode e : ep) {
          if (!e.isTextual()) {
            throw new IllegalArgumentException("endpoints entries must be strings, got " + e);
          }
          list.add(e.asText());
        }
        if (list.isEmpty()) {
          problems.add("cluster.endpoints: must not be empty (etcd client URLs, e.g. [http://127.0.0.1:2379])");
        } else if (list.stream().anyMatch(String::isBlank)) {
          problems.add("cluster.endpoints: entries must not be empty, got " + list);
        } else {
          endpoints = EtcdOptions.parseEndpoints(String.join(",", list));
        }
      } else if (ep.isTextual()) {
        endpoints = EtcdOptions.parseEndpoints(ep.asText());
      } else {
        problems.add("cluster.endpoints: expected a list of URLs or one comma-separated string");
      }
    } catch (IllegalArgumentException e) {
      problems.add("cluster." + e.getMessage());
    }

    String nodeId = text(c, "node_id", problems);
    if (nodeId == null) {
      nodeId = Interpolation.nodeId(); // the same as the plugins' ${CSI_NODE_ID}
    }
    try {
      CatalogKeys.checkNodeId(nodeId);
    } catch (IllegalArgumentException e) {
      problems.add("cluster.node_id: " + e.getMessage().replaceFirst("^nodeId ", "")
          + (c.has("node_id") ? "" : " (the host name; set node_id)"));
    }
    String prefix = text(c, "prefix", problems);
    if (prefix == null) {
      prefix = CatalogKeys.DEFAULT_PREFIX;
    }
    try {
      CatalogKeys.checkPrefix(prefix);
    } catch (IllegalArgumentException e) {
      problems.add("cluster.prefix: " + e.getMessage().replaceFirst("^prefix ", ""));
    }
    Duration ttl = duration(c, "lease_ttl", DEFAULT_LEASE_TTL, problems);
    if (ttl.compareTo(Duration.ofSeconds(2)) < 0 || ttl.toMillis() % 1000 != 0) {
      problems.add("cluster.lease_ttl: must be whole seconds and at least 2s, got " + c.get("lease_ttl").asText());
      ttl = DEFAULT_LEASE_TTL;
    }
    Duration timeout = duration(c, "request_timeout", EtcdOptions.DEFAULT_REQUEST_TIMEOUT, problems);
    if (timeout.isZero()) {
      problems.add("cluster.request_timeout: must be greater than 0");
      timeout = EtcdOptions.DEFAULT_REQUEST_TIMEOUT;
    }
    Duration detachAfter = duration(c, "detach_after", Duration.ZERO, problems);
    Duration checkInterval = duration(c, "controller_check_interval", DEFAULT_CONTROLLER_CHECK_INTERVAL, problems);
    try {
      checkInterval(checkInterval);
    } catch (IllegalArgumentException e) {
      problems.add(e.getMessage().replaceFirst(" must", ": must"));
      checkInterval = DEFAULT_CONTROLLER_CHECK_INTERVAL;
    }
    Path secretsDir = DEFAULT_SECRETS_DIR;
    String sd = text(c, "secrets_dir", problems);
    if (sd != null) {
      if (sd.isBlank()) {
        problems.add("cluster.secrets_dir: must not be empty");
      } else {
        secretsDir = base.resolve(sd).normalize();
      }
    }
    Path ca = file(c, "ca_file", base, problems);
    Path cert = file(c, "cert_file", base, problems);
    Path key = file(c, "key_file", base, problems);
    if (c.hasNonNull("cert_file") != c.hasNonNull("key_file")) {
      problems.add(c.hasNonNull("key_file") ? "cluster.cert_file: required with key_file" : "cluster.key_file: required with cert_file");
    }
    String user = text(c, "user", problems);
    String password = text(c, "password", problems);
    boolean hasPasswordFile = c.hasNonNull("password_file");
    if (hasPasswordFile) {
      if (password != null) {
        problems.add("cluster.password_file: give password or password_file, not both");
      }
      password = passwordFile(c, base, problems);
    }
    if (user != null && user.isBlank()) {
      problems.add("cluster.user: must not be empty");
    } else if (user == null && hasPasswordFile) {
      problems.add("cluster.user: required with password_file");
    } else if ((user == null) != (password == null) && !hasPasswordFile) {
      problems.add(user == null ? "cluster.user: required with password" : "cluster.password: required with user"
          + " (or password_file)");
    }
    if (!problems.isEmpty()) {
      throw new ConfigException(file, problems);
    }
    try {
      return new ClusterConfig(new EtcdOptions(endpoints, ca, cert, key, user, password, timeout), nodeId, prefix, ttl,
          detachAfter, secretsDir, checkInterval);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(file, "cluster: " + e.getMessage());
    }
  }

  private static String text(JsonNode c, String field, List<String> problems) {
    JsonNode n = c.get(field);
    if (n == null || n.isNull()) {
      return null;
    }
    if (!n.isValueNode() || n.isBoolean()) {
      problems.add("cluster." + field + ": expected a single value (a string)");
      return null;
    }
    return n.asText();
  }

  private static Duration duration(JsonNode c, String field, Duration dflt, List<String> problems) {
    String t = text(c, field, problems);
    if (t == null) {
      return dflt;
    }
    try {
      return Units.duration(t);
    } catch (IllegalArgumentException e) {
      problems.add("cluster." + field + ": " + e.getMessage());
      return dflt;
    }
  }

  private static Path file(JsonNode c, String field, Path base, List<String> problems) {
    String t = text(c, field, problems);
    if (t == null) {
      return null;
    }
    if (t.isBlank()) {
      problems.add("cluster." + field + ": must not be empty");
      return null;
    }
    Path p = base.resolve(t).normalize();
    if (!Files.isReadable(p)) {
      problems.add("cluster." + field + ": " + p + " is not a readable file");
      return null;
    }
    return p;
  }

  /**
   * The password in {@code password_file}: its first line, without the line end (what {@code echo pw > file}
   * writes); null after adding a problem. The password itself never appears in a message.
   */
  private static String passwordFile(JsonNode c, Path base, List<String> problems) {
    Path f = file(c, "password_file", base, problems);
    if (f == null) {
      return null;
    }
    String content;
    try {
      content = Files.readString(f, java.nio.charset.StandardCharsets.UTF_8);
    } catch (java.io.IOException | java.io.UncheckedIOException e) {
      problems.add("cluster.password_file: cannot read " + f + ": " + e.getMessage());
      return null;
    }
    int end = content.indexOf('\n');
    String first = (end < 0 ? content : content.substring(0, end)).replaceFirst("\r$", "");
    if (first.isEmpty()) {
      problems.add("cluster.password_file: " + f + " has no password on its first line");
      return null;
    }
    return first;
  }

  @Override
  public String toString() {
    return "ClusterConfig[" + etcd + ", nodeId=" + nodeId + ", prefix=" + prefix + ", leaseTtl=" + leaseTtl + "]";
  }
}
