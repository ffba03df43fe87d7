package dev.csisupervisor.mockplugin;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.Optional;

/**
 * Who sent a call, as the caller said in its gRPC metadata: the node id of the csi-supervisor agent and the
 * create revision of the election key under which it acts as the plugin id's controller agent. The headers are
 * {@value #AGENT_HEADER} (the node id, percent-encoded UTF-8 as {@code application/x-www-form-urlencoded}) and
 * {@value #ELECTION_HEADER} (the revision, decimal, at least 1); csi-client's {@code CsiClient.withCallerIdentity}
 * sends them. A call with neither header has no caller (an external client such as csi-sanity). Immutable.
 *
 * @param agentNodeId the agent's node id, not blank
 * @param electionRevision the election key's create revision, at least 1
 */
public record Caller(String agentNodeId, long electionRevision) {

  /** The metadata key of the agent's node id. */
  public static final String AGENT_HEADER = "csi-supervisor-agent";
  /** The metadata key of the election revision. */
  public static final String ELECTION_HEADER = "csi-supervisor-election";

  public Caller {
    Objects.requireNonNull(agentNodeId, "agentNodeId");
    if (agentNodeId.isBlank()) {
      throw new IllegalArgumentException("agentNodeId must not be blank, got '" + agentNodeId + "'");
    }
    if (electionRevision < 1) {
      throw new IllegalArgumentException("electionRevision must be >= 1, got " + electionRevision);
    }
  }

  /**
   * The caller the two header values name; empty if both are absent.
   *
   * @throws IllegalArgumentException naming the header: only one of them is there, the revision is not a decimal
   *     number of at least 1, or the node id is blank or not decodable
   */
  static Optional<Caller> fromHeaders(String agent, String election) {
    if (agent == null && election == null) {
      return Optional.empty();
    }
    if (agent == null || election == null) {
      throw new IllegalArgumentException("header " + (agent == null ? AGENT_HEADER : ELECTION_HEADER)
          + " is missing (" + (agent == null ? ELECTION_HEADER : AGENT_HEADER) + " is set): send both or neither");
    }
    long revision;
    try {
      revision = Long.parseLong(election.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("header " + ELECTION_HEADER + " must be a decimal revision >= 1, got '"
          + election + "'");
    }
    if (revision < 1) {
      throw new IllegalArgumentException("header " + ELECTION_HEADER + " must be >= 1, got " + revision);
    }
    String node;
    try {
      node = URLDecoder.decode(agent, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("header " + AGENT_HEADER + " is not percent-encoded UTF-8: '" + agent + "'");
    }
    if (node.isBlank()) {
      throw new IllegalArgumentException("header " + AGENT_HEADER + " must not be blank");
    }
    return Optional.of(new Caller(node, revision));
  }

  @Override
  public String toString() {
    return agentNodeId + "@" + electionRevision;
  }
}
