package dev.csisupervisor.benchmarks;

import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.registry.PluginEvent;
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
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Benchmark 9a: an external plugin (the mock plugin in its own JVM, {@code socket:} in the config) killed with
 * SIGKILL: the time from the kill to the registry's UPDATED unhealthy event, and from a restarted process
 * serving to UPDATED healthy, with the steady probe an hour away (only the lost connection, and the socket
 * watch, can explain either). Reference, same run: the time from the kill to the JVM seeing the child exit
 * ({@code Process.onExit}).
 */
final class PluginDeath {
  private PluginDeath() {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : quick ? 20 : 50;
    System.out.println(Env.describe());
    Path root = Files.createTempDirectory(Path.of("/tmp"), "bdeath");
    Path socket = root.resolve("ext/csi.sock");
    Files.createDirectories(socket.getParent());
    ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2);
    PluginRegistry registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
    BlockingQueue<long[]> health = new LinkedBlockingQueue<>(); // {nanoTime, healthy ? 1 : 0}
    registry.subscribe(PluginType.CSI_NODE, (PluginEvent e) -> {
      if (e.kind() != PluginEvent.Kind.DEREGISTERED) {
        health.add(new long[] {System.nanoTime(), e.plugin().health().healthy() ? 1 : 0});
      }
    }, Runnable::run);
    CsiPluginSupervisor supervisor = CsiPluginSupervisor.builder().csiRoot(root).registry(registry)
        .scheduler(scheduler).build();
    CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext("alloc-ext", "plugin"),
        CsiPluginConfig.builder("ext", PluginKind.NODE).externalSocket(socket)
            .probeInterval(Duration.ofHours(1)).healthTimeout(Duration.ZERO).build(),
        e -> { }, reason -> { });
    long[] down = new long[rounds];
    long[] up = new long[rounds];
    long[] exit = new long[rounds];
    long[] fresh = new long[rounds];
    Path other = root.resolve("ref/csi.sock");
    Files.createDirectories(other.getParent());
    try {
      hook.prestart(PrestartRequest.withEnv(Map.of()));
      Process plugin = launch(socket);
      hook.poststart(PoststartRequest.of());
      awaitHealth(health, true);
      for (int r = 0; r < rounds; r++) {
        long killed = System.nanoTime();
        var exited = plugin.onExit().thenApply(p -> System.nanoTime());
        plugin.destroyForcibly();
        long unhealthyAt = awaitHealth(health, false);
        exit[r] = exited.get(30, TimeUnit.SECONDS) - killed;
        down[r] = unhealthyAt - killed;
        long[] serving = new long[1];
        plugin = launch(socket, serving);
        long healthyAt = awaitHealth(health, true);
        up[r] = healthyAt - serving[0];
        fresh[r] = firstCalls(other);
      }
      plugin.destroyForcibly().waitFor();
    } finally {
      hook.stop(StopRequest.because("benchmark done"));
      supervisor.close();
      registry.close();
      scheduler.shutdownNow();
      Fixtures.deleteRecursively(root);
    }
    Stats d = new Stats(down);
    Stats u = new Stats(up);
    Stats x = new Stats(exit);
    System.out.printf(Locale.ROOT, "RESULT plugin-death unhealthy | kill -9 of an external plugin -> UPDATED unhealthy:"
        + " %s | reference: kill -> child exit seen by the JVM: %s | goal p50 <= 50 ms, within 1 s%n",
        d.describeMillis(), x.describeMillis());
    System.out.printf(Locale.ROOT, "RESULT plugin-death healthy | restarted plugin serving -> UPDATED healthy: %s"
        + " | reference: a fresh plugin JVM's first Probe + fingerprint by a client of ours: %s | steady probe 1 h"
        + " away%n", u.describeMillis(), new Stats(fresh).describeMillis());
  }

  /** A fresh plugin JVM at {@code socket}: the time from its serving to its answers to Probe and a fingerprint. */
  private static long firstCalls(Path socket) throws Exception {
    long[] serving = new long[1];
    Process p = launch(socket, serving);
    try (CsiClient client = CsiClient.create(socket)) {
      client.probe();
      client.fingerprint(PluginKind.NODE);
      return System.nanoTime() - serving[0];
    } finally {
      p.destroyForcibly().waitFor();
    }
  }

  private static Process launch(Path socket) throws Exception {
    return launch(socket, new long[1]);
  }

  /** The mock plugin in its own JVM; returns once it serves, with that moment in {@code serving[0]}. */
  private static Process launch(Path socket, long[] serving) throws Exception {
    Process p = new ProcessBuilder(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-cp", System.getProperty("java.class.path"),
        MockCsiPlugin.class.getName(), "--endpoint", "unix://" + socket, "--type", "node", "--name", "ext.csi.dev"))
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String line = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
    serving[0] = System.nanoTime();
    if (line == null || !line.startsWith("READY-TO-SERVE")) {
      throw new IllegalStateException("the mock plugin did not start: " + line);
    }
    return p;
  }

  /** Waits for the next health event of {@code healthy}; returns when it came. */
  private static long awaitHealth(BlockingQueue<long[]> events, boolean healthy) throws InterruptedException {
    while (true) {
      long[] e = events.poll(60, TimeUnit.SECONDS);
      if (e == null) {
        throw new IllegalStateException("no " + (healthy ? "healthy" : "unhealthy") + " event within 60 s");
      }
      if ((e[1] == 1) == healthy) {
        return e[0];
      }
    }
  }
}
