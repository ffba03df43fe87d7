package dev.csisupervisor.agent;

import dev.csisupervisor.agent.config.AgentConfig;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Predicate;

/**
 * The in-JVM agents a test creates, and every event they emit. {@link #close} (in the test's
 * {@code @AfterEach}) closes them all.
 */
final class TestAgents implements AutoCloseable {
  private final List<Agent> agents = new ArrayList<>();
  private final List<AgentEvent> events = Collections.synchronizedList(new ArrayList<>());

  /** An agent for {@code config}, its events recorded; not started yet. */
  Agent create(AgentConfig config) throws Exception {
    Agent a = Agent.create(config);
    a.addListener(events::add);
    agents.add(a);
    return a;
  }

  /** {@link #create}, then started. */
  Agent start(AgentConfig config) throws Exception {
    Agent a = create(config);
    a.start();
    return a;
  }

  /**
   * Whether an event so far matches. Listeners run on their own thread: an event may arrive a
   * moment after the state it reports, so tests await this.
   */
  boolean sawEvent(Predicate<AgentEvent> matching) {
    synchronized (events) {
      return events.stream().anyMatch(matching);
    }
  }

  /** The events so far, in order. */
  List<AgentEvent> events() {
    synchronized (events) {
      return List.copyOf(events);
    }
  }

  @Override
  public void close() {
    agents.forEach(Agent::close);
  }
}
