package dev.csisupervisor.agent.cli;

import dev.csisupervisor.agent.Agent;
import dev.csisupervisor.agent.cluster.ClusterNode;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ClusterConfig;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.agent.config.ConfigLoader;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code csi-agent run --config FILE}: the daemon, until SIGTERM/SIGINT. */
@Command(name = "run", mixinStandardHelpOptions = true,
    description = {"Run the agent: launch and supervise the configured plugins, serve the admin"
        + " API and metrics. Stops on SIGTERM or SIGINT (Ctrl-C); SIGHUP re-reads the config"
        + " and applies its plugin changes."})
final class RunCommand implements Callable<Integer> {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(RunCommand.class);

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Option(names = "--config", required = true, paramLabel = "FILE",
      description = "The agent's YAML config.")
  Path config;

  @Option(names = {"-v", "--verbose"}, description = "Log at info (the default for run).")
  boolean verbose;

  /**
   * SIGHUP re-reads the config file and applies its plugin changes (see {@link Agent#reload}).
   * An invalid file is reported and changes nothing.
   */
  private static void reloadOnSighup(Agent agent) {
    boolean installed = Hangup.onHangup(() -> {
      // Not on the signal thread: reading and applying the config may take a moment.
      Thread t = new Thread(() -> {
        try {
          agent.reloadFromFile();
        } catch (ConfigException e) {
          log.error("reload: invalid config, nothing changed: {}", e.getMessage());
        } catch (RuntimeException e) {
          log.error("reload failed", e);
        }
      }, "csi-agent-reload");
      t.setDaemon(true);
      t.start();
    });
    if (!installed) {
      log.warn("SIGHUP cannot be handled on this JVM: no config reload");
    }
  }

  @Override
  public Integer call() throws Exception {
    AgentConfig cfg;
    java.util.Optional<ClusterConfig> clusterConfig;
    try {
      cfg = ConfigLoader.load(config);
      clusterConfig = ClusterConfig.load(config);
    } catch (ConfigException e) {
      spec.commandLine().getErr().println("csi-agent: invalid config: " + e.getMessage());
      return CsiAgentCommand.USAGE;
    }
    Agent agent = Agent.create(cfg);
    var cluster = new java.util.concurrent.atomic.AtomicReference<ClusterNode>();
    Thread hook = new Thread(() -> {
      agent.close();
      // After the agent: its deregistrations are published, then the lease goes.
      java.util.Optional.ofNullable(cluster.get()).ifPresent(ClusterNode::close);
    }, "csi-agent-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      agent.start();
    } catch (Agent.AgentException e) {
      spec.commandLine().getErr().println("csi-agent: cannot start: " + e.getMessage());
      return CsiAgentCommand.FAILURE;
    }
    clusterConfig.ifPresent(c -> cluster.set(ClusterNode.start(c, agent.registry(), agent.metrics())));
    spec.commandLine().getOut().println("csi-agent running: admin socket " + cfg.adminSocket()
        + agent.metricsAddress().map(a -> ", metrics http://" + a.getAddress().getHostAddress()
            + ":" + a.getPort() + "/metrics").orElse("")
        + ", " + cfg.plugins().size() + " plugin(s)");
    reloadOnSighup(agent);
    agent.awaitTermination();
    return CsiAgentCommand.OK;
  }
}
