package dev.csisupervisor.tests;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.PrestartRequest;
import dev.csisupervisor.supervisor.StopRequest;
import dev.csisupervisor.supervisor.TaskContext;
import dev.csisupervisor.supervisor.TaskEvent;
import dev.csisupervisor.testing.ShortTempDir;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Real supervision for fault tests: one registry (in memory), one supervisor on a 2-thread scheduler, real mock
 * plugins serving on a shared 2-thread epoll event loop, and a recorder of every registry event per key plus a
 * {@link RegistryView} per type that checks the event contract as events arrive. Thread-safe: many plugins (and
 * many fault schedules) may use one harness at once, each under its own plugin ids and allocation.
 */
final class FaultHarness implements AutoCloseable {
  /** Probe settings of every supervised plugin: short, so faults show within a few hundred milliseconds. */
  static final Duration PROBE_INTERVAL = Duration.ofMillis(50);
  static final Duration PROBE_TIMEOUT = Duration.ofMillis(250);
  static final Duration HEALTH_TIMEOUT = Duration.ofMillis(1500);
  /**
   * How long {@link #stop} may take before a test calls it hung. stop() does its own deregistration and nothing slow:
   * it never waits for a call in flight nor for a timer (PluginFaultsTest proves that with a probe whose deadline is
   * an hour away). This bound only catches a stop() that hangs; it is no speed claim, so a slow or busy machine
   * cannot make it fail.
   */
  static final Duration STOP_HANG_GUARD = Duration.ofSeconds(30);

  /**
   * grpc-java logs every stream a killed or hung plugin leaves behind (java.util.logging, WARNING): expected here,
   * thousands of times. Held in a field: java.util.logging keeps loggers only weakly.
   */
  private static final java.util.logging.Logger GRPC_LOG = java.util.logging.Logger.getLogger("io.grpc");

  static {
    GRPC_LOG.setLevel(java.util.logging.Level.SEVERE);
  }

  final ShortTempDir dir;
  final Path csiRoot;
  final ScheduledExecutorService scheduler;
  final PluginRegistry registry;
  final CsiPluginSupervisor supervisor;
  final EventLoopGroup pluginLoop;
  final List<String> problems = new CopyOnWriteArrayList<>();
  private final Map<PluginKey, List<PluginEvent>> eventsByKey = new ConcurrentHashMap<>();
  private final List<RegistryView> views = new ArrayList<>();
  private final AtomicInteger schedulerThreads = new AtomicInteger();

