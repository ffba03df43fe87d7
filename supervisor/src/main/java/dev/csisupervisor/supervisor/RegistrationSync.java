package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A hook's registrations, brought to the registry off the probing threads: the hook says what it
 * wants (a numbered version of its desired registrations), and a sync, on the registry executor,
 * deregisters what is no longer wanted (in reverse order) and registers what changed, then tells
 * the hook which version it reached and how. Syncs of one hook run one at a time, in order, and
 * never under the hook's lock while they write; the hook's lock is taken only to read what it wants
 * and to tell it the result.
 */
final class RegistrationSync {
  private static final Logger log = LoggerFactory.getLogger(RegistrationSync.class);

  /** What the hook wants registered, and the version of that wish. */
  record Desired(Map<PluginType, PluginInfo> registrations, long version) {}

  /** The hook's side; both methods are called with the hook's lock held. */
  interface Owner {
    /** What it wants now; null once it detached (its registrations are left for a new agent). */
    Desired desired();

    /** A sync of {@code version} finished; {@code failure} is the first write that failed, or null. */
    void synced(long version, RuntimeException failure);
  }

  private final PluginRegistry registry;
  private final Executor executor;
  private final String pluginId;
  private final String allocId;
  private final Object ownerLock;
  private final Owner owner;
  private final Object commitLock = new Object();
  /** What this hook last wrote to the registry; guarded by commitLock. */
  private final Map<PluginType, PluginInfo> committed = new LinkedHashMap<>();

  RegistrationSync(PluginRegistry registry, Executor executor, String pluginId, String allocId,
      Object ownerLock, Owner owner) {
    this.registry = requireNonNull(registry, "registry");
    this.executor = requireNonNull(executor, "executor");
    this.pluginId = requireNonNull(pluginId, "pluginId");
    this.allocId = requireNonNull(allocId, "allocId");
    this.ownerLock = requireNonNull(ownerLock, "ownerLock");
    this.owner = requireNonNull(owner, "owner");
  }

  /** A sync soon, on the registry executor. */
  void request() {
    try {
      executor.execute(this::syncNow);
    } catch (RejectedExecutionException e) {
      log.warn("plugin={}: registry executor is shut down; registry not updated", pluginId);
    }
  }

  /** A sync on this thread, in order after any sync of this hook still running. */
  void syncNow() {
    synchronized (commitLock) {
      Desired want;
      synchronized (ownerLock) {
        want = owner.desired();
      }
      if (want == null) {
        committed.clear();
        return;
      }
      RuntimeException failure = write(want.registrations());
      synchronized (ownerLock) {
        owner.synced(want.version(), failure);
      }
    }
  }

  /** Under commitLock: makes the registry hold {@code want}; the first failure, or null. */
  private RuntimeException write(Map<PluginType, PluginInfo> want) {
    List<PluginType> gone = new ArrayList<>(committed.keySet());
    gone.removeAll(want.keySet());
    Collections.reverse(gone);
    RuntimeException failure = null;
    for (PluginType type : gone) {
      try {
        registry.deregister(type, pluginId, allocId);
        committed.remove(type);
      } catch (RuntimeException e) {
        log.error("plugin={} alloc={}: deregistering {} failed", pluginId, allocId, type, e);
        failure = failure == null ? e : failure;
      }
    }
    if (failure != null) {
      return failure;
    }
    for (Map.Entry<PluginType, PluginInfo> e : want.entrySet()) {
      PluginInfo have = committed.get(e.getKey());
      if (have != null && have.sameContentAs(e.getValue())) {
        continue;
      }
      try {
        registry.register(e.getValue());
        committed.put(e.getKey(), e.getValue());
      } catch (RuntimeException ex) {
        log.error("plugin={} alloc={}: registering {} failed", pluginId, allocId, e.getKey(), ex);
        return ex;
      }
    }
    return null;
  }
}
