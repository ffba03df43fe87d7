package dev.csisupervisor.registry;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import java.time.Clock;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The node's dynamic plugin registry.
 *
 * <p><b>Keys and "newest".</b> A registration is keyed by (type, name, allocId); one name may have several
 * instances. {@link #list}, {@link #find} and {@link #dispense} use the newest instance of a name: the one
 * whose key was most recently REGISTERED. An UPDATED keeps its instance's place (a health change of an old
 * instance does not make it newest). The order is persisted, so it survives a restart.
 *
 * <p><b>Changes.</b> {@link #register} of a new key: one REGISTERED event. Of an existing key with content
 * that differs ({@link PluginInfo#sameContentAs}): replaced, one UPDATED event. With equal content: no
 * change, no event. {@link #deregister} of a known key: one DEREGISTERED event; of an unknown key: nothing.
 *
 * <p><b>Persist before publish.</b> Every change is committed to the {@link StateStore} (its own key only)
 * before memory changes and before its event is published; when the call returns the change is durable. If
 * the commit fails the call throws {@link StateStoreException} and nothing changed. Concurrent callers share
 * commits (group commit): one caller commits every change waiting at that moment in one
 * {@link StateStore#apply}, and each caller returns only once its own change is durable. Events are numbered
 * and published in commit order.
 *
 * <p><b>Restore.</b> {@link Builder#build()} loads every record with {@code restored=true}. Re-registering a
 * restored key confirms it: the flag clears and subscribers get one UPDATED (with the new content if it
 * changed, else the same content with {@code restored=false}; the record is rewritten only if the content
 * changed). {@link #reconcile} removes
 * restored entries whose allocation is not alive; the optional grace period removes the ones nobody
 * confirmed in time. Records that cannot be decoded are skipped, reported by {@link #restoreProblems()} and
 * left in the store.
 *
 * <p><b>Events.</b> Per type one total order (sequence 1, 2, 3, ...). {@link #subscribe} atomically takes
 * a snapshot and starts the stream right after it. Each subscriber has its own bounded queue drained on its
 * own executor: a slow subscriber never blocks writers or other subscribers; one whose backlog exceeds
 * {@link Builder#maxSubscriberBacklog} is dropped with {@link PluginListener#onLagged}.
 *
 * <p>Thread-safe. Listener and dispenser code never runs under a registry lock. After {@link #close()} the
 * mutating methods, {@code subscribe} and {@code dispense} throw {@link IllegalStateException}; reads keep
 * answering from memory.
 */
public interface PluginRegistry extends AutoCloseable {

  /** A builder; {@link Builder#stateStore} is required. */
  static Builder builder() {
    return new Builder();
  }

  /**
   * Registers or updates {@code info} (its {@code restored} flag is ignored). Returns the event, or empty when
   * nothing changed.
   *
   * @throws IllegalArgumentException if info is null
   * @throws StateStoreException if the commit failed (nothing changed)
   * @throws IllegalStateException if the registry is closed
   */
  Optional<PluginEvent> register(PluginInfo info);

  /**
   * Removes the key (type, name, allocId). Returns the DEREGISTERED event, or empty if the key was unknown
   * (never touches another instance of the name).
   *
   * @throws IllegalArgumentException naming a bad field
   * @throws StateStoreException if the commit failed (nothing changed)
   * @throws IllegalStateException if the registry is closed
   */
  Optional<PluginEvent> deregister(PluginType type, String name, String allocId);

  /** The newest instance of every name of this type, sorted by name. */
  List<PluginInfo> list(PluginType type);

  /** Every instance of this type, oldest registration first. */
  List<PluginInfo> listAll(PluginType type);

  /** The newest instance of the name, if any. */
  Optional<PluginInfo> find(PluginType type, String name);

  /** The instance with exactly this key, if any. */
  Optional<PluginInfo> pluginForAlloc(PluginType type, String name, String allocId);

  /**
   * A client for the newest instance of the name, from the type's dispenser (run on the calling thread).
   *
   * @throws PluginNotFoundException if no instance of the name is registered
   * @throws IllegalStateException if no dispenser is configured for the type, or the registry is closed
   * @throws PluginDispenseException if the dispenser threw or returned null
   */
  Object dispense(PluginType type, String name) throws PluginNotFoundException;

  /**
   * Like {@link #dispense(PluginType, String)}, checked against the expected client type.
   *
   * @throws IllegalStateException if the dispensed client is not a {@code clientType}
   */
  <T> T dispense(PluginType type, String name, Class<T> clientType) throws PluginNotFoundException;

  /**
   * Subscribes to one type: the returned subscription holds the snapshot, and {@code listener} gets every later
   * event of the type on {@code executor}, in order, exactly once, until the subscription ends.
   *
   * @throws IllegalStateException if the registry is closed
   */
  Subscription subscribe(PluginType type, PluginListener listener, Executor executor);

  /**
   * Deregisters every restored (unconfirmed) entry whose allocId is not in {@code liveAllocIds}, in one commit,
   * with one DEREGISTERED event each, and drops skipped (undecodable) records whose key names a dead allocation.
   * Entries registered or confirmed since the restore are never touched. Returns the events in order.
   *
   * @throws StateStoreException if the commit failed (nothing changed)
   */
  List<PluginEvent> reconcile(Set<String> liveAllocIds);

  /** The records skipped when this registry restored from its store; empty if every record was read. */
  List<RestoreProblem> restoreProblems();

  /**
   * Fails writers still waiting, delivers nothing more (an {@code onEvent} running on another thread is waited
   * for up to {@link Builder#closeTimeout}), ends every subscription with {@code onClosed()} on its executor,
   * cancels the grace period, and closes the state store if {@link Builder#closeStateStore} was set. Idempotent.
   */
  @Override
  void close();

  /** Builds a {@link PluginRegistry}, restoring it from the state store. Not thread-safe. */
  final class Builder {
    StateStore stateStore;
    boolean closeStateStore;
    Clock clock = Clock.systemUTC();
    int maxSubscriberBacklog = 10_000;
    final Map<PluginType, PluginDispenser<?>> dispensers = new EnumMap<>(PluginType.class);
    Duration restoreGracePeriod;
    ScheduledExecutorService graceScheduler;
    Duration closeTimeout = Duration.ofSeconds(5);

    Builder() {}

    /** Required: where registrations are persisted. The registry does not close it unless {@link #closeStateStore}. */
    public Builder stateStore(StateStore stateStore) {
      this.stateStore = Checks.notNull(stateStore, "stateStore");
      return this;
    }

    /** Whether {@link PluginRegistry#close()} also closes the state store (default false). */
    public Builder closeStateStore(boolean closeStateStore) {
      this.closeStateStore = closeStateStore;
      return this;
    }

    /** The clock for event times (default UTC system clock). */
    public Builder clock(Clock clock) {
      this.clock = Checks.notNull(clock, "clock");
      return this;
    }

    /** How many undelivered events a subscriber may queue before it is dropped as lagged (default 10,000). */
    public Builder maxSubscriberBacklog(int maxSubscriberBacklog) {
      this.maxSubscriberBacklog = Bounds.atLeast(maxSubscriberBacklog, 1, "maxSubscriberBacklog");
      return this;
    }

    /** The client factory for one type; replaces a previous one for the type. */
    public Builder dispenser(PluginType type, PluginDispenser<?> dispenser) {
      dispensers.put(Checks.type(type), Checks.notNull(dispenser, "dispenser"));
      return this;
    }

    /**
     * After {@code gracePeriod} on {@code scheduler}, deregister every restored entry that nobody re-registered
     * (as {@link PluginRegistry#reconcile} would for a dead allocation). If that commit fails it is logged and
     * retried after another grace period.
     */
    public Builder restoreGracePeriod(Duration gracePeriod, ScheduledExecutorService scheduler) {
      this.restoreGracePeriod = Bounds.positive(Checks.notNull(gracePeriod, "gracePeriod"), "gracePeriod");
      this.graceScheduler = Checks.notNull(scheduler, "scheduler");
      return this;
    }

    /** How long {@code close()} waits for a listener call already running (default 5 s). */
    public Builder closeTimeout(Duration closeTimeout) {
      this.closeTimeout = Bounds.notNegative(Checks.notNull(closeTimeout, "closeTimeout"), "closeTimeout");
      return this;
    }

    /**
     * Restores every record from the state store and returns the running registry.
     *
     * @throws IllegalStateException if no state store was given
     * @throws StateStoreException if the store cannot be read
     */
    public PluginRegistry build() {
      if (stateStore == null) {
        throw new IllegalStateException("stateStore is required");
      }
      return new DefaultPluginRegistry(this);
    }
  }
}