  FaultHarness(long seed) {
    dir = new ShortTempDir("flt");
    csiRoot = dir.path();
    scheduler = Executors.newScheduledThreadPool(2, r -> {
      Thread t = new Thread(r, "supervisor-" + schedulerThreads.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
    for (PluginType t : PluginType.values()) {
      registry.subscribe(t, e -> eventsByKey.computeIfAbsent(e.plugin().key(), k -> new CopyOnWriteArrayList<>()).add(e),
          Runnable::run);
      views.add(new RegistryView(t, problems::add).subscribe(registry, Runnable::run));
    }
    supervisor = CsiPluginSupervisor.builder().csiRoot(csiRoot).registry(registry).scheduler(scheduler)
        .random(new Random(seed)).build();
    pluginLoop = new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory("mock-plugins", true),
        EpollIoHandler.newFactory());
  }

  /** The hook of one plugin task, with its task events and restart requests recorded. */
  static final class Supervised {
    final CsiPluginSupervisorHook hook;
    final List<TaskEvent> taskEvents = new CopyOnWriteArrayList<>();
    final List<String> restarts = new CopyOnWriteArrayList<>();

    private Supervised(FaultHarness h, TaskContext task, CsiPluginConfig config) {
      this.hook = h.supervisor.hook(task, config, taskEvents::add, restarts::add);
    }

    Path socket() {
      return hook.socketPath();
    }

    List<String> taskEventTypes() {
      return taskEvents.stream().map(TaskEvent::type).toList();
    }

    long count(String type) {
      return taskEvents.stream().filter(e -> e.type().equals(type)).count();
    }

    @Override
    public String toString() {
      return hook.config().pluginId() + "@" + hook.task().allocId() + " " + hook.phase() + " healthy=" + hook.healthy()
          + " events=" + taskEventTypes() + " restarts=" + restarts.size();
    }
  }

  static CsiPluginConfig.Builder config(String pluginId, PluginKind kind) {
    return CsiPluginConfig.builder(pluginId, kind)
        .probeInterval(PROBE_INTERVAL)
        .probeTimeout(PROBE_TIMEOUT)
        .healthTimeout(HEALTH_TIMEOUT)
        .initialBackoff(Duration.ofMillis(20))
        .maxBackoff(Duration.ofMillis(150));
  }

  /** A hook for {@code config}, prestarted (its socket directory exists); poststart is the caller's. */
  Supervised supervise(String allocId, CsiPluginConfig config) throws IOException {
    Supervised s = new Supervised(this, new TaskContext(allocId, "plugin"), config);
    s.hook.prestart(PrestartRequest.withEnv(Map.of()));
    return s;
  }

  Supervised superviseAndStart(String allocId, CsiPluginConfig config) throws IOException {
    Supervised s = supervise(allocId, config);
    s.hook.poststart(PoststartRequest.of());
    return s;
  }

  /** A mock plugin builder for {@code socket}, serving what a plugin of {@code kind} serves, on the shared loop. */
  MockCsiPlugin.Builder plugin(Path socket, PluginKind kind, String version) {
    return MockCsiPlugin.builder().socket(socket).mode(mode(kind)).eventLoopGroup(pluginLoop)
        .name(socket.getParent().getFileName() + ".csi.dev").vendorVersion(version);
  }

  static MockMode mode(PluginKind kind) {
    return switch (kind) {
      case CONTROLLER -> MockMode.CONTROLLER;
      case NODE -> MockMode.NODE;
      case MONOLITH -> MockMode.MONOLITH;
    };
  }

  static Set<PluginType> types(PluginKind kind) {
    return switch (kind) {
      case CONTROLLER -> EnumSet.of(PluginType.CSI_CONTROLLER);
      case NODE -> EnumSet.of(PluginType.CSI_NODE);
      case MONOLITH -> EnumSet.allOf(PluginType.class);
    };
  }

  /** Every registration of the hook's plugin, one per type it holds. */
  List<PluginInfo> registrations(Supervised s) {
    List<PluginInfo> found = new ArrayList<>();
    for (PluginType t : types(s.hook.config().type())) {
      registry.pluginForAlloc(t, s.hook.config().pluginId(), s.hook.task().allocId()).ifPresent(found::add);
    }
    return found;
  }

  /** Registered for every type of its kind, healthy, with this version. */
  boolean registeredHealthy(Supervised s, String version) {
    List<PluginInfo> regs = registrations(s);
    return regs.size() == types(s.hook.config().type()).size()
        && regs.stream().allMatch(p -> p.health().healthy() && p.version().equals(version)
            && p.fingerprint().vendorVersion().equals(version))
        && s.hook.healthy() && s.hook.phase() == CsiPluginSupervisorHook.Phase.REGISTERED;
  }

  /** Not registered at all, or registered as unhealthy for every type; and the hook says unhealthy. */
  boolean notHealthy(Supervised s) {
    return registrations(s).stream().noneMatch(p -> p.health().healthy()) && !s.hook.healthy();
  }

  /** The registry events of one key, in sequence order. */
  List<PluginEvent> events(PluginKey key) {
    return List.copyOf(eventsByKey.getOrDefault(key, List.of()));
  }

  List<PluginEvent> events(Supervised s, PluginType type) {
    return events(new PluginKey(type, s.hook.config().pluginId(), s.hook.task().allocId()));
  }

  /**
   * Stops the hook and returns how long stop() took; afterwards nothing of it is registered.
   */
  long stop(Supervised s) {
    long t0 = System.nanoTime();
    s.hook.stop(StopRequest.because("test done"));
    return (System.nanoTime() - t0) / 1_000_000;
  }

  /**
   * The per-key history of a stopped hook: nothing, or REGISTERED, then UPDATED only, then one DEREGISTERED as the
   * last event; sequences increase. Returns the violations.
   */
  List<String> checkStoppedHistory(Supervised s) {
    List<String> out = new ArrayList<>();
    for (PluginType t : types(s.hook.config().type())) {
      // stop() returns once the deregistration is durable; its event reaches subscribers right
      // after, possibly on the thread that committed the group (not this one): give it a moment.
      try {
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5))
            .pollInterval(java.time.Duration.ofMillis(1)).until(() -> {
              List<PluginEvent> seen = events(s, t);
              return seen.isEmpty()
                  || seen.get(seen.size() - 1).kind() == PluginEvent.Kind.DEREGISTERED;
            });
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        // reported below as a violation
      }
      List<PluginEvent> ev = events(s, t);
      String where = t.id() + "/" + s.hook.config().pluginId() + "@" + s.hook.task().allocId() + " "
          + ev.stream().map(e -> e.kind() + "#" + e.sequence()).toList();
      if (ev.isEmpty()) {
        continue;
      }
      if (ev.get(0).kind() != PluginEvent.Kind.REGISTERED) {
        out.add(where + ": first event is not REGISTERED");
      }
      if (ev.get(ev.size() - 1).kind() != PluginEvent.Kind.DEREGISTERED) {
        out.add(where + ": stopped, but the last event is not DEREGISTERED");
      }
      for (int i = 1; i < ev.size(); i++) {
        if (ev.get(i).sequence() <= ev.get(i - 1).sequence()) {
          out.add(where + ": sequences out of order");
        }
        if (i < ev.size() - 1 && ev.get(i).kind() != PluginEvent.Kind.UPDATED) {
          out.add(where + ": " + ev.get(i).kind() + " in the middle of the history");
        }
      }
    }
    return out;
  }

