package dev.csisupervisor.client;

import java.util.Objects;

/**
 * Who is calling, sent with each call of a {@link CsiClient#withCallerIdentity} view as gRPC metadata: the node id
 * of the csi-supervisor agent, and the create revision of the etcd election key under which it acts as a plugin
 * id's controller agent. A plugin (or a test's mock cloud) may use it to tell a deposed controller's late call from
 * its successor's: of two agents, the one elected later has the higher revision.
 *
 * <p>On the wire: {@value #AGENT_HEADER} = the node id, percent-encoded UTF-8 as
 * {@code application/x-www-form-urlencoded} (so any node id fits an ASCII header; {@code a1} stays {@code a1}), and
 * {@value #ELECTION_HEADER} = the revision in decimal. Immutable.
 *
 * @param agentNodeId the calling agent's node id, not blank
 * @param electionRevision the election key's create revision, at least 1 (etcd revisions start at 1)
 */
public record CallerIdentity(String agentNodeId, long electionRevision) {

  /** The metadata key of the agent's node id. */
  public static final String AGENT_HEADER = "csi-supervisor-agent";
  /** The metadata key of the election revision. */
  public static final String ELECTION_HEADER = "csi-supervisor-election";

  /** @throws IllegalArgumentException naming the field: a blank node id, a revision below 1 */
  public CallerIdentity {
    Objects.requireNonNull(agentNodeId, "agentNodeId");
    if (agentNodeId.isBlank()) {
      throw new IllegalArgumentException("agentNodeId must not be blank, got '" + agentNodeId + "'");
    }
    if (electionRevision < 1) {
      throw new IllegalArgumentException("electionRevision must be >= 1, got " + electionRevision);
    }
  }

  /** The value of {@value #AGENT_HEADER}. */
  String agentHeaderValue() {
    return java.net.URLEncoder.encode(agentNodeId, java.nio.charset.StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return agentNodeId + "@" + electionRevision;
  }
}
