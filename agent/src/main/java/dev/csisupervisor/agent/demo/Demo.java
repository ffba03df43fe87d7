package dev.csisupervisor.agent.demo;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.Agent;
import dev.csisupervisor.agent.AgentException;
import dev.csisupervisor.agent.AgentEvent;
import dev.csisupervisor.agent.TaskStatus;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.config.ProbeSettings;
import dev.csisupervisor.tasks.process.RestartPolicy;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.supervisor.TaskEvent;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * {@code csi-agent demo}: an agent in this JVM with three mock CSI plugins (controller, node,
 * monolith) launched as child processes, ready after staggered delays. It prints each plugin's
 * progress (starting → ready → registered), the registry's events, then kills one plugin with
 * SIGKILL to show it turn unhealthy, get restarted by the agent and come back healthy. Then
 * agents as their own processes: one killed with SIGKILL and its plugins re-attached
 * ({@link AgentCrash}), one killed in the middle of a volume's mount ({@link VolumeCrash}).
 *
 * <p>Everything lives in a fresh temporary directory, removed at the end (unless kept).
 */
public final class Demo {
  private final PrintWriter out;
  private final boolean fast;
  private final DemoConsole console;
  private final Object lock; // the console's: guards output, registryEvents and agentEvents
  private final List<PluginEvent> registryEvents = new ArrayList<>();
  private final List<AgentEvent> agentEvents = new ArrayList<>();

  public Demo(PrintWriter out, boolean fast) {
    this.out = requireNonNull(out, "out");
    this.fast = fast;
    this.console = new DemoConsole(out);
    this.lock = console.lock();
  }

  /** The demo's plugins: id, kind, readiness delay (ms) in normal and fast mode. */
  private record DemoPlugin(String id, PluginKind kind, long readyAfterMs, long fastReadyAfterMs) {}

  private static final List<DemoPlugin> PLUGINS = List.of(
      new DemoPlugin("demo-controller", PluginKind.CONTROLLER, 0, 0),
      new DemoPlugin("demo-node", PluginKind.NODE, 1500, 300),
      new DemoPlugin("demo-monolith", PluginKind.MONOLITH, 3000, 600));

