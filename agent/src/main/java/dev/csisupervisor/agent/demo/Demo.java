package dev.csisupervisor.agent.demo;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.DeleteVolumeRequest;
import dev.csisupervisor.admin.v1.MountVolumeRequest;
import dev.csisupervisor.admin.v1.UnmountVolumeRequest;
import dev.csisupervisor.admin.v1.VolumeAccess;
import dev.csisupervisor.admin.v1.VolumeAlloc;
import dev.csisupervisor.admin.v1.VolumeInfo;
import dev.csisupervisor.cli.AdminClient;
import dev.csisupervisor.agent.Agent;
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
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * {@code csi-agent demo}: an agent in this JVM with three mock CSI plugins (controller, node,
 * monolith) launched as child processes, ready after staggered delays. It prints each plugin's
 * progress (starting → ready → registered), the registry's events, then kills one plugin with
 * SIGKILL to show it turn unhealthy, get restarted by the agent and come back healthy.
 *
 * <p>Everything lives in a fresh temporary directory, removed at the end (unless kept).
 */
public final class Demo {
  /** How long each wait may take before the demo reports what did not happen. */
  private static final Duration STEP_TIMEOUT = Duration.ofSeconds(60);

  private final PrintWriter out;
  private final boolean fast;
  private final long t0 = System.nanoTime();
  private final List<PluginEvent> registryEvents = new ArrayList<>();
  private final List<AgentEvent> agentEvents = new ArrayList<>(); // guarded by lock
  private final Object lock = new Object(); // guards output and registryEvents
  private final Object signal = new Object(); // wakes await() on every event
  private long version; // guarded by signal

