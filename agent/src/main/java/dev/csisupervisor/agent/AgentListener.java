package dev.csisupervisor.agent;

/**
 * Receives the agent's task events. Called on the agent's listener thread
 * ({@code csi-agent-listeners}), one event at a time, in the order they happened, and outside
 * every lock of the agent and its supervisor: a listener may call back into the agent (its task
 * status, say). It should return quickly: a slow listener delays the events after it, never the
 * agent.
 */
@FunctionalInterface
public interface AgentListener {
  void onEvent(AgentEvent event);
}
