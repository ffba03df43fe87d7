package dev.csisupervisor.agent.demo;

import dev.csisupervisor.agent.config.ConfigLoader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The demo's step 4, the agent itself is killed: a second agent, as its own process (the way it
 * runs in production), with two plugins: it is killed with SIGKILL, its plugins keep running, and
 * a new agent restores the registry, re-attaches to the same processes and confirms their
 * registrations: nothing launched twice, nothing registered twice. Then a SIGTERM stops it
 * cleanly (exit 0).
 */
final class AgentCrash {
  private final DemoConsole console;
  private final PrintWriter out;
  private final boolean fast;

  AgentCrash(DemoConsole console, boolean fast) {
    this.console = console;
    this.out = console.out();
    this.fast = fast;
  }

  /** Runs the step in {@code dir}; true if everything happened as it should, in time. */
  boolean run(Path dir) throws InterruptedException {
    console.section(
        "the agent itself crashes: a csi-agent process with 2 plugins, killed with SIGKILL");
    ChildAgents agents = new ChildAgents(dir);
    try {
      agents.writeConfig(fast,
          "  - {id: crash-node, type: node, command: " + ConfigLoader.BUILTIN_MOCK_PLUGIN
          + ", args: [--type, node, --name, \"${CSI_PLUGIN_ID}.csi.dev\"]}\n"
          + "  - {id: crash-controller, type: controller, command: "
          + ConfigLoader.BUILTIN_MOCK_PLUGIN
          + ", args: [--type, controller, --name, \"${CSI_PLUGIN_ID}.csi.dev\"]}\n");
      Process first = agents.start("agent1");
      if (!console.await("the first agent's plugins registered",
          () -> agents.registered(false) == 2)) {
        return false;
      }
      Map<String, Long> pids = agents.pluginPids();
      out.println("  agent pid " + first.pid() + ", plugin pids " + pids);
      first.destroyForcibly();
      first.waitFor(10, TimeUnit.SECONDS);
      boolean alive = pids.values().stream().allMatch(p -> ProcessHandle.of(p)
          .map(ProcessHandle::isAlive).orElse(false));
      out.println(console.stamp() + "killed the agent (exit " + first.exitValue()
          + "); its plugins " + (alive ? "are still running" : "DIED with it"));
      if (!alive) {
        return false;
      }

      console.section("starting a new agent on the same data dir...");
      Process second = agents.start("agent2");
      if (!console.await("the new agent confirmed the registrations",
          () -> agents.registered(true) == 2 && agents.pluginPids().equals(pids))) {
        return false;
      }
      int instances = agents.registered(false);
      out.println("  restored registrations confirmed, processes re-attached (same pids "
          + agents.pluginPids() + "), " + instances + " registrations: "
          + (instances == 2 ? "no duplicate" : "DUPLICATES"));
      second.destroy(); // SIGTERM
      if (!second.waitFor(30, TimeUnit.SECONDS)) {
        return false;
      }
      out.println(console.stamp() + "SIGTERM: the new agent stopped its plugins and exited "
          + second.exitValue());
      out.flush();
      return instances == 2 && second.exitValue() == 0;
    } catch (IOException e) {
      out.println("demo: " + e.getMessage());
      return false;
    } finally {
      agents.destroyAll();
    }
  }
}
