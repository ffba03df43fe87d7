package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.supervisor.TaskEvent;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the plugins' events go: the {@link AgentListener}s, and for a supervisor hook's task
 * events also a log line and the health metric.
 *
 * <p>Thread-safe. {@link #emit} may be called holding locks (a plugin task's, a hook's): the
 * listeners run later on the listener executor, so a listener may call back into the agent
 * (e.g. for the task status) without deadlocking.
 */
final class PluginEvents {
  // The agent's log lines keep the one logger name operators filter on.
  private static final Logger log = LoggerFactory.getLogger(Agent.class);

  private final AgentMetrics metrics;
  private final List<AgentListener> listeners = new CopyOnWriteArrayList<>();
  /** Delivers listener calls: one thread, in order, outside every lock; null until started. */
  private volatile Executor executor;

  PluginEvents(AgentMetrics metrics) {
    this.metrics = requireNonNull(metrics, "metrics");
  }

  void addListener(AgentListener listener) {
    listeners.add(requireNonNull(listener, "listener"));
  }

  /** From now on listeners are called on {@code executor}, not on the emitting thread. */
  void deliverOn(Executor executor) {
    this.executor = requireNonNull(executor, "executor");
  }

  /** A supervisor hook's event for plugin {@code id}: logged, counted, and emitted. */
  void taskEvent(String id, PluginKind kind, String allocId, TaskEvent event) {
    log.info("plugin={} type={} alloc={} event=\"{}\": {}", id, kind.dirName(),
        allocId, event.type(), event.message());
    if (TaskEvent.PLUGIN_HEALTHY.equals(event.type())) {
      metrics.healthTransition(id, true);
    } else if (TaskEvent.PLUGIN_UNHEALTHY.equals(event.type())) {
      metrics.healthTransition(id, false);
    }
    emit(new AgentEvent(event.time(), id, event.type(), event.message()));
  }

  /** Queues {@code event} for the listeners. */
  void emit(AgentEvent event) {
    Executor e = executor;
    if (e == null) {
      deliver(event);
      return;
    }
    try {
      e.execute(() -> deliver(event));
    } catch (RejectedExecutionException closed) {
      log.debug("agent closed: event not delivered to listeners: {}", event);
    }
  }

  private void deliver(AgentEvent event) {
    for (AgentListener l : listeners) {
      try {
        l.onEvent(event);
      } catch (RuntimeException e) {
        log.error("agent listener threw on {}", event, e);
      }
    }
  }
}
