package dev.csisupervisor.benchmarks;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
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
import dev.csisupervisor.state.GroupCommitStore;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.volumes.MountTable;
import dev.csisupervisor.volumes.MountedVolume;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Section 8 of benchmarks/README.md: the node volume manager on a real journal (fdatasync) with
 * real mock plugins over unix sockets.
 * <ol>
 *   <li>one mount (stage + publish) through the manager vs the same two RPCs sent directly, and one
 *       journal commit alone (the reference unit of the overhead);</li>
 *   <li>where one mount's time goes: its two commits on a timeline between the call and the answer, beside the
 *       same run's direct RPCs, a commit alone, a commit through the commit thread and one after a mkdir;</li>
 *   <li>1 000 (quick: 400) mounts started at once over 20 plugins: mounts/s and fsyncs per mount;</li>
 *   <li>registry changes and mounts at once (200 plugins flapping health from 4 threads while 1 000 mounts run),
 *       through the node's one group commit: fsyncs per change, the registry's change latency beside a bare
 *       fsync of the same run;</li>
 *   <li>a restart with 10 000 (quick: 2 000) recorded mounts: open the store and build the manager
 *       until it lists them all (cold: first in this JVM; warm: the best of the next 5), checked against a
 *       mount table with every staging and target of the records (a mountinfo file), beside the same restart
 *       unchecked and the bare read and parse of that file.</li>
 * </ol>
 */
