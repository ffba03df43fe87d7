package dev.csisupervisor.agent.config;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.CsiEndpoint;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import org.apache.commons.text.StringSubstitutor;
import org.apache.commons.text.lookup.StringLookup;

/**
 * {@code ${VAR}} in a launched plugin's {@code command}, {@code args} and {@code env} values, the
 * way Nomad jobs and (as {@code $(VAR)}) Kubernetes manifests write a driver's flags:
 * {@code --endpoint=${CSI_ENDPOINT}}.
 *
 * <p>The variables are the plugin's own environment: what the agent sets for every launched
 * plugin ({@link #agentVariables}) and, for {@code command} and {@code args}, the plugin's
 * {@code env} (after its own interpolation). <code>$${</code> is a literal <code>${</code>; a
 * {@code $} not followed by <code>{</code> stays as it is. A name that is not a variable is an error (the config
 * loader names the field). Values are not interpolated again.
 *
 * <p>Stateless and thread-safe.
 */
public final class Interpolation {
  /** The plugin's endpoint, {@code unix://<socket>} (also set in its environment). */
  public static final String CSI_ENDPOINT = CsiEndpoint.ENV;
  /** The node's id: the host name. */
  public static final String CSI_NODE_ID = "CSI_NODE_ID";
  /** The plugin's id from the config. */
  public static final String CSI_PLUGIN_ID = "CSI_PLUGIN_ID";
  /** The plugin's socket directory, {@code <csi_root>/<type>/<id>}. */
  public static final String CSI_PLUGIN_DIR = "CSI_PLUGIN_DIR";
  /** Every variable the agent defines, in the order they are documented. */
  public static final Set<String> AGENT_VARIABLES =
      Set.of(CSI_ENDPOINT, CSI_NODE_ID, CSI_PLUGIN_ID, CSI_PLUGIN_DIR);

  private static final String NODE_ID = hostName();

  private Interpolation() {}

  /**
   * The variables the agent defines for one launched plugin, also set in its environment.
   *
   * @param id     the plugin id
   * @param socket the plugin's socket, {@code <csi_root>/<type>/<id>/csi.sock}
   */
  public static Map<String, String> agentVariables(String id, Path socket) {
    requireNonNull(id, "id");
    requireNonNull(socket, "socket");
    Map<String, String> vars = new LinkedHashMap<>();
    vars.put(CSI_ENDPOINT, CsiEndpoint.of(socket));
    vars.put(CSI_NODE_ID, NODE_ID);
    vars.put(CSI_PLUGIN_ID, id);
    vars.put(CSI_PLUGIN_DIR, socket.getParent().toString());
    return vars;
  }

  /** The node id the agent defines: this host's name. */
  public static String nodeId() {
    return NODE_ID;
  }

  /**
   * {@code value} with every {@code ${NAME}} replaced by {@code vars.get(NAME)}.
   *
   * @throws UnknownVariableException naming every {@code ${NAME}} that is not in {@code vars}
   */
  public static String expand(String value, Map<String, String> vars)
      throws UnknownVariableException {
    requireNonNull(value, "value");
    requireNonNull(vars, "vars");
    if (!value.contains("${")) {
      return value;
    }
    Set<String> unknown = new LinkedHashSet<>();
    StringLookup lookup = name -> {
      String v = vars.get(name);
      if (v == null) {
        unknown.add(name);
      }
      return v;
    };
    StringSubstitutor s = new StringSubstitutor(lookup)
        .setEscapeChar('$')
        .setValueDelimiterMatcher(null)
        .setDisableSubstitutionInValues(true)
        .setEnableSubstitutionInVariables(false)
        .setEnableUndefinedVariableException(false);
    String out = s.replace(value);
    if (!unknown.isEmpty()) {
      throw new UnknownVariableException(unknown);
    }
    return out;
  }

  private static String hostName() {
    try {
      String h = InetAddress.getLocalHost().getHostName();
      if (h != null && !h.isBlank()) {
        return h;
      }
    } catch (UnknownHostException e) {
      // fall through
    }
    String env = System.getenv("HOSTNAME");
    return env == null || env.isBlank() ? "localhost" : env;
  }

  /** A {@code ${NAME}} names no variable. */
  public static final class UnknownVariableException extends Exception {
    private static final long serialVersionUID = 1L;
    private final transient Set<String> names;

    UnknownVariableException(Set<String> names) {
      super("unknown variable" + (names.size() == 1 ? " " : "s ") + String.join(", ",
          names.stream().map(n -> "${" + n + "}").toList()));
      this.names = Set.copyOf(names);
    }

    public Set<String> names() {
      return names;
    }
  }
}
