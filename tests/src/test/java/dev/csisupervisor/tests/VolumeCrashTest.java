package dev.csisupervisor.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.testing.ShortTempDir;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * kill -9 of the agent at each step of a mount and of an unmount: the intent committed but the CSI
 * call not sent; the call done but its result not committed; the operation finished. A child JVM
 * ({@link VolumeHostMain}) does the operation against a real mock plugin served by this JVM and is
 * killed where it says it stopped; then this JVM opens the same state and checks contract 10: a
 * finished mount stays, an interrupted mount is rolled back, an interrupted unmount is finished,
 * nothing is left in flight, and no secret reached the state directory or the child's log.
 */
class VolumeCrashTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  private ShortTempDir dir;
  private Path dataDir;
  private Path csiRoot;
  private Path socket;
  private MockCsiPlugin plugin;
  private String volume;
  private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(1);

  @BeforeEach
  void setUp() throws Exception {
    dir = new ShortTempDir("vc");
    dataDir = dir.resolve("data");
    csiRoot = dir.resolve("csi");
    socket = csiRoot.resolve("node/crash/csi.sock");
    Files.createDirectories(socket.getParent());
    plugin = MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket).allCapabilities().start();
    try (CsiClient c = CsiClient.create(socket)) {
      volume = c.createVolumeAsync(new CreateVolumeRequest("v", Optional.empty(), List.of(VolumeHostMain.CAP), Map.of(),
          Secrets.none())).get(20, TimeUnit.SECONDS).volumeId();
    }
  }

  @AfterEach
  void tearDown() {
    scheduler.shutdownNow();
    plugin.close();
    dir.close();
  }

  /** Runs the child until it prints {@code AT <stop>}, then SIGKILLs it. */
  private void runAndKill(String op, String stop) throws Exception {
    Path log = dir.resolve("child-" + op + ".log");
    try (ChildJvm child = ChildJvm.start(VolumeHostMain.class, log, dataDir.toString(), csiRoot.toString(),
        socket.toString(), op, volume, "a1", stop)) {
      String line;
      while ((line = child.readLine()) != null && !line.startsWith("AT ")) {
        // READY, then nothing until the step
      }
      assertTrue(line != null && line.startsWith("AT " + stop), "child stopped at " + line + ": " + child.stderrTail());
      child.kill();
      child.awaitExit();
    }
  }

  /** The next start, in this JVM: the state as the killed agent left it, settled once the plugin is confirmed. */
  private List<String> recovered = List.of();

  private VolumeRecord restartAndSettle(boolean expectRecord) {
    try (JournalStateStore store = JournalStateStore.open(dataDir);
        PluginRegistry registry = PluginRegistry.builder().stateStore(store).build()) {
      // The mock plugin mounts nothing here: the mount table is not the truth of this test (RealMountRebootTest's).
      VolumeManager manager = VolumeManager.builder().registry(registry).stateStore(store).csiRoot(csiRoot)
          .scheduler(scheduler).mountTable(java.util.Optional.empty()).build();
      recovered = manager.recovered();
      try {
        registry.register(VolumeHostMain.nodePlugin(socket)); // the supervisor confirms the plugin
        Awaitility.await().atMost(WAIT).until(() -> manager.pending().isEmpty());
        Optional<VolumeRecord> r = manager.find(VolumeHostMain.PLUGIN, volume);
        assertEquals(expectRecord, r.isPresent(), "record after recovery: " + r + "; recovered " + manager.recovered());
        return r.orElse(null);
      } finally {
        manager.close();
      }
    }
  }

  private Path target() {
    return socket.getParent().resolve("per-alloc/a1/" + VolumeRecord.directoryName(volume) + "/mount-single-node-writer-rw");
  }

  private Path staging() {
    return socket.getParent().resolve("staging/" + VolumeRecord.directoryName(volume)); // one staging per volume
  }

  private void assertNoSecretOnDisk() throws IOException {
    try (Stream<Path> files = Files.walk(dir.path())) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String content = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
        assertFalse(content.contains(VolumeHostMain.SECRET), "secret found in " + f);
      }
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"before:NodeStageVolume", "after:NodeStageVolume", "before:NodePublishVolume",
      "after:NodePublishVolume"})
  void killDuringAMount_rollsItBack(String stop) throws Exception {
    runAndKill("mount", stop);
    restartAndSettle(false);
    assertEquals(1, recovered.size(), recovered.toString());
    assertTrue(recovered.get(0).contains("interrupted mount for alloc a1"), "the intent was durable before the call: "
        + recovered);
    assertFalse(Files.exists(target()), "target left behind");
    assertFalse(Files.exists(staging()), "staging left behind");
    assertEquals(Map.of(), plugin.stagedPaths(), "no stage leaked in the plugin");
    assertEquals(Map.of(), plugin.publishedPaths(), "no publish leaked in the plugin");
    assertFalse(Files.exists(target().getParent().getParent()), "per-alloc directory left behind");
    assertNoSecretOnDisk();
  }

  @ParameterizedTest
  @ValueSource(strings = {"done"})
  void killAfterAMount_keepsIt(String stop) throws Exception {
    runAndKill("mount", stop);
    VolumeRecord r = restartAndSettle(true);
    assertEquals(List.of(), recovered, "nothing was in flight");
    assertEquals(List.of("a1"), r.allocs());
    assertTrue(Files.isDirectory(target()), "the mounted target is still there");
    assertEquals(Map.of(volume, java.util.Set.of(staging().toString())), plugin.stagedPaths(), "staged once");
    assertEquals(Map.of(volume, java.util.Set.of(target().toString())), plugin.publishedPaths());
    assertNoSecretOnDisk();
  }

  @ParameterizedTest
  @ValueSource(strings = {"before:NodeUnpublishVolume", "after:NodeUnpublishVolume", "before:NodeUnstageVolume",
      "after:NodeUnstageVolume", "done"})
  void killDuringOrAfterAnUnmount_finishesIt(String stop) throws Exception {
    runAndKill("mount", "done");
    runAndKill("unmount", stop);
    restartAndSettle(false);
    if (stop.equals("done")) {
      assertEquals(List.of(), recovered);
    } else {
      assertTrue(recovered.size() == 1 && recovered.get(0).contains("interrupted unmount for alloc a1"), recovered.toString());
    }
    assertFalse(Files.exists(target()));
    assertFalse(Files.exists(staging()));
    assertEquals(Map.of(), plugin.stagedPaths(), "unstaged");
    assertEquals(Map.of(), plugin.publishedPaths(), "unpublished");
    assertNoSecretOnDisk();
  }
}