  public Demo(PrintWriter out, boolean fast) {
    this.out = requireNonNull(out, "out");
    this.fast = fast;
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
    return new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"),
        new InetSocketAddress("127.0.0.1", 0), false, Duration.ofSeconds(5),
        AgentConfig.DEFAULT_LOG_MAX_BYTES, 1, specs);
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
      } catch (Agent.AgentException e) {
        out.println("demo: the agent could not start: " + e.getMessage());
        return false;
      }
      List<Subscription> subs = new ArrayList<>();
      for (PluginType t : PluginType.values()) {
        subs.add(agent.registry().subscribe(t, new Recorder(), Runnable::run));
      }
      ok = script(agent);
      if (ok) {
        ok = agentCrash(dir.resolve("crash"));
      }
      if (ok) {
        ok = volumeCrash(dir.resolve("volumes"));
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
      out.println(stamp() + "stopping the agent (SIGTERM to each plugin, deregistering)...");
      out.flush();
      agent.close();
      if (!keep) {
        FileTrees.deleteQuietly(dir);
      }
    }
    out.println(stamp() + (ok ? "demo finished" : "demo FAILED"));
    out.flush();
    return ok;
  }

  private boolean script(Agent agent) throws InterruptedException {
    // Step 1: every plugin starting → ready → registered.
    // The registry's state, and the task events that tell of it (printed as they come).
    if (!await("all plugins registered", () -> registeredCount(agent) == 4
        && agentEventCount(TaskEvent.PLUGIN_REGISTERED, null) == PLUGINS.size())) {
      return false;
    }
    section("all plugins registered (a monolith registers as controller and node):");
    printRegistry(agent);
    agent.metricsAddress().ifPresent(a -> out.println("  metrics: http://"
        + a.getAddress().getHostAddress() + ":" + a.getPort() + "/metrics"));

    // Step 2: kill one plugin.
    TaskStatus victim = agent.task("demo-node").orElseThrow();
    long pid = victim.pid();
    section("killing demo-node (pid " + pid + ") with SIGKILL...");
    int healthyBefore = agentEventCount(TaskEvent.PLUGIN_HEALTHY, "demo-node");
    ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
    if (!await("demo-node unhealthy", () -> !healthy(agent, PluginType.CSI_NODE, "demo-node"))) {
      return false;
    }
    if (!await("demo-node restarted", () -> agent.task("demo-node")
        .map(t -> t.pid() != 0 && t.pid() != pid && t.restarts() > 0).orElse(false))) {
      return false;
    }
    if (!await("demo-node healthy again", () -> healthy(agent, PluginType.CSI_NODE,
        "demo-node") && agentEventCount(TaskEvent.PLUGIN_HEALTHY, "demo-node") > healthyBefore)) {
      return false;
    }
    section("demo-node is back: restarted by the agent, healthy again.");
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

  // ---- step 4: the agent itself is killed ---------------------------------------------------

  /**
   * A second agent, as its own process (the way it runs in production), with two plugins: it is
   * killed with SIGKILL, its plugins keep running, and a new agent restores the registry,
   * re-attaches to the same processes and confirms their registrations: nothing launched twice,
   * nothing registered twice. Then a SIGTERM stops it cleanly (exit 0).
   */
  private boolean agentCrash(Path dir) throws InterruptedException {
    section("the agent itself crashes: a csi-agent process with 2 plugins, killed with SIGKILL");
    Path config = dir.resolve("agent.yaml");
    Path socket = dir.resolve("data/agent.sock");
    List<Process> agents = new ArrayList<>();
    try {
      Files.createDirectories(dir);
      Files.writeString(config, "data_dir: data\nmetrics_address: off\nshutdown_grace: 2s\n"
          + "defaults: {probe_interval: " + (fast ? "200ms" : "500ms") + "}\nplugins:\n"
          + "  - {id: crash-node, type: node, command: " + ConfigLoader.BUILTIN_MOCK_PLUGIN
          + ", args: [--type, node, --name, \"${CSI_PLUGIN_ID}.csi.dev\"]}\n"
          + "  - {id: crash-controller, type: controller, command: "
          + ConfigLoader.BUILTIN_MOCK_PLUGIN
          + ", args: [--type, controller, --name, \"${CSI_PLUGIN_ID}.csi.dev\"]}\n");
      Process first = startAgent(dir, config, "agent1");
      agents.add(first);
      if (!await("the first agent's plugins registered", () -> registered(socket, false) == 2)) {
        return false;
      }
      Map<String, Long> pids = pluginPids(socket);
      out.println("  agent pid " + first.pid() + ", plugin pids " + pids);
      first.destroyForcibly();
      first.waitFor(10, TimeUnit.SECONDS);
      boolean alive = pids.values().stream().allMatch(p -> ProcessHandle.of(p)
          .map(ProcessHandle::isAlive).orElse(false));
      out.println(stamp() + "killed the agent (exit " + first.exitValue() + "); its plugins "
          + (alive ? "are still running" : "DIED with it"));
      if (!alive) {
        return false;
      }

      section("starting a new agent on the same data dir...");
      Process second = startAgent(dir, config, "agent2");
      agents.add(second);
      if (!await("the new agent confirmed the registrations", () -> registered(socket, true) == 2
          && pluginPids(socket).equals(pids))) {
        return false;
      }
      int instances = registered(socket, false);
      out.println("  restored registrations confirmed, processes re-attached (same pids "
          + pluginPids(socket) + "), " + instances + " registrations: "
          + (instances == 2 ? "no duplicate" : "DUPLICATES"));
      second.destroy(); // SIGTERM
      if (!second.waitFor(30, TimeUnit.SECONDS)) {
        return false;
      }
      out.println(stamp() + "SIGTERM: the new agent stopped its plugins and exited "
          + second.exitValue());
      out.flush();
      return instances == 2 && second.exitValue() == 0;
    } catch (IOException e) {
      out.println("demo: " + e.getMessage());
      return false;
    } finally {
      agents.forEach(Process::destroyForcibly);
    }
  }

  // ---- step 5: a task's volume, and the agent killed in the middle of a mount -------------

  /**
   * A csi-agent process with one monolith plugin (the mock plugin as a complete in-memory driver,
   * its state in a file as a real driver keeps a state dir, NodePublishVolume answered after 1.5 s
   * so that the kill lands inside it): a volume is created and mounted for task web-1, which
   * writes a file into it; a second volume's mount for web-2 is under way when the agent is killed
   * with SIGKILL; a new agent rolls that mount back and keeps web-1's; then everything is
   * unmounted and deleted, and nothing is left.
   */
  private boolean volumeCrash(Path dir) throws InterruptedException {
    section("a task's volume: the agent killed with SIGKILL in the middle of a mount");
    Path config = dir.resolve("agent.yaml");
    Path socket = dir.resolve("data/agent.sock");
    List<Process> agents = new ArrayList<>();
    List<String> created = new ArrayList<>();
    try {
      Files.createDirectories(dir);
      Files.writeString(config, "data_dir: data\nmetrics_address: off\nshutdown_grace: 2s\n"
          + "defaults: {probe_interval: " + (fast ? "200ms" : "500ms") + "}\nplugins:\n"
          + "  - {id: disk, type: monolith, command: " + ConfigLoader.BUILTIN_MOCK_PLUGIN
          + ", args: [--type, monolith, --all-capabilities, --state-file, \"${CSI_PLUGIN_DIR}/../disk-state\","
          + " --delay, NodePublishVolume=1500ms]}\n");
      Process first = startAgent(dir, config, "agent1");
      agents.add(first);
      if (!await("the plugin registered", () -> registered(socket, false) == 2)) {
        return false;
      }
      try (AdminClient c = AdminClient.connect(socket)) {
        String v1 = c.createVolume(CreateVolumeRequest.newBuilder().setPlugin("disk").setName("web-data")
            .setRequiredBytes(64 << 20).setAccess(RWO).build()).getVolumeId();
        String v2 = c.createVolume(CreateVolumeRequest.newBuilder().setPlugin("disk").setName("cache")
            .setRequiredBytes(16 << 20).setAccess(RWO).build()).getVolumeId();
        created.add(v1);
        created.add(v2);
        out.println(stamp() + "created volumes " + v1 + " (64 MiB) and " + v2 + " (16 MiB) through the controller");
        String target = c.mountVolume(mount(v1, "web-1")).getTargetPath();
        Files.writeString(Path.of(target).resolve("hello.txt"), "written by task web-1\n");
        out.println(stamp() + "mounted " + v1 + " for task web-1 (controller publish, stage, publish) at");
        out.println("    " + target + "; the task wrote hello.txt there");

        Thread mounting = new Thread(() -> {
          try (AdminClient c2 = AdminClient.connect(socket)) {
            c2.mountVolume(mount(v2, "web-2"));
          } catch (AdminClient.AdminException e) {
            // expected: the agent dies during this call
          }
        }, "demo-mount");
        mounting.setDaemon(true);
        mounting.start();
        if (!await("the mount of " + v2 + " under way", () -> phaseOf(socket, v2, "web-2").equals("PUBLISHING"))) {
          return false;
        }
        first.destroyForcibly();
        first.waitFor(10, TimeUnit.SECONDS);
        out.println(stamp() + "killed the agent (SIGKILL) while NodePublishVolume of " + v2 + " for web-2 was in flight");
      }

      section("starting a new agent on the same data dir...");
      Process second = startAgent(dir, config, "agent2");
      agents.add(second);
      if (!await("the interrupted mount rolled back", () -> registered(socket, true) == 2
          && volumesOf(socket).size() == 1 && !volumesOf(socket).get(0).getPending())) {
        return false;
      }
      String recovery = Files.readAllLines(dir.resolve("agent2.log")).stream()
          .filter(l -> l.contains("volume recovery:")).findFirst().orElse("(no recovery line)");
      out.println("  the new agent's log: " + recovery.substring(recovery.indexOf("volume recovery:")));
      List<VolumeInfo> left = volumesOf(socket);
      VolumeInfo kept = left.get(0);
      String keptTarget = kept.getUsages(0).getAllocs(0).getTargetPath();
      boolean fileThere = Files.readString(Path.of(keptTarget).resolve("hello.txt")).contains("web-1");
      boolean web2Gone = !Files.exists(Path.of(keptTarget.replace("/web-1/", "/web-2/")).getParent().getParent());
      out.println("  volumes now: " + kept.getVolumeId() + " " + kept.getUsages(0).getAllocs(0).getPhase() + " for "
          + kept.getUsages(0).getAllocs(0).getAllocId() + " (hello.txt " + (fileThere ? "still there" : "LOST")
          + "); web-2's mount " + (web2Gone ? "rolled back, its directory gone" : "LEFT BEHIND"));

      try (AdminClient c = AdminClient.connect(socket)) {
        boolean done = c.unmountVolume(UnmountVolumeRequest.newBuilder().setPlugin("disk")
            .setVolumeId(kept.getVolumeId()).setAllocId("web-1").build()).getDone();
        for (String id : created) {
          c.deleteVolume(DeleteVolumeRequest.newBuilder().setPlugin("disk").setVolumeId(id).build());
        }
        boolean clean = done && c.listVolumes().getVolumesCount() == 0;
        out.println(stamp() + "unmounted " + kept.getVolumeId() + " from web-1 (unpublish, unstage, controller"
            + " unpublish) and deleted both volumes: " + (clean ? "no volume left on the node" : "SOMETHING LEFT"));
        second.destroy(); // SIGTERM
        second.waitFor(30, TimeUnit.SECONDS);
        out.flush();
        return fileThere && web2Gone && clean && second.exitValue() == 0;
      }
    } catch (IOException | AdminClient.AdminException e) {
      out.println("demo: " + e.getMessage());
      return false;
    } finally {
      agents.forEach(Process::destroyForcibly);
    }
  }

  private static final VolumeAccess RWO = VolumeAccess.newBuilder().setAccessMode("single-node-writer").build();

  private static MountVolumeRequest mount(String volume, String alloc) {
    return MountVolumeRequest.newBuilder().setPlugin("disk").setVolumeId(volume).setAllocId(alloc)
        .setAccess(RWO).build();
  }

  /** The agent's volumes, or none if it does not answer (yet). */
  private static List<VolumeInfo> volumesOf(Path socket) {
    try (AdminClient c = AdminClient.connect(socket)) {
      return c.listVolumes().getVolumesList();
    } catch (AdminClient.AdminException e) {
      return List.of();
    }
  }

  /** The phase of the volume's publication for the alloc, or "" if there is none. */
  private static String phaseOf(Path socket, String volume, String alloc) {
    return volumesOf(socket).stream().filter(v -> v.getVolumeId().equals(volume))
        .flatMap(v -> v.getUsagesList().stream()).flatMap(u -> u.getAllocsList().stream())
        .filter(a -> a.getAllocId().equals(alloc)).map(VolumeAlloc::getPhase).findFirst().orElse("");
  }

  private static Process startAgent(Path dir, Path config, String name) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", absoluteClassPath(), "dev.csisupervisor.agent.commands.Main",
        "run", "--config", config.toString()));
    return new ProcessBuilder(cmd)
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
        .redirectOutput(dir.resolve(name + ".out").toFile())
        .redirectError(dir.resolve(name + ".log").toFile())
        .start();
  }

  private static String absoluteClassPath() {
    List<String> parts = new ArrayList<>();
    for (String p : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      if (!p.isEmpty()) {
        parts.add(Path.of(p).toAbsolutePath().toString());
      }
    }
    return String.join(java.io.File.pathSeparator, parts);
  }

  /** Healthy registrations at the agent's admin socket (all instances); confirmed ones only. */
  private static int registered(Path socket, boolean confirmedOnly) {
    try (var c = AdminClient.connect(socket)) {
      var it = c.watch(dev.csisupervisor.admin.v1.PluginType.PLUGIN_TYPE_UNSPECIFIED);
      int n = 0;
      for (int i = 0; i < 2; i++) {
        for (var p : it.next().getSnapshot().getPluginsList()) {
          if (p.getHealth().getHealthy() && !(confirmedOnly && p.getRestored())) {
            n++;
          }
        }
      }
      return n;
    } catch (Exception e) {
      return -1; // not up (yet)
    }
  }

  private static Map<String, Long> pluginPids(Path socket) {
    try (var c = AdminClient.connect(socket)) {
      Map<String, Long> pids = new java.util.TreeMap<>();
      for (var t : c.status().getTasksList()) {
        pids.put(t.getId(), t.getPid());
      }
      return pids;
    } catch (Exception e) {
      return Map.of();
    }
  }

  private void section(String line) {
    synchronized (lock) {
      out.println();
      out.println(stamp() + line);
      out.flush();
    }
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

  /**
   * Waits for a condition that real processes make true; re-checked whenever an agent or registry
   * event arrives (and at least every 100 ms).
   */
  private boolean await(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
    while (true) {
      long seen;
      synchronized (signal) {
        seen = version;
      }
      // Evaluated outside every demo lock: it calls into the agent, whose threads call us.
      if (condition.getAsBoolean()) {
        return true;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        synchronized (lock) {
          out.println(stamp() + "demo: timed out after " + STEP_TIMEOUT.toSeconds()
              + "s waiting for: " + what);
        }
        return false;
      }
      synchronized (signal) {
        if (version == seen) {
          signal.wait(Math.max(1, Math.min(100, TimeUnit.NANOSECONDS.toMillis(left))));
        }
      }
    }
  }

  private void signal() {
    synchronized (signal) {
      version++;
      signal.notifyAll();
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
      out.println(stamp() + pad(e.pluginId(), 17) + what);
      out.flush();
    }
    signal();
  }

  /** Keeps the registry's events for the summary. */
  private final class Recorder implements PluginListener {
    @Override
    public void onEvent(PluginEvent event) {
      synchronized (lock) {
        registryEvents.add(event);
      }
      signal();
    }
  }

  private String stamp() {
    double s = (System.nanoTime() - t0) / 1e9;
    return String.format("[%5.1fs] ", s);
  }

  private static String pad(String s, int width) {
    return s.length() >= width ? s + " " : s + " ".repeat(width - s.length());
  }
}
