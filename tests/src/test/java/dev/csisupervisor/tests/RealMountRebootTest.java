package dev.csisupervisor.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.common.MountInfo;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeResponse;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.testing.ShortTempDir;
import dev.csisupervisor.volumes.MountedVolume;
import dev.csisupervisor.volumes.OrphanMount;
import dev.csisupervisor.volumes.UnmountRequest;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The volume manager against the kernel, as root: the mock plugin in its real-mount mode (bind mounts at stage
 * and publish, as kubernetes-csi hostpath), the real {@code /proc/self/mountinfo}, a real journal. A reboot is
 * every mount under the CSI root unmounted behind everyone's back and the plugin and the manager started again
 * on their state. Without root every test is skipped, saying why (the volumes module's VolumeMountTableTest
 * covers the same rules with a fake table).
 */
class RealMountRebootTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final VolumeCapability RWX = VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER);

  private ShortTempDir dir;
  private Path csiRoot;
  private Path socket;
  private MockCsiPlugin plugin;
  private JournalStateStore store;
  private PluginRegistry registry;
  private VolumeManager manager;
  private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(1);

  @BeforeEach
  void setUp() throws Exception {
    assumeTrue(isRoot(), "real mounts need root (mount --bind): this JVM runs as uid " + uid());
    dir = new ShortTempDir("rm");
    csiRoot = dir.resolve("csi");
    socket = csiRoot.resolve("monolith/mock/csi.sock");
    Files.createDirectories(socket.getParent());
    startPlugin();
    startAgent();
  }

  @AfterEach
  void tearDown() throws Exception {
    if (dir == null) {
      return;
    }
    closeAgent();
    if (plugin != null) {
      plugin.close();
    }
    scheduler.shutdownNow();
    unmountAllUnder(dir.path());
    dir.close();
  }

  private void startPlugin() throws IOException {
    plugin = MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket).allCapabilities()
        .stateFile(dir.resolve("plugin-state")).realMounts(dir.resolve("volumes")).start();
  }

  private void startAgent() {
    store = JournalStateStore.open(dir.resolve("data"));
    registry = PluginRegistry.builder().stateStore(store).build();
    manager = VolumeManager.builder().registry(registry).stateStore(store).csiRoot(csiRoot).scheduler(scheduler)
        .retry(3, Duration.ofMillis(50), Duration.ofMillis(500)).pendingRetryMax(Duration.ofMillis(500)).build();
    confirmPlugin(true);
  }

  /** The supervisor's word: the node plugin registered and healthy (or not). */
  private void confirmPlugin(boolean healthy) {
    Fingerprint f = new Fingerprint("mock", "1", Map.of(), Set.of(), Set.of(),
        Set.of("STAGE_UNSTAGE_VOLUME", "SINGLE_NODE_MULTI_WRITER"), "node-1", 0, Map.of());
    registry.register(new PluginInfo(PluginType.CSI_NODE, "mock", "1", "alloc-mock", socket, Map.of(), f,
        healthy ? PluginHealth.healthy(Instant.now()) : PluginHealth.unhealthy("gone", Instant.now()), false));
  }

  private void closeAgent() {
    if (manager != null) {
      manager.close();
      registry.close();
      store.close();
      manager = null;
    }
  }

  private String createVolume(String name) throws Exception {
    try (CsiClient c = CsiClient.create(socket)) {
      return c.createVolumeAsync(new CreateVolumeRequest(name, Optional.empty(), List.of(RWX), Map.of(),
          Secrets.none())).get(20, TimeUnit.SECONDS).volumeId();
    }
  }

  private static <T> T get(CompletableFuture<T> f) throws Exception {
    return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  @Test
  void aRebootUnderAMountedVolume_handsTheSameAllocItsDataAgain_notAnEmptyDirectory() throws Exception {
    String vol = createVolume("data");
    MountedVolume m = get(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    assertTrue(mounted(m.targetPath()), "published: a mount in /proc/self/mountinfo");
    assertTrue(mounted(m.stagingPath().orElseThrow()), "staged: a mount too");
    Files.writeString(m.targetPath().resolve("precious"), "the task's data");

    // The power cut: every mount gone, the journal and the plugin's state file kept.
    closeAgent();
    plugin.close();
    unmountAllUnder(csiRoot);
    assertFalse(mounted(m.targetPath()));
    assertFalse(Files.exists(m.targetPath().resolve("precious")), "the target is an empty host directory now");

    startPlugin();
    startAgent();
    assertTrue(manager.recovered().stream().anyMatch(l -> l.contains("is not mounted")), manager.recovered().toString());
    Awaitility.await().atMost(WAIT).until(() -> mounted(m.targetPath()) && manager.pending().isEmpty());
    assertEquals("the task's data", Files.readString(m.targetPath().resolve("precious")));
    assertTrue(mounted(m.stagingPath().orElseThrow()));
    assertEquals(m.targetPath(), get(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false))).targetPath());

    get(manager.unmount("mock", vol, "a1"));
    assertEquals(List.of(), mountsUnder(csiRoot), "everything unmounted, checked in mountinfo");
  }

  @Test
  void anUnpublishAnsweringOkOverALiveMount_staysPendingUntilTheMountIsReallyGone() throws Exception {
    String vol = createVolume("liar");
    MountedVolume m = get(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    // A plugin that lost its state: "done", and the bind mount is still there.
    plugin.replyCalls(dev.csisupervisor.csi.v1.NodeGrpc.getNodeUnpublishVolumeMethod(),
        NodeUnpublishVolumeResponse.getDefaultInstance(), 2);
    CompletableFuture<Void> unmount = manager.unmount("mock", vol, "a1");
    Awaitility.await().atMost(WAIT)
        .until(() -> manager.waitingFor().getOrDefault("mock/" + vol, "").contains("still a mount point"));
    assertFalse(unmount.isDone());
    assertTrue(mounted(m.targetPath()));
    get(unmount); // the scripted answers used up: the plugin unmounts for real, the table agrees
    assertFalse(mounted(m.targetPath()));
    assertEquals(List.of(), mountsUnder(csiRoot));
  }

  @Test
  void twoAllocsOfOneVolume_aBusyTargetHoldsOnlyItsOwnUnmount() throws Exception {
    String vol = createVolume("shared");
    MountedVolume m1 = get(manager.mount(VolumeClaim.of("mock", vol, "a1", RWX, false)));
    MountedVolume m2 = get(manager.mount(VolumeClaim.of("mock", vol, "a2", RWX, false)));
    CompletableFuture<Void> u1;
    try (FileChannel busy = FileChannel.open(m1.targetPath().resolve("open"), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE)) {
      // An open file keeps a1's target busy: umount answers EBUSY.
      u1 = manager.unmount("mock", vol, "a1");
      get(manager.unmount("mock", vol, "a2"));
      assertFalse(mounted(m2.targetPath()));
      assertFalse(u1.isDone());
      assertTrue(mounted(m1.targetPath()));
      assertTrue(mounted(m1.stagingPath().orElseThrow()), "no unstage while a1 is there");
      assertEquals(List.of("a1"), manager.find("mock", vol).orElseThrow().allocs());
    }
    get(u1);
    assertEquals(List.of(), mountsUnder(csiRoot));
  }

  @Test
  void retainAllocs_afterARestart_releasesTheDeadAllocsMounts() throws Exception {
    String dead = createVolume("dead");
    String live = createVolume("live");
    MountedVolume d = get(manager.mount(VolumeClaim.of("mock", dead, "gone", RWO, false)));
    MountedVolume l = get(manager.mount(VolumeClaim.of("mock", live, "alive", RWO, false)));
    closeAgent();
    startAgent();
    assertEquals(List.of("gone"), get(manager.retainAllocs(Set.of("alive"))));
    assertFalse(mounted(d.targetPath()));
    assertTrue(mounted(l.targetPath()));
    assertEquals(Optional.empty(), manager.find("mock", dead));
  }

  @Test
  void forcedUnmount_withTheNodePluginGone_isDoneByTheAgent_andOrphansAreCollectedOnlyWhenAsked() throws Exception {
    String vol = createVolume("forced");
    MountedVolume m = get(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    plugin.close(); // gone for good
    confirmPlugin(false);
    get(manager.unmount(UnmountRequest.of("mock", vol, "a1").forced()));
    assertFalse(mounted(m.targetPath()));
    assertFalse(mounted(m.stagingPath().orElseThrow()));
    assertTrue(manager.list().isEmpty());

    // A mount below per-alloc that no record names: reported, listed, removed only when asked.
    Path orphan = socket.getParent().resolve("per-alloc/zz/v/mount-single-node-writer-rw");
    Files.createDirectories(orphan);
    Path source = Files.createDirectories(dir.resolve("orphan-source"));
    MountInfo.run(Duration.ofSeconds(30), "mount", "--bind", source.toString(), orphan.toString());
    closeAgent();
    startAgent();
    assertTrue(manager.recovered().stream().anyMatch(s -> s.contains("orphan mount " + orphan)),
        manager.recovered().toString());
    assertEquals(List.of(new OrphanMount(orphan, false, Optional.empty())), get(manager.collectOrphans(false)));
    assertTrue(mounted(orphan));
    assertEquals(List.of(new OrphanMount(orphan, true, Optional.empty())), get(manager.collectOrphans(true)));
    assertFalse(mounted(orphan));
  }

  @Test
  void aLostPublicationIsSeenBeforeItsPathIsHandedBack() throws Exception {
    String vol = createVolume("handback");
    MountedVolume m = get(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    Files.writeString(m.targetPath().resolve("f"), "x");
    MountInfo.run(Duration.ofSeconds(30), "umount", m.targetPath().toString()); // by hand, behind the agent's back
    assertEquals(m.targetPath(), get(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false))).targetPath());
    assertTrue(mounted(m.targetPath()));
    assertEquals("x", Files.readString(m.targetPath().resolve("f")));
    assertEquals(AllocPhase.PUBLISHED, manager.find("mock", vol).orElseThrow().usageOf("a1").orElseThrow().allocs().get("a1"));
  }

  // ---- the kernel's table ----

  private static List<String> mounts() throws IOException {
    return MountInfo.parse(Files.readAllBytes(Path.of("/proc/self/mountinfo"))).stream()
        .map(MountInfo.Mount::mountPoint).toList();
  }

  private static boolean mounted(Path p) throws IOException {
    return mounts().contains(p.toAbsolutePath().normalize().toString());
  }

  private static List<String> mountsUnder(Path dir) throws IOException {
    String prefix = dir.toAbsolutePath().normalize() + "/";
    return mounts().stream().filter(m -> m.startsWith(prefix)).toList();
  }

  /** {@code umount -l} of every mount below {@code dir}, deepest first: a reboot's effect, or a test's clean-up. */
  static void unmountAllUnder(Path dir) throws IOException {
    List<String> under = mountsUnder(dir).stream().sorted(Comparator.comparingInt(String::length).reversed()).toList();
    for (String m : under) {
      MountInfo.run(Duration.ofSeconds(30), "umount", "-l", m);
    }
  }

  private static String uid() {
    try {
      return Files.readAllLines(Path.of("/proc/self/status")).stream().filter(l -> l.startsWith("Uid:"))
          .map(l -> l.split("\\s+")[2]).findFirst().orElse("?");
    } catch (IOException e) {
      return "?";
    }
  }

  private static boolean isRoot() {
    return "0".equals(uid());
  }
}
