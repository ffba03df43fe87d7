package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.config.PluginSpec;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.Function;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a reload changes the running plugin tasks (see {@link Agent#reload}): the diff of the
 * current tasks against the new plugin list, applied task by task.
 *
 * <ul>
 *   <li>new id: a new task (not if a discovered plugin has the id);
 *   <li>same spec: the task stays;
 *   <li>same supervision ({@link PluginSpec#sameSupervision}): the task is updated, its process
 *       restarted under the same hook if what it runs changed;
 *   <li>other change: the old task is stopped, a new one started once it is gone;
 *   <li>id gone: the task is stopped in the background.
 * </ul>
 *
 * <p>A task whose id is still stopping (removed by an earlier reload) is started only once that
 * stop completes: its process may hold the socket. Calls to {@link #apply} are serialized by the
 * agent.
 */
final class TaskReload {
  // The agent's log lines keep the one logger name operators filter on.
  private static final Logger log = LoggerFactory.getLogger(Agent.class);

  private final Function<PluginSpec, PluginTask> newTask;
  private final Predicate<String> discovered;
  private final Executor io;
  /** Tasks removed by a reload whose stop has not completed yet, by plugin id. */
  private final Map<String, CompletableFuture<Void>> stopping = new ConcurrentHashMap<>();

  /**
   * @param newTask makes the task of a spec (not started)
   * @param discovered whether a discovered plugin has an id
   * @param io where a task waiting for an old one's stop is started
   */
  TaskReload(Function<PluginSpec, PluginTask> newTask, Predicate<String> discovered,
      Executor io) {
    this.newTask = requireNonNull(newTask, "newTask");
    this.discovered = requireNonNull(discovered, "discovered");
    this.io = requireNonNull(io, "io");
  }

  /**
   * The outcome of a reload.
   *
   * @param tasks the tasks now, in the new config's order
   * @param toStart new tasks the caller starts once {@code tasks} is in effect
   * @param changes one line per change made or refused
   */
  record Result(Map<String, PluginTask> tasks, List<PluginTask> toStart, List<String> changes) {}

  Result apply(Map<String, PluginTask> before, List<PluginSpec> next) {
    List<String> changes = new ArrayList<>();
    Map<String, PluginTask> after = new LinkedHashMap<>();
    List<PluginTask> toStart = new ArrayList<>();
    for (PluginSpec spec : next) {
      PluginTask old = before.get(spec.id());
      if (old == null) {
        if (discovered.test(spec.id())) {
          changes.add(spec.id() + ": not added: a discovered plugin has this id");
          continue;
        }
        PluginTask t = newTask.apply(spec);
        after.put(spec.id(), t);
        CompletableFuture<Void> previous = stopping.get(spec.id());
        if (previous == null) {
          toStart.add(t);
        } else {
          // Removed by an earlier reload and still stopping: its process may hold the socket.
          startAfter(previous, t);
        }
        changes.add(spec.id() + ": added");
      } else if (old.spec().equals(spec)) {
        after.put(spec.id(), old);
      } else if (old.spec().sameSupervision(spec)) {
        boolean newRevision = spec.artifact() != null
            && !Objects.equals(old.spec().artifact(), spec.artifact());
        old.update(spec);
        after.put(spec.id(), old);
        changes.add(spec.id() + ": updated" + (newRevision ? " (new artifact revision "
            + spec.id() + "_" + spec.artifact().revision() + ")" : ""));
      } else {
        PluginTask t = newTask.apply(spec);
        after.put(spec.id(), t);
        // Started once the old one is gone: its process may still hold the socket path.
        startAfter(old.stop("replaced by a new config"), t);
        changes.add(spec.id() + ": replaced (its type, socket, probe or restart settings"
            + " changed)");
      }
    }
    for (PluginTask old : before.values()) {
      if (!after.containsKey(old.spec().id())) {
        stopInBackground(old, "removed from the config");
        changes.add(old.spec().id() + ": removed");
      }
    }
    return new Result(Collections.unmodifiableMap(after), toStart, changes);
  }

  private void stopInBackground(PluginTask t, String reason) {
    // A removed plugin's stop runs in the background: a reload does not wait for its grace. A
    // reload that adds it back starts the new task only once this one has stopped.
    String id = t.spec().id();
    CompletableFuture<Void> f = t.stop(reason);
    stopping.put(id, f);
    f.whenComplete((v, e) -> {
      stopping.remove(id, f);
      if (e != null) {
        log.warn("plugin={}: stop failed: {}", id, e.toString());
      }
    });
  }

  private void startAfter(CompletableFuture<Void> stopped, PluginTask t) {
    stopped.whenCompleteAsync((v, e) -> {
      try {
        t.start(null);
      } catch (IllegalStateException closed) {
        log.debug("plugin={}: not started, the agent stopped meanwhile", t.spec().id());
      }
    }, io);
  }
}
