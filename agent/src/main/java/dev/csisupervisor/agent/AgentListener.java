package dev.csisupervisor.agent;

/**
 * Receives the agent's task events. Called on the agent's scheduler threads, one event at a time
 * per plugin and in the order they happened; must return quickly and must not block.
 */
@FunctionalInterface
public interface AgentListener {
  void onEvent(AgentEvent event);
}