  /**
   * Task events: once the plugin was registered, health events strictly alternate, starting with unhealthy (it was
   * registered healthy), and a restart is requested only of a plugin that has been unhealthy for at least the health
   * timeout (liveness after registration; never for a healthy or briefly unhealthy one). Returns the violations.
   */
  static List<String> checkHealthAlternation(Supervised s) {
    List<TaskEvent> events = List.copyOf(s.taskEvents);
    List<String> types = s.taskEventTypes();
    int first = types.indexOf(TaskEvent.PLUGIN_REGISTERED);
    if (first < 0) {
      return List.of();
    }
    boolean healthy = true;
    java.time.Instant unhealthySince = null;
    for (TaskEvent e : events.subList(first + 1, events.size())) {
      String t = e.type();
      if (t.equals(TaskEvent.PLUGIN_UNHEALTHY) || t.equals(TaskEvent.PLUGIN_HEALTHY)) {
        boolean now = t.equals(TaskEvent.PLUGIN_HEALTHY);
        if (now == healthy) {
          return List.of(s.hook.config().pluginId() + ": health task events do not alternate after registration: " + types);
        }
        healthy = now;
        unhealthySince = now ? null : e.time();
      }
      if (t.equals(TaskEvent.RESTART_REQUESTED)) {
        // Event times are wall-clock, timers are not: allow them 100 ms of disagreement.
        if (healthy || Duration.between(unhealthySince, e.time()).compareTo(HEALTH_TIMEOUT.minusMillis(100)) < 0) {
          return List.of(s.hook.config().pluginId() + ": restart requested after registration of a plugin not"
              + " unhealthy for " + HEALTH_TIMEOUT + ": " + types);
        }
        unhealthySince = e.time(); // the restarted process gets a fresh deadline
      }
    }
    return List.of();
  }

  /** Every view's contract violations so far, and whether each view equals the registry right now. */
  List<String> viewProblems() {
    List<String> out = new ArrayList<>(problems);
    for (RegistryView v : views) {
      Map<PluginKey, PluginInfo> actual = new java.util.HashMap<>();
      registry.listAll(v.type()).forEach(p -> actual.put(p.key(), p));
      if (!actual.equals(v.content())) {
        out.add(v.type() + " view differs from the registry: view " + v.content().keySet() + ", registry "
            + actual.keySet());
      }
    }
    return out;
  }

  @Override
  public void close() {
    supervisor.close();
    registry.close();
    scheduler.shutdownNow();
    try {
      scheduler.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    pluginLoop.shutdownGracefully(0, 0, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    dir.close();
  }
}