  /** The config the demo runs: everything under {@code dir}. */
  public AgentConfig config(Path dir) {
    ProbeSettings probe = new ProbeSettings(Duration.ofSeconds(20),
        Duration.ofMillis(fast ? 200 : 500), Duration.ofSeconds(2), Duration.ofMillis(50),
        Duration.ofMillis(fast ? 200 : 500));
    RestartPolicy restart = new RestartPolicy(3, Duration.ofMinutes(1),
        Duration.ofMillis(fast ? 200 : 1000), RestartPolicy.Mode.DELAY);
    List<PluginSpec> specs = new ArrayList<>();
    for (DemoPlugin p : PLUGINS) {
      String type = p.kind().dirName();
      specs.add(new PluginSpec(p.id(), p.kind(), ConfigLoader.BUILTIN_MOCK_PLUGIN,
          List.of("--type", type, "--name", "demo." + type + ".csi.dev",
              "--vendor-version", "1.0.0",
              "--ready-after-ms", Long.toString(fast ? p.fastReadyAfterMs() : p.readyAfterMs())),
          Map.of(), null, probe, restart));
    }
    // The mock plugins mount nothing: checking their volumes against the mount table would find every mount lost.
    return new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"),
        new InetSocketAddress("127.0.0.1", 0), false, Duration.ofSeconds(5),
        AgentConfig.DEFAULT_LOG_MAX_BYTES, 1, specs).withVolumeVerifyMounts(false);
  }

  /**
   * Runs the demo.
   *
   * @param follow stay up after the demo until {@code stop} counts down (Ctrl-C)
   * @param keep   keep the temporary directory
   * @return true if every step happened in time
   */
  public boolean run(boolean follow, boolean keep, CountDownLatch stop)
      throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory(Path.of("/tmp"), "csi-agent-demo-");
    AgentConfig cfg = config(dir);
    Agent agent = Agent.create(cfg);
    boolean ok;
    try {
      out.println("csi-agent demo: 3 mock CSI plugins, launched as child processes");
      out.println("  data dir      " + dir);
      out.println("  admin socket  " + cfg.adminSocket());
      out.println();
      agent.addListener(this::onAgentEvent);
      try {
        agent.start();
      } catch (AgentException e) {
        out.println("demo: the agent could not start: " + e.getMessage());
        return false;
      }
      List<Subscription> subs = new ArrayList<>();
      for (PluginType t : PluginType.values()) {
        subs.add(agent.registry().subscribe(t, new Recorder(), Runnable::run));
      }
      ok = script(agent);
      if (ok) {
        ok = new AgentCrash(console, fast).run(dir.resolve("crash"));
      }
      if (ok) {
        ok = new VolumeCrash(console, fast).run(dir.resolve("volumes"));
      }
      if (ok && follow) {
        out.println();
        out.println("The agent stays up. From another terminal, try:");
        out.println("  ./csi-agent plugins --admin-socket " + cfg.adminSocket());
        out.println("  ./csi-agent plugin node demo-node --admin-socket " + cfg.adminSocket());
        out.println("  ./csi-agent events --follow --admin-socket " + cfg.adminSocket());
        out.println("  ./csi-agent status --admin-socket " + cfg.adminSocket());
        out.println("  ./csi-agent volume list --admin-socket " + cfg.adminSocket());
        agent.metricsAddress().ifPresent(a -> out.println("  curl -s http://"
            + a.getAddress().getHostAddress() + ":" + a.getPort() + "/metrics"));
        out.println("Press Ctrl-C to stop.");
        out.flush();
        stop.await();
      }
      subs.forEach(Subscription::close);
    } finally {
      out.println();
      out.println(console.stamp()
          + "stopping the agent (SIGTERM to each plugin, deregistering)...");
      out.flush();
      agent.close();
      if (!keep) {
        FileTrees.deleteQuietly(dir);
      }
    }
    out.println(console.stamp() + (ok ? "demo finished" : "demo FAILED"));
    out.flush();
    return ok;
  }

  private boolean script(Agent agent) throws InterruptedException {
    // Step 1: every plugin starting → ready → registered.
    // The registry's state, and the task events that tell of it (printed as they come).
    if (!console.await("all plugins registered", () -> registeredCount(agent) == 4
        && agentEventCount(TaskEvent.PLUGIN_REGISTERED, null) == PLUGINS.size())) {
      return false;
    }
    console.section("all plugins registered (a monolith registers as controller and node):");
    printRegistry(agent);
    agent.metricsAddress().ifPresent(a -> out.println("  metrics: http://"
        + a.getAddress().getHostAddress() + ":" + a.getPort() + "/metrics"));

    // Step 2: kill one plugin.
    TaskStatus victim = agent.task("demo-node").orElseThrow();
    long pid = victim.pid();
    console.section("killing demo-node (pid " + pid + ") with SIGKILL...");
    int healthyBefore = agentEventCount(TaskEvent.PLUGIN_HEALTHY, "demo-node");
    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    if (!console.await("demo-node unhealthy",
        () -> !healthy(agent, PluginType.CSI_NODE, "demo-node"))) {
      return false;
    }
    if (!console.await("demo-node restarted", () -> agent.task("demo-node")
        .map(t -> t.pid() != 0 && t.pid() != pid && t.restarts() > 0).orElse(false))) {
      return false;
    }
    if (!console.await("demo-node healthy again", () -> healthy(agent, PluginType.CSI_NODE,
        "demo-node") && agentEventCount(TaskEvent.PLUGIN_HEALTHY, "demo-node") > healthyBefore)) {
      return false;
    }
    console.section("demo-node is back: restarted by the agent, healthy again.");
    printRegistry(agent);

    // Step 3: the registry's events, in order.
    synchronized (lock) {
      out.println();
      out.println("Registry events (per-type sequence numbers):");
      List<PluginEvent> events = new ArrayList<>(registryEvents);
      events.sort(Comparator.comparing(PluginEvent::time)
          .thenComparing(e -> e.type().ordinal()).thenComparingLong(PluginEvent::sequence));
      for (PluginEvent e : events) {
        out.println("  " + pad(e.type().label(), 11) + " seq=" + pad(Long.toString(e.sequence()),
            3) + pad(e.kind().name(), 13) + pad(e.plugin().name(), 16)
            + (e.plugin().health().healthy() ? "healthy"
                : "unhealthy: " + e.plugin().health().message()));
      }
      out.flush();
    }
    return true;
  }

  private int agentEventCount(String type, String pluginId) {
    synchronized (lock) {
      return (int) agentEvents.stream().filter(e -> e.type().equals(type)
          && (pluginId == null || e.pluginId().equals(pluginId))).count();
    }
  }

  private static int registeredCount(Agent agent) {
    int n = 0;
    for (PluginType t : PluginType.values()) {
      for (PluginInfo p : agent.registry().listAll(t)) {
        if (p.health().healthy()) {
          n++;
        }
      }
    }
    return n;
  }

  private static boolean healthy(Agent agent, PluginType type, String name) {
    return agent.registry().find(type, name).map(p -> p.health().healthy()).orElse(false);
  }

  private void printRegistry(Agent agent) {
    synchronized (lock) {
      out.println("  " + pad("TYPE", 16) + pad("NAME", 17) + pad("VERSION", 9)
          + pad("HEALTH", 10) + "SOCKET");
      for (PluginType t : PluginType.values()) {
        for (PluginInfo p : agent.registry().list(t)) {
          out.println("  " + pad(t.label(), 16) + pad(p.name(), 17) + pad(p.version(), 9)
              + pad(p.health().healthy() ? "healthy" : "unhealthy", 10) + p.socketPath());
        }
      }
      out.flush();
    }
  }

  // ---- progress lines ----------------------------------------------------------------------

  private void onAgentEvent(AgentEvent e) {
    String what = switch (e.type()) {
      case AgentEvent.PROCESS_STARTED -> "starting     " + e.message();
      case AgentEvent.PROCESS_EXITED -> "exited       " + e.message();
      case AgentEvent.RESTART_SCHEDULED -> "restarting   " + e.message();
      case AgentEvent.START_FAILED -> "start failed " + e.message();
      case AgentEvent.NOT_RESTARTING -> "gave up      " + e.message();
      case AgentEvent.PROCESS_STOPPED -> "stopped      " + e.message();
      case TaskEvent.PLUGIN_HEALTHY -> "ready        probe says ready";
      case TaskEvent.PLUGIN_UNHEALTHY -> "UNHEALTHY    " + e.message();
      case TaskEvent.PLUGIN_REGISTERED -> "registered   " + e.message();
      default -> e.type().toLowerCase() + ": " + e.message();
    };
    synchronized (lock) {
      agentEvents.add(e);
      out.println(console.stamp() + pad(e.pluginId(), 17) + what);
      out.flush();
    }
    console.signal();
  }

  /** Keeps the registry's events for the summary. */
  private final class Recorder implements PluginListener {
    @Override
    public void onEvent(PluginEvent event) {
      synchronized (lock) {
        registryEvents.add(event);
      }
      console.signal();
    }
  }

  private static String pad(String s, int width) {
    return s.length() >= width ? s + " " : s + " ".repeat(width - s.length());
  }
}
