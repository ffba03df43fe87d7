package dev.csisupervisor.agent.e2e;

import java.util.List;
import java.util.concurrent.TimeUnit;

/** Ends the agent child processes a test started, and every plugin they launched or re-attached. */
final class AgentProcesses {
  private AgentProcesses() {}

  /**
   * SIGTERM first: a live agent stops its plugins, re-attached ones included (they are not its children, so
   * killing its process tree would miss them). What is still alive after that is killed, tree and all.
   */
  static void stop(List<Process> agents) throws InterruptedException {
    for (Process p : agents) {
      if (p.isAlive()) {
        p.destroy();
      }
    }
    for (Process p : agents) {
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
    }
  }
}
