package dev.csisupervisor.benchmarks;

import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.PrestartRequest;
import dev.csisupervisor.supervisor.StopRequest;
import dev.csisupervisor.supervisor.TaskContext;
import dev.csisupervisor.supervisor.TaskEventEmitter;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Benchmark 5: N plugin tasks supervised by one {@link CsiPluginSupervisor} on one 2-thread
 * scheduler, probing every second, registered in a registry over the durable journal store. The N mock plugins run
 * in a child JVM ({@link PluginFarm}, one shared 2-thread epoll loop) so that this JVM holds only
 * the supervisor side.
 *
 * <p>Measured over the window after all N registered and a warm-up: this JVM's CPU (and per thread
 * group), the farm's CPU, Java threads by name, retained heap per supervised plugin (full GC, after
 * minus before the hooks existed, registry entries included), Netty direct memory, the probes the
 * plugins actually received, and the latency of every probe as the supervisor saw it (its
 * {@link dev.csisupervisor.supervisor.ProbeObserver}: from sending the probe until its completion
 * runs on the scheduler, so scheduler queueing is included).
 */
final class SupervisionAtScale {
  private SupervisionAtScale() {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    int n = args.length > 1 ? Integer.parseInt(args[1]) : quick ? 200 : 1000;
    int seconds = args.length > 2 ? Integer.parseInt(args[2]) : quick ? 15 : 60;
    boolean durable = args.length < 4 || args[3].equals("durable");
    if (!durable && !args[3].equals("memory")) {
      throw new IllegalArgumentException("store must be durable or memory, got '" + args[3] + "'");
    }
    int warmupSeconds = quick ? 3 : 10;
    Duration interval = Duration.ofSeconds(1);
    System.out.println(Env.describe());
    System.out.printf("supervision (%s): %d plugins, probe interval %s, window %d s after %d s warm-up, %s store%n",
        quick ? "quick" : "full", n, interval, seconds, warmupSeconds, durable ? "durable" : "in-memory");

    Path root = Files.createTempDirectory(Path.of("/tmp"), "csi-sup-");
    Path csiRoot = root.resolve("csi");
    StateStore store = durable ? JournalStateStore.open(root.resolve("data")) : new InMemoryStateStore();
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).build();
    ScheduledThreadPoolExecutor scheduler = new ScheduledThreadPoolExecutor(2, TimeToRegister.daemonThreads("csi-supervisor"));
    scheduler.setRemoveOnCancelPolicy(true);
    probeLatency = new AtomicLongArray((int) Math.min(20_000_000L, (long) n * (seconds + 5) * 2));
    CsiPluginSupervisor supervisor = CsiPluginSupervisor.builder()
        .csiRoot(csiRoot).registry(registry).scheduler(scheduler).random(new Random(5))
        .probeObserver(SupervisionAtScale::probed)
        .build();
    CountDownLatch allRegistered = new CountDownLatch(n);
    Subscription sub = registry.subscribe(PluginType.CSI_NODE, new PluginListener() {
      @Override
      public void onEvent(PluginEvent event) {
        if (event.kind() == PluginEvent.Kind.REGISTERED) {
          allRegistered.countDown();
        }
      }
    }, Runnable::run);

