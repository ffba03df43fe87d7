package dev.csisupervisor.benchmarks;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The volume manager under SIGKILLs (not in CI): a child JVM ({@code volume-crash-child}) mounts and
 * unmounts at random, 8 operations at a time, over 12 volumes and 6 allocations of a mock plugin
 * served by this JVM, and is killed after a random delay; this JVM then opens the same state,
 * confirms the plugin, lets the manager settle, and compares the state with what the plugin holds:
 * a lost mount (recorded but not published), a leaked stage or publish (held by the plugin, not
 * recorded), a double stage (more staging paths than recorded stagings), anything left in flight.
 * The state carries over from round to round.
 *
 * <pre>volume-crash-loop [KILLS] [SEED]</pre>
 */
final class VolumeCrashLoop {
  static final String PLUGIN = "loop";

  public static void main(String[] args) throws Exception {
    int kills = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
    long seed = args.length > 1 ? Long.parseLong(args[1]) : 1;
    Random random = new Random(seed);
    Path root = Files.createTempDirectory(Path.of("/tmp"), "vl");
    Path data = root.resolve("data");
    Path csi = root.resolve("csi");
    Path socket = csi.resolve("node").resolve(PLUGIN).resolve("csi.sock");
    Files.createDirectories(socket.getParent());
    ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(1);
    MockCsiPlugin plugin = MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket).allCapabilities().start();
    List<String> volumes = new ArrayList<>();
    try (CsiClient c = CsiClient.create(socket)) {
      for (int i = 0; i < 12; i++) {
        volumes.add(c.createVolumeAsync(new CreateVolumeRequest("v" + i, Optional.of(CapacityRange.atLeast(1 << 20)),
            List.of(VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER)), Map.of(), Secrets.none()))
            .get(20, TimeUnit.SECONDS).volumeId());
      }
    }
    long lost = 0, leakedStages = 0, leakedPublishes = 0, doubleStages = 0, leftInFlight = 0, interrupted = 0;
    long opsDone = 0;
    long t0 = System.nanoTime();
    try {
      for (int round = 1; round <= kills; round++) {
        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
            "-cp", System.getProperty("java.class.path"), Main.class.getName(), "volume-crash-child",
            data.toString(), csi.toString(), socket.toString(), String.join(",", volumes), Long.toString(random.nextLong()))
            .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (!"READY".equals(line)) {
          throw new IllegalStateException("round " + round + ": child said " + line);
        }
        Thread.sleep(20 + random.nextInt(400));
        child.toHandle().destroyForcibly();
        child.waitFor(30, TimeUnit.SECONDS);
        // What the child finished before it died (best effort: lines may be cut).
        String l;
        while ((l = out.readLine()) != null) {
          if (l.equals("OP")) {
            opsDone++;
          }
        }
        try (JournalStateStore store = JournalStateStore.open(data);
            PluginRegistry registry = PluginRegistry.builder().stateStore(store).build()) {
          VolumeManager m = VolumeManager.builder().registry(registry).stateStore(store).csiRoot(csi)
              .scheduler(scheduler).mountTable(java.util.Optional.empty()).build(); // the mock mounts nothing
          interrupted += m.recovered().size();
          registry.register(node(socket));
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
          while (!m.pending().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(5);
          }
          leftInFlight += m.pending().size();
          Map<String, Set<String>> staged = plugin.stagedPaths();
          Map<String, Set<String>> published = plugin.publishedPaths();
          for (String v : volumes) {
            Optional<VolumeRecord> r = m.find(PLUGIN, v);
            Set<String> recordedTargets = new HashSet<>();
            Set<String> recordedStagings = new HashSet<>();
            r.ifPresent(rec -> {
              rec.stagings().forEach((name, st) -> {
                if (st.state() == VolumeRecord.StageState.STAGED) {
                  recordedStagings.add(rec.stagingPath(name).toString());
                }
              });
              rec.usages().values().forEach(u ->
                  u.allocs().keySet().forEach(a -> recordedTargets.add(rec.targetPath(a, u.usage()).toString())));
            });
            Set<String> p = published.getOrDefault(v, Set.of());
            Set<String> s = staged.getOrDefault(v, Set.of());
            lost += recordedTargets.stream().filter(t -> !p.contains(t)).count();
            leakedPublishes += p.stream().filter(t -> !recordedTargets.contains(t)).count();
            leakedStages += s.stream().filter(t -> !recordedStagings.contains(t)).count();
            doubleStages += Math.max(0, s.size() - recordedStagings.size());
          }
          m.close();
        }
        if (round % 100 == 0 || round == kills) {
          System.out.printf(Locale.ROOT, "round %d: lost %d, leaked stages %d, leaked publishes %d, double stages %d,"
              + " in flight %d%n", round, lost, leakedStages, leakedPublishes, doubleStages, leftInFlight);
        }
      }
      System.out.printf(Locale.ROOT, "RESULT volume-crash-loop | %d SIGKILLs (seed %d) in %.0f s | %d operations"
              + " finished by the children, %d interrupted found at restart | lost mounts %d | leaked stages %d |"
              + " leaked publishes %d | double stages %d | left in flight %d%n", kills, seed,
          (System.nanoTime() - t0) / 1e9, opsDone, interrupted, lost, leakedStages, leakedPublishes, doubleStages,
          leftInFlight);
    } finally {
      plugin.close();
      scheduler.shutdownNow();
      FileTrees.deleteQuietly(root);
    }
  }

  static PluginInfo node(Path socket) {
    Fingerprint f = new Fingerprint(PLUGIN, "1", Map.of(), Set.of(), Set.of(), Set.of("STAGE_UNSTAGE_VOLUME"),
        "node-1", 0, Map.of());
    return new PluginInfo(PluginType.CSI_NODE, PLUGIN, "1", "alloc-loop", socket, Map.of(), f,
        PluginHealth.healthy(Instant.now()), false);
  }

  /** The child: random mounts and unmounts until it is killed. Args: DATA CSI SOCKET VOLUMES SEED. */
  static void child(String[] args) throws Exception {
    Path data = Path.of(args[0]);
    Path csi = Path.of(args[1]);
    Path socket = Path.of(args[2]);
    List<String> volumes = List.of(args[3].split(","));
    Random random = new Random(Long.parseLong(args[4]));
    JournalStateStore store = JournalStateStore.open(data);
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).build();
    VolumeManager m = VolumeManager.builder().registry(registry).stateStore(store).csiRoot(csi)
        .scheduler(Executors.newScheduledThreadPool(1)).mountTable(java.util.Optional.empty()).build(); // the mock mounts nothing
    registry.register(node(socket));
    System.out.println("READY");
    System.out.flush();
    Semaphore slots = new Semaphore(8);
    while (true) {
      slots.acquire();
      String v = volumes.get(random.nextInt(volumes.size()));
      String alloc = "a" + random.nextInt(6);
      boolean readOnly = random.nextInt(4) == 0;
      CompletableFuture<?> f = random.nextBoolean()
          ? m.mount(VolumeClaim.of(PLUGIN, v, alloc, VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER), readOnly))
          : m.unmount(PLUGIN, v, alloc);
      f.whenComplete((x, e) -> {
        System.out.println("OP");
        slots.release();
      });
    }
  }
}
