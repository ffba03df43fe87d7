package dev.csisupervisor.agent.commands;

import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.agent.demo.Demo;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code csi-agent demo [--follow] [--fast] [--keep]}. */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = {"Zero set-up demo: an agent in a temporary directory with three mock CSI"
        + " plugins (controller, node, monolith) launched as child processes. Shows each plugin"
        + " go from starting to ready to registered, the registry's events, then kills one plugin"
        + " to show it turn unhealthy and be restarted, and exits."})
final class DemoCommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Option(names = {"-f", "--follow"},
      description = "Stay up after the demo (try the other commands from another terminal)"
          + " until Ctrl-C.")
  boolean follow;

  @Option(names = "--fast", description = "Shorter delays (for tests).")
  boolean fast;

  @Option(names = "--keep", description = "Keep the temporary directory (logs, state file).")
  boolean keep;

  @Option(names = {"-v", "--verbose"}, description = "Also show the agent's log.")
  boolean verbose;

  @Override
  public Integer call() throws Exception {
    CountDownLatch stop = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(1);
    Thread hook = new Thread(() -> {
      stop.countDown();
      try {
        // Let the demo stop its agent and plugins before the JVM goes.
        done.await(15, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "csi-agent-demo-stop");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      boolean ok = new Demo(spec.commandLine().getOut(), fast).run(follow, keep, stop);
      return ok ? ExitCodes.OK : ExitCodes.FAILURE;
    } finally {
      done.countDown();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // shutting down already (Ctrl-C): the hook is running
      }
    }
  }
}
