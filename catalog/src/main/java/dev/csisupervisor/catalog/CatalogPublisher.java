package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.registry.PluginRegistry;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;

/**
 * Mirrors one node's {@link PluginRegistry} into etcd (contract 9: the cluster is a view, never the source of
 * truth).
 *
 * <p>After {@link #start()} it subscribes to every plugin type (snapshot, then events) and keeps
 * {@code <prefix>/nodes/<nodeId>} and one {@code <prefix>/plugins/<type>/<name>/<nodeId>/<allocId>} per
 * registration in etcd, every key attached to the node's lease (kept alive at a third of its TTL through
 * whichever member answers: a keep-alive unanswered for the request timeout moves the publisher to the next
 * endpoint with the same lease). On start and after every etcd outage it reconciles: it lists the node's keys,
 * puts what is missing or stale and deletes what the registry no longer has; a lease that expired meanwhile is
 * replaced and every key put again. Every write is conditional on the node key as this connection put it, so a
 * write whose answer was lost and that etcd applies late changes nothing. A dead node's keys vanish with its
 * lease.
 *
 * <p><b>Never in the registry's way.</b> Events are taken on the publisher's own thread into a map keyed by
 * etcd key (newest value wins); all etcd I/O runs on another thread. etcd being slow, down or partitioned only
 * grows that map, bounded by {@link Builder#maxBacklog}: past it the backlog is dropped and a full reconcile
 * is scheduled instead (counted in {@link PublisherStatus#overflows()}). Failures are retried with exponential
 * backoff, one log line per step.
 *
 * <p>Thread-safe. {@link #close()} revokes the lease (the node leaves the catalog at once) and is idempotent.
 */
public interface CatalogPublisher extends AutoCloseable {

  static Builder builder() {
    return new Builder();
  }

  /**
   * Subscribes to the registry and starts publishing in the background; returns at once, whether or not
   * etcd is reachable.
   *
   * @throws IllegalStateException if called twice or after close
   */
  void start();

  /**
   * Waits until the publisher is connected, has reconciled, and has no backlog: the catalog then shows this
   * node's registry as of the call (or later). False on timeout.
   */
  boolean awaitInSync(Duration timeout) throws InterruptedException;

  /** What the publisher is doing now. */
  PublisherStatus status();

  /** The node id it publishes as. */
  String nodeId();

  /**
   * Stops publishing, ends the registry subscriptions and revokes the node's lease (best effort, within the
   * request timeout) so the node's keys disappear now rather than at lease expiry. Idempotent.
   */
  @Override
  void close();

  /**
   * Checks, with one read, that no other live agent holds {@code nodeId} (an entry with another instance token):
   * a start-time refusal with a clear message; the publisher's create-only put of the node key is what enforces it.
   *
   * @throws NodeIdInUseException naming the other agent
   * @throws EtcdException if etcd cannot be read (the caller decides whether that stops it)
   */
  static void checkNodeIdFree(EtcdOptions etcd, String prefix, String nodeId, String instance) {
    CatalogListing.node(etcd, CatalogKeys.of(prefix), nodeId).filter(n -> !n.heldBy(instance)).ifPresent(n -> {
      throw new NodeIdInUseException(nodeId, n);
    });
  }

  /** Builds a {@link CatalogPublisher}. Not thread-safe. */
  final class Builder extends EtcdClientSettings<Builder> {
    PluginRegistry registry;
    String nodeId;
    Duration leaseTtl = Duration.ofSeconds(15);
    int maxBacklog = 10_000;
    int batchSize = 64;
    Clock clock = Clock.systemUTC();
    String hostname;
    String instance = "";
    boolean revokeOnClose = true;

    Builder() {}

    @Override
    Builder self() {
      return this;
    }

    /** Required: the node's registry. */
    public Builder registry(PluginRegistry registry) {
      this.registry = Objects.requireNonNull(registry, "registry");
      return this;
    }

    /** The node id (default: this host's name); {@code [A-Za-z0-9._-]{1,253}}. */
    public Builder nodeId(String nodeId) {
      this.nodeId = CatalogKeys.checkNodeId(nodeId);
      return this;
    }

    /**
     * This agent's instance token (made once in its data dir, the same across restarts): the node key is taken
     * over only from an entry with the same token (a run of this agent that crashed), never from another live
     * agent's ({@link NodeIdInUseException}). Default: none, an entry any agent takes over.
     */
    public Builder instance(String instance) {
      if (instance == null || instance.isBlank() || instance.length() > 128) {
        throw new IllegalArgumentException("instance must be 1 to 128 characters, got '" + instance + "'");
      }
      this.instance = instance;
      return this;
    }

    /** The node lease's TTL, whole seconds, at least 2 s (default 15 s). */
    public Builder leaseTtl(Duration ttl) {
      if (ttl == null || ttl.compareTo(Duration.ofSeconds(2)) < 0 || ttl.toMillis() % 1000 != 0) {
        throw new IllegalArgumentException("leaseTtl must be whole seconds and at least 2s, got " + ttl);
      }
      this.leaseTtl = ttl;
      return this;
    }

    /** How many changed keys may wait for etcd before the backlog is replaced by a full reconcile (default 10,000). */
    public Builder maxBacklog(int maxBacklog) {
      this.maxBacklog = Bounds.atLeast(maxBacklog, 1, "maxBacklog");
      return this;
    }

    /** Keys written per etcd transaction (1 to 128, etcd's default limit; default 64). */
    public Builder batchSize(int batchSize) {
      this.batchSize = Bounds.between(batchSize, 1, 128, "batchSize");
      return this;
    }

    /** The clock for lag measurements and the node entry (default UTC system clock). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** Whether close() revokes the lease (default true). False leaves the keys to expire with the lease. */
    public Builder revokeOnClose(boolean revoke) {
      this.revokeOnClose = revoke;
      return this;
    }

    /**
     * Builds the publisher (not started).
     *
     * @throws IllegalStateException naming the missing setting
     */
    public CatalogPublisher build() {
      if (registry == null) {
        throw new IllegalStateException("registry is required");
      }
      if (etcd == null) {
        throw new IllegalStateException("etcd is required");
      }
      hostname = localHostname();
      if (nodeId == null) {
        nodeId = CatalogKeys.checkNodeId(hostname);
      }
      return new EtcdCatalogPublisher(this);
    }

    /** This host's name, as the default node id. */
    public static String localHostname() {
      String env = System.getenv("HOSTNAME");
      if (env != null && !env.isBlank()) {
        return env.strip();
      }
      try {
        return InetAddress.getLocalHost().getHostName();
      } catch (UnknownHostException e) {
        return "localhost";
      }
    }
  }
}