final class VolumeMounts {
  private static final VolumeCapability CAP = VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER);

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    int plugins = 20;
    int concurrent = quick ? 400 : 1000;
    int recorded = quick ? 2000 : 10_000;
    int serial = quick ? 200 : 500;
    Path root = Files.createTempDirectory(Path.of("/tmp"), "vb"); // short socket paths; /tmp is the root ext4 here
    Path dataDir = root.resolve("data");
    ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(1);
    List<MockCsiPlugin> mocks = new ArrayList<>();
    List<CsiClient> direct = new ArrayList<>();
    try {
      Path csi = root.resolve("csi");
      // As the agent: one group commit for the node in front of the journal, shared by the registry and the manager.
      CountingStateStore counting = new CountingStateStore(JournalStateStore.open(dataDir));
      TimelineStore timeline = new TimelineStore(counting);
      GroupCommitStore store = GroupCommitStore.over(timeline);
      PluginRegistry registry = PluginRegistry.builder().stateStore(store).build();
      for (int i = 0; i < plugins; i++) {
        Path socket = csi.resolve("monolith").resolve("p" + i).resolve("csi.sock");
        Files.createDirectories(socket.getParent());
        mocks.add(MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket).allCapabilities().start());
        direct.add(CsiClient.create(socket));
        Fingerprint f = new Fingerprint("p" + i, "1", Map.of(), Set.of(), Set.of(),
            Set.of("STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"), "node-1", 0, Map.of());
        registry.register(new PluginInfo(PluginType.CSI_NODE, "p" + i, "1", "alloc-p" + i, socket, Map.of(), f,
            PluginHealth.healthy(Instant.now()), false));
      }
      VolumeManager manager = VolumeManager.builder().registry(registry).stateStore(store).csiRoot(csi)
          .scheduler(scheduler).build();

      // 1. One journal commit alone; the two RPCs directly; the same through the manager (journal, then in memory).
      long[] commit = new long[serial];
      long[] commitAsync = new long[serial];
      for (int i = 0; i < serial; i++) {
        long t = System.nanoTime();
        store.apply(List.of(new StateChange.Put("bench/commit", new byte[64])));
        commit[i] = System.nanoTime() - t;
        t = System.nanoTime();
        store.applyAsync(List.of(new StateChange.Put("bench/commit", new byte[64]))).get();
        commitAsync[i] = System.nanoTime() - t;
      }
      // The same commit right after a mkdir: ext4's fdatasync then also commits the file system's journal (the
      // directory), which is what a mount's commits pay, since the CO makes its directories between them.
      long[] commitAfterMkdir = new long[serial];
      for (int i = 0; i < serial; i++) {
        Files.createDirectories(root.resolve("mkdir-ref/" + i));
        long t = System.nanoTime();
        store.apply(List.of(new StateChange.Put("bench/commit", new byte[64])));
        commitAfterMkdir[i] = System.nanoTime() - t;
      }
      store.delete("bench/commit");
      InMemoryStateStore memory = new InMemoryStateStore();
      PluginRegistry memoryRegistry = PluginRegistry.builder().stateStore(memory).build();
      registry.listAll(PluginType.CSI_NODE).forEach(memoryRegistry::register);
      VolumeManager inMemory = VolumeManager.builder().registry(memoryRegistry).stateStore(memory).csiRoot(csi)
          .scheduler(scheduler).build();
      List<String> ids = createVolumes(direct.get(0), "d", serial * 3);
      long[] directNanos = new long[serial];
      long[] managed = new long[serial];
      long[] managedInMemory = new long[serial];
      // The managed mount's timeline: call → 1st commit start, 1st commit, its end → 2nd commit start (the two RPCs,
      // the directories, the mount table read, the hand-offs), 2nd commit, its end → the answer.
      long[][] parts = new long[5][serial];
      for (int i = 0; i < serial; i++) {
        // The three in a rotating order, so that none always follows another's file system work.
        for (int k = 0; k < 3; k++) {
          switch ((i + k) % 3) {
            case 0 -> directNanos[i] = directMount(direct.get(0), root, ids.get(i), i);
            case 1 -> {
              timeline.take();
              long t = System.nanoTime();
              manager.mount(VolumeClaim.of("p0", ids.get(serial + i), "a" + i, CAP, false)).get(30, TimeUnit.SECONDS);
              long end = System.nanoTime();
              managed[i] = end - t;
              List<TimelineStore.Commit> cs = timeline.take();
              if (cs.size() != 2) {
                throw new IllegalStateException("a mount made " + cs.size() + " commits, not 2");
              }
              parts[0][i] = cs.get(0).start() - t;
              parts[1][i] = cs.get(0).end() - cs.get(0).start();
              parts[2][i] = cs.get(1).start() - cs.get(0).end();
              parts[3][i] = cs.get(1).end() - cs.get(1).start();
              parts[4][i] = end - cs.get(1).end();
            }
            default -> managedInMemory[i] = timedMount(inMemory, ids.get(2 * serial + i), "m" + i);
          }
        }
      }
      inMemory.close();
      memoryRegistry.close();
      Stats c = new Stats(commit);
      Stats cm = new Stats(commitAfterMkdir);
      Stats d = new Stats(directNanos);
      Stats m = new Stats(managed);
      Stats mm = new Stats(managedInMemory);
      System.out.printf(Locale.ROOT, "RESULT volumes mount | manager %s | manager, in-memory store %s | direct"
              + " stage+publish %s | one journal commit %s | one commit after a mkdir %s | overhead p50 %.2f ms = %.1f"
              + " commits, %.1f commits-after-mkdir (in memory: %.2f ms)%n",
          m.describeMillis(), mm.describeMillis(), d.describeMillis(), c.describeMillis(), cm.describeMillis(),
          (m.p50() - d.p50()) / 1e6, (m.p50() - d.p50()) / (double) c.p50(), (m.p50() - d.p50()) / (double) cm.p50(),
          (mm.p50() - d.p50()) / 1e6);
      System.out.printf(Locale.ROOT, "RESULT volumes mount-timeline | p50 of each part of a managed mount: call to"
              + " 1st commit %s ms | 1st commit (intent) %s ms | between the commits (2 mkdirs, stage, publish, mount"
              + " table) %s ms | 2nd commit (result) %s ms | to the answer %s ms | reference: direct stage+publish"
              + " with its mkdirs %s ms, a commit by its caller %s ms, through the commit thread %s ms%n",
          Stats.ms(new Stats(parts[0]).p50()), Stats.ms(new Stats(parts[1]).p50()), Stats.ms(new Stats(parts[2]).p50()),
          Stats.ms(new Stats(parts[3]).p50()), Stats.ms(new Stats(parts[4]).p50()), Stats.ms(d.p50()),
          Stats.ms(c.p50()), Stats.ms(new Stats(commitAsync).p50()));

      // 2. Many at once over every plugin.
      List<List<String>> perPlugin = new ArrayList<>();
      for (int i = 0; i < plugins; i++) {
        perPlugin.add(createVolumes(direct.get(i), "c", concurrent / plugins));
      }
      VolumeManager.CommitStats before = manager.commitStats();
      long t0 = System.nanoTime();
      List<CompletableFuture<MountedVolume>> all = new ArrayList<>();
      for (int i = 0; i < concurrent; i++) {
        int p = i % plugins;
        all.add(manager.mount(VolumeClaim.of("p" + p, perPlugin.get(p).get(i / plugins), "c" + i, CAP, false)));
      }
      CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(120, TimeUnit.SECONDS);
      double seconds = (System.nanoTime() - t0) / 1e9;
      VolumeManager.CommitStats after = manager.commitStats();
      System.out.printf(Locale.ROOT, "RESULT volumes concurrent | %d mounts over %d plugins in %.3f s | %.0f mounts/s"
              + " | %d commits (fsyncs) = %.3f per mount | %d record changes%n", concurrent, plugins, seconds,
          concurrent / seconds, after.commits() - before.commits(),
          (after.commits() - before.commits()) / (double) concurrent, after.changes() - before.changes());

      // 2b. Registry changes and mounts at once, through the one group commit: a burst (every mount started at once,
      // every flapper in a tight loop: the CPUs saturated), then paced (each plugin flips once a second, mounts
      // started at 250/s: a busy node, not a saturated one).
      concurrentWithRegistry(registry, manager, counting, direct, plugins, concurrent, root, false);
      concurrentWithRegistry(registry, manager, counting, direct, plugins, concurrent, root, true);
      // The reference for the paced run: the same flapping alone, with no mount beside it, for as long.
      concurrentWithRegistry(registry, manager, counting, direct, plugins, 0, root, true);

      // 3. A restart with many recorded mounts.
      int have = manager.list().size();
      List<CompletableFuture<MountedVolume>> more = new ArrayList<>();
      for (int p = 0; p < plugins && have + more.size() < recorded; p++) {
        List<String> vs = createVolumes(direct.get(p), "r", (recorded - have) / plugins + 1);
        for (String v : vs) {
          if (have + more.size() >= recorded) {
            break;
          }
          more.add(manager.mount(VolumeClaim.of("p" + p, v, "r", CAP, false)));
        }
      }
      CompletableFuture.allOf(more.toArray(CompletableFuture[]::new)).get(300, TimeUnit.SECONDS);
      int total = manager.list().size();
      manager.close();
      registry.close();
      store.close();
      // The mount table such a node has: every staging and target of the records mounted, as mountinfo lines.
      Path mountinfo = root.resolve("mountinfo");
      int mountLines = writeMountinfo(dataDir, csi, mountinfo, scheduler);
      MountTable table = MountTable.readFrom(mountinfo);
      long[] parse = new long[6];
      for (int i = 0; i < parse.length; i++) {
        long t = System.nanoTime();
        if (table.read().size() != mountLines) {
          throw new IllegalStateException("mountinfo parsed short");
        }
        parse[i] = System.nanoTime() - t;
      }
      long[] checked = restarts(dataDir, csi, scheduler, total, Optional.of(table));
      long[] unchecked = restarts(dataDir, csi, scheduler, total, Optional.empty());
      System.out.printf(Locale.ROOT, "RESULT volumes restart | %d recorded volumes (+%d plugins), checked against a"
              + " mount table of %d entries | open store + registry + manager: cold %.1f ms, warm best of 5 %.1f ms |"
              + " reference: the same without the check cold %.1f ms, warm %.1f ms | the bare read and parse of that"
              + " mountinfo: first %.1f ms, warm best of 5 %.1f ms%n", total, plugins, mountLines,
          checked[0] / 1e6, warmBest(checked) / 1e6, unchecked[0] / 1e6, warmBest(unchecked) / 1e6,
          parse[0] / 1e6, warmBest(parse) / 1e6);
    } finally {
      direct.forEach(CsiClient::close);
      mocks.forEach(MockCsiPlugin::close);
      scheduler.shutdownNow();
      FileTrees.deleteQuietly(root);
    }
  }

  /** Six restarts (open store, registry, manager until it lists them all, none lost); their times. */
  private static long[] restarts(Path dataDir, Path csi, ScheduledExecutorService scheduler, int total,
      Optional<MountTable> table) {
    long[] restarts = new long[6];
    for (int i = 0; i < restarts.length; i++) {
      long t = System.nanoTime();
      JournalStateStore s = JournalStateStore.open(dataDir);
      // As the agent does: the volume records first, from what open read, then the registry's restore.
      Map<String, byte[]> volumeRecords = s.loadAll(VolumeManager.STORE_PREFIX);
      PluginRegistry r = PluginRegistry.builder().stateStore(s).build();
      VolumeManager vm = VolumeManager.builder().registry(r).stateStore(s).csiRoot(csi).scheduler(scheduler)
          .records(volumeRecords).mountTable(table).build();
      if (vm.list().size() != total) {
        throw new IllegalStateException("restored " + vm.list().size() + " of " + total);
      }
      restarts[i] = System.nanoTime() - t;
      if (vm.list().stream().anyMatch(VolumeRecord::hasLost)) {
        throw new IllegalStateException("a volume was taken for lost: the mount table does not match the records");
      }
      vm.close();
      r.close();
      s.close();
    }
    return restarts;
  }

  /**
   * 200 plugins flapping health (4 threads re-registering them with health toggled, each change timed) while
   * {@code mounts} mounts run over every plugin; fsyncs per change (registry + volume records) and the registry's
   * change latency, beside a bare fsync measured right before on the same disk. {@code paced}: each plugin flips
   * once a second and the mounts start at 250/s; else as fast as they go, all mounts at once.
   */
  private static void concurrentWithRegistry(PluginRegistry registry, VolumeManager manager,
      CountingStateStore counting, List<CsiClient> direct, int plugins, int mounts, Path root, boolean paced)
      throws Exception {
    String tag = mounts == 0 ? "a" : paced ? "p" : "b";
    int flapping = 200;
    int threads = 4;
    Stats bare = new Stats(JournalRoll.bareFsync(root.resolve("bare-fsync-" + tag), 2000, 64));
    // The same at the flappers' pace when paced (one every 5 ms, as 200 plugins flipping once a second make):
    // a change that wakes an idle thread, CPU and disk costs more than one of a tight loop, an fsync too.
    Stats barePaced = paced ? new Stats(JournalRoll.bareFsync(root.resolve("bare-fsync-paced-" + tag), 400, 64,
        5_000_000L)) : bare;
    List<PluginInfo> flappers = new ArrayList<>();
    for (int i = 0; i < flapping; i++) {
      Fingerprint f = new Fingerprint("f" + i, "1", Map.of(), Set.of(), Set.of(), Set.of(), "node-1", 0, Map.of());
      PluginInfo info = new PluginInfo(PluginType.CSI_NODE, "f" + i, "1", "alloc-f" + tag + i, root.resolve("f" + i),
          Map.of(), f, PluginHealth.healthy(Instant.now()), false);
      registry.register(info);
      flappers.add(info);
    }
    List<List<String>> perPlugin = new ArrayList<>();
    for (int i = 0; i < plugins; i++) {
      perPlugin.add(mounts == 0 ? List.of() : createVolumes(direct.get(i), "x" + tag, mounts / plugins));
    }
    long commitsBefore = counting.commits();
    long changesBefore = counting.changes();
    java.util.concurrent.atomic.AtomicBoolean mounting = new java.util.concurrent.atomic.AtomicBoolean(true);
    List<long[]> latencies = new ArrayList<>();
    List<Thread> flappingThreads = new ArrayList<>();
    java.util.concurrent.atomic.AtomicInteger registryChanges = new java.util.concurrent.atomic.AtomicInteger();
    for (int t = 0; t < threads; t++) {
      long[] mine = new long[200_000];
      latencies.add(mine);
      int first = t;
      Thread th = new Thread(() -> {
        int n = 0;
        long start = System.nanoTime();
        for (int round = 0; mounting.get() && n < mine.length; round++) {
          for (int i = first; i < flapping && mounting.get() && n < mine.length; i += threads) {
            if (paced) { // this plugin's next flip: once a second, the plugins spread over the second
              long due = start + round * 1_000_000_000L + i * (1_000_000_000L / flapping);
              java.util.concurrent.locks.LockSupport.parkNanos(due - System.nanoTime());
            }
            PluginInfo p = flappers.get(i);
            PluginHealth h = round % 2 == 0 ? PluginHealth.unhealthy("probe failed", Instant.now())
                : PluginHealth.healthy(Instant.now());
            long t0 = System.nanoTime();
            registry.register(p.withHealth(h));
            mine[n++] = System.nanoTime() - t0;
          }
        }
        registryChanges.addAndGet(n);
        latencies.set(first, java.util.Arrays.copyOf(mine, n));
      }, "flapper-" + t);
      flappingThreads.add(th);
    }
    flappingThreads.forEach(Thread::start);
    long t0 = System.nanoTime();
    List<CompletableFuture<MountedVolume>> all = new ArrayList<>();
    for (int i = 0; i < mounts; i++) {
      int p = i % plugins;
      if (paced) {
        java.util.concurrent.locks.LockSupport.parkNanos(t0 + i * 4_000_000L - System.nanoTime());
      }
      all.add(manager.mount(VolumeClaim.of("p" + p, perPlugin.get(p).get(i / plugins), "x" + tag + i, CAP, false)));
    }
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(300, TimeUnit.SECONDS);
    if (mounts == 0) { // alone: as long as the paced mounts of the run before take
      java.util.concurrent.locks.LockSupport.parkNanos(4_000_000_000L);
    }
    double seconds = (System.nanoTime() - t0) / 1e9;
    mounting.set(false);
    for (Thread th : flappingThreads) {
      th.join();
    }
    long commits = counting.commits() - commitsBefore;
    long changes = counting.changes() - changesBefore;
    Stats reg = new Stats(latencies.stream().flatMapToLong(java.util.Arrays::stream).toArray());
    System.out.printf(Locale.ROOT, "RESULT volumes with-registry %s | %d mounts over %d plugins in %.3f s (%.0f mounts/s)"
            + " while %d threads flapped %d plugins' health: %d registry changes | %d commits (fsyncs) for %d"
            + " changes = %.3f fsyncs per change | registry change %s = %.2f x bare fsync p50, %.2f x bare fsync"
            + " p50 at the same pace | reference bare fsync (64 B write + fdatasync, preallocated file) %s, at the"
            + " same pace %s%n",
        mounts == 0 ? "alone (each plugin flips once a second, no mount beside it: the paced run's reference)"
            : paced ? "paced (each plugin flips once a second, mounts started at 250/s)"
            : "burst (mounts all at once, flappers in tight loops)", mounts, plugins, seconds, mounts / seconds,
        threads, flapping, registryChanges.get(), commits, changes,
        commits / (double) changes, reg.describeMillis(), reg.p50() / (double) bare.p50(),
        reg.p50() / (double) barePaced.p50(), bare.describeMillis(), barePaced.describeMillis());
  }

  private static long warmBest(long[] times) {
    long warm = Long.MAX_VALUE;
    for (int i = 1; i < times.length; i++) {
      warm = Math.min(warm, times[i]);
    }
    return warm;
  }

  /**
   * Writes a mountinfo file with a line for every staging and target path the store's volume records name (as
   * a node that really has them mounted), plus a root line; how many lines.
   */
  private static int writeMountinfo(Path dataDir, Path csi, Path file, ScheduledExecutorService scheduler)
      throws Exception {
    List<Path> paths = new ArrayList<>();
    try (JournalStateStore s = JournalStateStore.open(dataDir)) {
      PluginRegistry r = PluginRegistry.builder().stateStore(s).build();
      try (VolumeManager vm = VolumeManager.builder().registry(r).stateStore(s).csiRoot(csi)
          .scheduler(scheduler).mountTable(Optional.empty())
          .records(s.loadAll(VolumeManager.STORE_PREFIX)).build()) {
        for (VolumeRecord v : vm.list()) {
          v.stagings().keySet().forEach(name -> paths.add(v.stagingPath(name)));
          v.usages().values().forEach(u -> u.allocs().keySet().forEach(a -> paths.add(v.targetPath(a, u.usage()))));
        }
      }
      r.close();
    }
    StringBuilder sb = new StringBuilder("22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n");
    int id = 100;
    for (Path p : paths) {
      sb.append(id++).append(" 22 254:0 /var/lib/x ").append(p.toString().replace(" ", "\\040"))
          .append(" rw,relatime shared:1 - ext4 /dev/vda rw\n");
    }
    Files.writeString(file, sb);
    return paths.size() + 1;
  }

  /** Stage + publish sent directly, with the same directories the manager makes (a CO's part of a mount). */
  private static long directMount(CsiClient client, Path root, String v, int i) throws Exception {
    // The same layout the manager makes (staging/<vol>/<usage>, per-alloc/<alloc>/<vol>/<usage>): a CO's
    // directories are part of its mount, and a mkdir costs about 0.25 ms on this machine's disk.
    Path staging = root.resolve("direct/staging/" + v + "/usage");
    Path target = root.resolve("direct/per-alloc/d" + i + "/" + v + "/usage");
    long t = System.nanoTime();
    Files.createDirectories(staging);
    Files.createDirectories(target.getParent());
    client.nodeStageVolumeAsync(new NodeStageRequest(v, Map.of(), staging, CAP, Secrets.none(), Map.of()))
        .thenCompose(x -> client.nodePublishVolumeAsync(new NodePublishRequest(v, Map.of(), Optional.of(staging),
            target, CAP, false, Secrets.none(), Map.of()))).get(30, TimeUnit.SECONDS);
    return System.nanoTime() - t;
  }

  private static long timedMount(VolumeManager manager, String volume, String alloc) throws Exception {
    long t = System.nanoTime();
    manager.mount(VolumeClaim.of("p0", volume, alloc, CAP, false)).get(30, TimeUnit.SECONDS);
    return System.nanoTime() - t;
  }

  private static List<String> createVolumes(CsiClient client, String prefix, int n) throws Exception {
    List<CompletableFuture<String>> all = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      all.add(client.createVolumeAsync(new CreateVolumeRequest(prefix + "-" + System.nanoTime() + "-" + i,
          Optional.of(dev.csisupervisor.client.CapacityRange.atLeast(1 << 20)), List.of(CAP), Map.of(), Secrets.none()))
          .thenApply(v -> v.volumeId()));
    }
    List<String> ids = new ArrayList<>();
    for (CompletableFuture<String> f : all) {
      ids.add(f.get(60, TimeUnit.SECONDS));
    }
    return ids;
  }
}