    List<CsiPluginSupervisorHook> hooks = new ArrayList<>(n);
    Process farm = null;
    try {
      for (int i = 0; i < n; i++) {
        String id = PluginFarm.pluginId(i);
        CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext("alloc-" + id, "plugin"),
            CsiPluginConfig.builder(id, PluginKind.NODE).probeInterval(interval).build(),
            TaskEventEmitter.discarding(), reason -> { });
        hook.prestart(PrestartRequest.withEnv(Map.of()));
        hooks.add(hook);
      }
      farm = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xmx1g", "-cp", System.getProperty("java.class.path"), Main.class.getName(), "plugin-farm",
          csiRoot.toString(), Integer.toString(n), "2")
          .redirectError(ProcessBuilder.Redirect.INHERIT)
          .start();
      BufferedReader farmOut = new BufferedReader(new InputStreamReader(farm.getInputStream(), StandardCharsets.UTF_8));
      PrintWriter farmIn = new PrintWriter(farm.getOutputStream(), true, StandardCharsets.UTF_8);
      String ready = farmOut.readLine();
      if (ready == null || !ready.startsWith("READY")) {
        throw new IllegalStateException("plugin farm did not start: " + ready);
      }

      // Load the client side (classes, the shared epoll loop, gRPC's statics) once, so the baseline below
      // holds everything shared and the difference is what each supervised plugin costs.
      try (CsiClient warmUp = CsiClient.create(hooks.get(0).socketPath())) {
        warmUp.probe();
      }
      // The hooks exist (prestart done) but hold no channel yet: take the baseline here.
      long heapBefore = Restore.usedHeapAfterGc();
      long t0 = System.nanoTime();
      for (CsiPluginSupervisorHook h : hooks) {
        h.poststart(PoststartRequest.of());
      }
      if (!allRegistered.await(120, TimeUnit.SECONDS)) {
        throw new IllegalStateException(allRegistered.getCount() + " plugins not registered after 120 s");
      }
      long registerAll = System.nanoTime() - t0;
      System.out.printf(Locale.ROOT, "all %d plugins registered %.2f s after their poststart%n", n, registerAll / 1e9);
      Thread.sleep(TimeUnit.SECONDS.toMillis(warmupSeconds));

      // ---- measurement window ----
      com.sun.management.OperatingSystemMXBean os =
          (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
      ThreadMXBean threads = ManagementFactory.getThreadMXBean();
      Map<Long, Long> cpuBefore = threadCpu(threads);
      long[] farmBefore = farmStats(farmOut, farmIn);
      long procCpu0 = os.getProcessCpuTime();
      long wall0 = System.nanoTime();

      recording = true;
      Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
      recording = false;
      long wall = System.nanoTime() - wall0;
      long procCpu = os.getProcessCpuTime() - procCpu0;
      long[] farmAfter = farmStats(farmOut, farmIn);
      Map<Long, Long> cpuAfter = threadCpu(threads);

      // ---- after the window ----
      long heapAfter = Restore.usedHeapAfterGc();
      int notRegistered = 0;
      for (CsiPluginSupervisorHook h : hooks) {
        if (h.phase() != CsiPluginSupervisorHook.Phase.REGISTERED || !h.healthy()) {
          notRegistered++;
        }
      }
      Map<String, Integer> threadGroups = new TreeMap<>();
      Map<String, Long> groupCpu = new TreeMap<>();
      for (ThreadInfo ti : threads.getThreadInfo(threads.getAllThreadIds())) {
        if (ti == null) {
          continue;
        }
        String group = ti.getThreadName().replaceAll("([-#]\\d+)+$", "").replaceAll(" \\(pid \\d+\\)$", "");
        threadGroups.merge(group, 1, Integer::sum);
        long cpu = cpuAfter.getOrDefault(ti.getThreadId(), 0L) - cpuBefore.getOrDefault(ti.getThreadId(), 0L);
        groupCpu.merge(group, Math.max(0, cpu), Long::sum);
      }
      int total = threadGroups.values().stream().mapToInt(Integer::intValue).sum();
      int supervisorThreads = 0;
      StringBuilder groups = new StringBuilder();
      for (Map.Entry<String, Integer> e : threadGroups.entrySet()) {
        boolean jvmOrHarness = JVM_THREADS.contains(e.getKey()) || e.getKey().startsWith("bench-");
        if (!jvmOrHarness) {
          supervisorThreads += e.getValue();
        }
        groups.append(String.format(Locale.ROOT, "%s%s x%d (%.1f%% cpu); ", jvmOrHarness ? "" : "*", e.getKey(),
            e.getValue(), 100.0 * groupCpu.get(e.getKey()) / wall));
      }
      long directBytes = io.grpc.netty.shaded.io.netty.util.internal.PlatformDependent.usedDirectMemory();
      long[] latencies = new long[Math.min(probeCount.get(), probeLatency.length())];
      for (int i = 0; i < latencies.length; i++) {
        latencies[i] = probeLatency.get(i);
      }
      Stats probe = new Stats(latencies);
      double expectedProbes = (double) n * wall / interval.toNanos();
      long probes = farmAfter[0] - farmBefore[0];
      System.out.println("threads (* = supervisor stack): " + groups);
      System.out.printf(Locale.ROOT,
          "RESULT supervision | %d plugins, %s store, interval %s, window %.0f s | supervisor JVM cpu %.1f%% of one core"
              + " (plugin farm %.1f%%) | threads: %d supervisor stack, %d in JVM | heap %.1f KiB per plugin"
              + " (%.1f MiB for %d) | netty direct %.1f MiB | probes received %d (%.1f%% of %d expected)"
              + " | probe latency seen by the supervisor %s, %d failed | registering all took %.2f s"
              + " | %d not registered+healthy | load %s%n",
          n, durable ? "durable" : "memory", interval, wall / 1e9, 100.0 * procCpu / wall, 100.0 * (farmAfter[1] - farmBefore[1]) / wall,
          supervisorThreads, total, (heapAfter - heapBefore) / 1024.0 / n, (heapAfter - heapBefore) / 1048576.0, n,
          directBytes / 1048576.0, probes, 100.0 * probes / expectedProbes, Math.round(expectedProbes),
          probe.describeMillis(), probeErrors.get(), registerAll / 1e9, notRegistered, Env.loadAverage());

      long s0 = System.nanoTime();
      for (CsiPluginSupervisorHook h : hooks) {
        h.stop(StopRequest.because("benchmark over"));
      }
      System.out.printf(Locale.ROOT, "stopped %d hooks in %.2f s; registry now holds %d%n", n,
          (System.nanoTime() - s0) / 1e9, registry.listAll(PluginType.CSI_NODE).size());
      farmIn.println("EXIT");
    } finally {
      if (farm != null) {
        farm.destroyForcibly();
        farm.waitFor(10, TimeUnit.SECONDS);
      }
      sub.close();
      supervisor.close();
      registry.close();
      store.close();
      scheduler.shutdownNow();
      Fixtures.deleteRecursively(root);
    }
  }

  // Written by the supervisor's scheduler threads through the probe observer while recording.
  private static volatile boolean recording;
  private static AtomicLongArray probeLatency;
  private static final AtomicInteger probeCount = new AtomicInteger();
  private static final AtomicInteger probeErrors = new AtomicInteger();

  private static void probed(String pluginId, Duration latency, boolean ready, String error) {
    if (!recording) {
      return;
    }
    if (!error.isEmpty() || !ready) {
      probeErrors.incrementAndGet();
    }
    int i = probeCount.getAndIncrement();
    if (i < probeLatency.length()) {
      probeLatency.set(i, latency.toNanos());
    }
  }

  private static final Set<String> JVM_THREADS = Set.of("main", "Reference Handler", "Finalizer",
      "Signal Dispatcher", "Common-Cleaner", "Notification Thread", "Attach Listener",
      // The harness's own: it started the plugin farm.
      "process reaper");

  private static long[] farmStats(BufferedReader out, PrintWriter in) throws java.io.IOException {
    in.println("STATS");
    String line = out.readLine();
    if (line == null || !line.startsWith("STATS ")) {
      throw new IllegalStateException("plugin farm answered " + line);
    }
    String[] f = line.split(" ");
    return new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])};
  }

  private static Map<Long, Long> threadCpu(ThreadMXBean threads) {
    Map<Long, Long> m = new HashMap<>();
    for (long id : threads.getAllThreadIds()) {
      long cpu = threads.getThreadCpuTime(id);
      if (cpu >= 0) {
        m.put(id, cpu);
      }
    }
    return m;
  }
}
