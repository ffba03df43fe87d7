package dev.csisupervisor.agent.commands;

import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.agent.Agent;
import dev.csisupervisor.agent.AgentException;
import dev.csisupervisor.agent.cluster.ClusterNode;
import dev.csisupervisor.agent.cluster.NodeInstance;
import dev.csisupervisor.catalog.NodeIdInUseException;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ClusterConfig;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.logging.AgentLogging;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code csi-agent run --config FILE}: the daemon, until SIGTERM/SIGINT. */
@Command(name = "run", mixinStandardHelpOptions = true,
    description = {"Run the agent: launch and supervise the configured plugins, serve the admin"
        + " API and metrics. SIGTERM or SIGINT (Ctrl-C) stop it cleanly (exit 0). SIGHUP, or"
        + " 'csi-agent reload', re-reads the config and applies its plugin changes."})
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
   * An invalid file is reported and changes nothing. A SIGHUP ignored since start-up (nohup) can
   * never arrive: say so, and where to turn instead.
   */
  private static void reloadOnSighup(Agent agent) {
    Signals.Outcome o = Signals.handle("HUP", () -> {
      // Not on the signal thread: reading and applying the config may take a moment.
      Thread t = new Thread(() -> {
        try {
          agent.reloadFromFile();
        } catch (ConfigException e) {
          log.error("reload: invalid config, nothing changed: {}", e.getMessage());
        } catch (RuntimeException e) {
          log.error("reload failed: {}", e.toString());
        }
      }, "csi-agent-reload");
      t.setDaemon(true);
      t.start();
    });
    switch (o) {
      case INSTALLED -> { }
      case IGNORED -> log.warn("SIGHUP is ignored by this process (started under nohup or by a"
          + " supervisor that ignores it): SIGHUP will not reload the config; use 'csi-agent"
          + " reload' instead");
      case UNAVAILABLE -> log.warn("SIGHUP cannot be handled on this JVM: use 'csi-agent reload'"
          + " to reload the config");
      default -> throw new IllegalStateException(o.name());
    }
  }

  /**
   * SIGTERM and SIGINT stop the agent in order (plugins deregistered and stopped) and the
   * process then exits 0: a requested stop is not a failure. The JVM's own handling (exit 143 or
   * 130 after the shutdown hooks) is replaced.
   */
  private static void stopOnSignals(Agent agent) {
    for (String sig : new String[] {"TERM", "INT"}) {
      Signals.Outcome o = Signals.handle(sig, () -> {
        log.info("SIG{} received: stopping", sig);
        Thread t = new Thread(agent::close, "csi-agent-stop");
        // A thread started from the JDK's signal handler has no context class loader; libraries
        // that look one up (MapDB does) would fail while stopping.
        t.setContextClassLoader(RunCommand.class.getClassLoader());
        t.setDaemon(true);
        t.start();
      });
      if (o == Signals.Outcome.UNAVAILABLE) {
        log.debug("SIG{} cannot be handled on this JVM: the shutdown hook stops the agent", sig);
      }
    }
  }

  @Override
  public Integer call() throws Exception {
    AgentConfig cfg;
    java.util.Optional<ClusterConfig> clusterConfig;
    LogSettings logSettings;
    try {
      ConfigLoader.Sections file = ConfigLoader.loadSections(config);
      cfg = file.agent();
      clusterConfig = file.cluster();
      logSettings = file.log();
    } catch (ConfigException e) {
      spec.commandLine().getErr().println("csi-agent: invalid config: " + e.getMessage());
      return ExitCodes.USAGE;
    }
    try {
      // The environment overrides the config file.
      AgentLogging.apply(logSettings.overriddenBy(System.getenv()));
    } catch (IllegalArgumentException e) {
      spec.commandLine().getErr().println("csi-agent: invalid environment: " + e.getMessage());
      return ExitCodes.USAGE;
    }
    if (clusterConfig.isPresent()) {
      // Before anything starts: a node id another live agent holds is refused (its claims would become ours).
      try {
        ClusterNode.checkNodeId(clusterConfig.get(), NodeInstance.load(cfg.dataDir()));
      } catch (NodeIdInUseException e) {
        spec.commandLine().getErr().println("csi-agent: cannot start: cluster.node_id: " + e.getMessage());
        return ExitCodes.FAILURE;
      } catch (java.io.IOException e) {
        spec.commandLine().getErr().println("csi-agent: cannot start: data_dir: cannot read or make the node "
            + "instance token in " + cfg.dataDir() + ": " + e.getMessage());
        return ExitCodes.FAILURE;
      }
    }
    Agent agent = Agent.create(cfg);
    // Still there for the exits no handler sees (System.exit elsewhere, a signal the JDK keeps).
    // Closing the agent also leaves the cluster catalog: its deregistrations are published, then the lease goes.
    Thread hook = new Thread(agent::close, "csi-agent-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      agent.start();
    } catch (AgentException e) {
      spec.commandLine().getErr().println("csi-agent: cannot start: " + e.getMessage());
      return e.configError() ? ExitCodes.USAGE : ExitCodes.FAILURE;
    }
    stopOnSignals(agent);
    try {
      agent.cluster().apply(clusterConfig);
    } catch (NodeIdInUseException e) { // taken between the check and now
      spec.commandLine().getErr().println("csi-agent: cannot start: cluster.node_id: " + e.getMessage());
      agent.close();
      return ExitCodes.FAILURE;
    }
    // Before the "running" line: whoever waits for it finds SIGHUP handled (or the warning that it cannot be).
    reloadOnSighup(agent);
    spec.commandLine().getOut().println("csi-agent running: admin socket " + cfg.adminSocket()
        + agent.metricsAddress().map(a -> ", metrics http://" + a.getAddress().getHostAddress()
            + ":" + a.getPort() + "/metrics").orElse("")
        + ", " + cfg.plugins().size() + " plugin(s)");
    agent.awaitTermination();
    return ExitCodes.OK;
  }
}
