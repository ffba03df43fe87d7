package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** What a restart finds, and unmounts whose plugin is away: nothing is lost, nothing is left behind. */
class VolumeRecoveryTest extends MockNodeVolumeTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final VolumeUsage USAGE = new VolumeUsage(VolumeCapability.AccessType.MOUNT,
      AccessMode.SINGLE_NODE_WRITER, false);


  /** A record as a crash at a given step leaves it. */
  private void crashedAt(StageState stage, Map<String, AllocPhase> allocs) {
    VolumeRecord r = VolumeRecord.empty(new VolumeKey("mock", vol), kit.socket("mock").getParent());
    String name = stage == StageState.NOT_STAGED ? "" : r.stagingNameFor(USAGE);
    r = r.withUsage(new UsageRecord(USAGE, RWO, name, new TreeMap<>(allocs), false));
    if (!name.isEmpty()) {
      r = r.withStaging(name, new VolumeRecord.Staging(stage, false, VolumeRecord.compatibility(RWO)));
    }
    store.put(r.key().storeKey(), VolumeRecordCodec.encode(r));
  }

  @Test
  void finishedMount_staysAcrossARestart_withoutAnyCall() {
    VolumeManager first = kit.manager();
    MountedVolume m = kit.drive(first.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    first.close();
    int publishes = kit.client("mock").calls("NodePublishVolume");

    VolumeManager second = kit.manager();
    assertEquals(List.of("a1"), second.find("mock", vol).orElseThrow().allocs());
    assertTrue(second.recovered().isEmpty(), second.recovered().toString());
    assertEquals(m.targetPath(), kit.drive(second.mount(VolumeClaim.of("mock", vol, "a1", RWO, false))).targetPath());
    assertEquals(publishes, kit.client("mock").calls("NodePublishVolume"), "idempotent across the restart");
  }

  @Test
  void mountInterruptedBeforeOrAfterItsCalls_isRolledBack_andReported() throws Exception {
    // The stage and publish happened (or not: unpublish and unstage are idempotent), the result was never written.
    kit.drive(kit.manager().mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.managers.forEach(VolumeManager::close);
    crashedAt(StageState.STAGING, Map.of("a1", AllocPhase.PUBLISHING));

    VolumeManager m = kit.manager();
    assertTrue(m.recovered().get(0).contains("interrupted mount for alloc a1"), m.recovered().toString());
    VolumeKit.await().until(() -> m.find("mock", vol).isEmpty());
    assertFalse(Files.exists(kit.socket("mock").getParent().resolve("per-alloc/a1")));
    // Reported once the commit is done, after the record is gone: its listeners hear of it just after.
    VolumeKit.await().until(() -> kit.events.stream()
        .anyMatch(e -> e.kind() == VolumeEvent.Kind.ROLLED_BACK && e.allocId().equals("a1")));
  }

  @Test
  void interruptedPublishOfASecondAlloc_rollsBackOnlyThatAlloc_andKeepsTheStaging() {
    VolumeManager first = kit.manager();
    kit.drive(first.mount(VolumeClaim.of("mock", vol, "a1", VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER), false)));
    first.close();
    VolumeUsage multi = new VolumeUsage(VolumeCapability.AccessType.MOUNT, AccessMode.MULTI_NODE_MULTI_WRITER, false);
    VolumeRecord r = first.find("mock", vol).orElseThrow();
    r = r.withUsage(r.usages().get(multi).withAlloc("a2", AllocPhase.PUBLISHING));
    store.put(r.key().storeKey(), VolumeRecordCodec.encode(r));
    int unstages = kit.client("mock").calls("NodeUnstageVolume");

    VolumeManager m = kit.manager();
    VolumeKit.await().until(() -> !m.find("mock", vol).orElseThrow().hasWork());
    assertEquals(List.of("a1"), m.find("mock", vol).orElseThrow().allocs());
    VolumeRecord found = m.find("mock", vol).orElseThrow();
    assertEquals(StageState.STAGED, found.stageOf(found.usages().get(multi)));
    assertEquals(unstages, kit.client("mock").calls("NodeUnstageVolume"), "a1 still uses the staging");
  }

  @Test
  void interruptedUnmount_isFinishedAfterTheRestart() {
    VolumeManager first = kit.manager();
    MountedVolume mv = kit.drive(first.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    first.close();
    crashedAt(StageState.STAGED, Map.of("a1", AllocPhase.UNPUBLISHING));

    VolumeManager m = kit.manager();
    assertTrue(m.recovered().get(0).contains("interrupted unmount for alloc a1"), m.recovered().toString());
    VolumeKit.await().until(() -> m.find("mock", vol).isEmpty());
    assertFalse(Files.exists(mv.targetPath()));
  }

  @Test
  void recoveryWaitsForThePlugin_untilItIsConfirmedRunning() {
    crashedAt(StageState.STAGING, Map.of("a1", AllocPhase.PUBLISHING));
    kit.setHealthy(PluginType.CSI_NODE, "mock", false);
    VolumeManager m = kit.manager();
    kit.scheduler.forwardTime(java.time.Duration.ofMinutes(5));
    assertTrue(m.find("mock", vol).orElseThrow().hasWork(), "pending while the plugin is unhealthy");
    assertEquals(1, m.pending().size());
    kit.setHealthy(PluginType.CSI_NODE, "mock", true);
    VolumeKit.await().until(() -> m.find("mock", vol).isEmpty());
  }

  @Test
  void unmountWhosePluginIsGone_staysPending_andCompletesWhenItIsBack() {
    VolumeManager m = kit.manager();
    kit.drive(m.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.registry.deregister(PluginType.CSI_NODE, "mock", "alloc-mock");

    CompletableFuture<Void> unmount = m.unmount("mock", vol, "a1");
    // The intent is committed on the commit thread, then the unmount finds the plugin gone: an event.
    VolumeKit.await()
        .until(() -> kit.events.stream().anyMatch(e -> e.kind() == VolumeEvent.Kind.PENDING));
    kit.scheduler.forwardTime(java.time.Duration.ofHours(1));
    assertFalse(unmount.isDone(), "never dropped, never failed for an absent plugin");
    assertEquals(AllocPhase.UNPUBLISHING, m.find("mock", vol).orElseThrow().usageOf("a1").orElseThrow().allocs().get("a1"));

    kit.registerNode("mock");
    kit.drive(unmount);
    assertTrue(m.find("mock", vol).isEmpty());
  }

  @Test
  void unmountThatKeepsFailing_isRetriedWithBackoff_untilItWorks() {
    VolumeManager m = kit.manager();
    kit.drive(m.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.client("mock").fail("NodeUnpublishVolume", StatusCode.INTERNAL, 4);
    CompletableFuture<Void> unmount = m.unmount("mock", vol, "a1");
    kit.drive(unmount);
    assertEquals(5, kit.client("mock").calls("NodeUnpublishVolume"));
    assertTrue(m.find("mock", vol).isEmpty());
  }

  @Test
  void unmountSurvivesARestart_whileItsPluginIsAway() {
    VolumeManager first = kit.manager();
    kit.drive(first.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.registry.deregister(PluginType.CSI_NODE, "mock", "alloc-mock");
    first.unmount("mock", vol, "a1");
    VolumeKit.await().until(() -> first.find("mock", vol).orElseThrow()
        .usageOf("a1").orElseThrow().allocs().get("a1") == AllocPhase.UNPUBLISHING);
    first.close();

    VolumeManager second = kit.manager();
    assertEquals(1, second.pending().size());
    kit.registerNode("mock");
    VolumeKit.await().until(() -> second.find("mock", vol).isEmpty());
  }

  @Test
  void failedCommit_failsTheMount_andCallsNothing() {
    VolumeManager m = kit.manager();
    kit.drive(m.unmount("mock", vol, "x"));
    store.failNextCommits(1);
    VolumeException e = kit.failure(m.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    assertEquals(VolumeException.Reason.STATE_ERROR, e.reason());
    assertTrue(kit.client("mock") == null || kit.client("mock").calls("NodeStageVolume") == 0);
    assertTrue(m.find("mock", vol).isEmpty());
    kit.drive(m.mount(VolumeClaim.of("mock", vol, "a1", RWO, false))); // works again without a restart
  }

  @Test
  void unreadableRecord_isSkipped_reported_andLeftInTheStore() {
    store.put("volume/mock/broken", new byte[] {9, 9, 9});
    VolumeManager m = kit.manager();
    assertTrue(m.recovered().get(0).contains("volume/mock/broken skipped"), m.recovered().toString());
    assertTrue(store.get("volume/mock/broken").isPresent());
    assertEquals(Optional.empty(), m.find("mock", "broken"));
  }

  @Test
  void pluginKilledDuringAMount_leavesNothingInFlight_onceARestartedPluginIsBack() throws Exception {
    VolumeManager m = kit.manager();
    kit.drive(m.unmount("mock", vol, "none"));
    dev.csisupervisor.mockplugin.MockCsiPlugin first = kit.plugins.get(0);
    first.setLatency(java.time.Duration.ofSeconds(30)); // the stage call stays in flight
    CompletableFuture<MountedVolume> mount = m.mount(VolumeClaim.of("mock", vol, "a1", RWO, false));
    VolumeKit.await()
        .until(() -> kit.client("mock") != null && kit.client("mock").calls("NodeStageVolume") == 1);
    first.crash();
    VolumeException e = kit.failure(mount);
    assertEquals(VolumeException.Reason.CSI_ERROR, e.reason());
    assertTrue(m.find("mock", vol).orElseThrow().hasWork(), "the rollback waits for the plugin");

    kit.startPlugin("mock"); // restarted: a new process on the same socket
    kit.setHealthy(PluginType.CSI_NODE, "mock", false); // what the supervisor reports on the way
    kit.setHealthy(PluginType.CSI_NODE, "mock", true);
    VolumeKit.await().until(() -> {
      kit.scheduler.forwardTime(1, java.util.concurrent.TimeUnit.SECONDS);
      return m.find("mock", vol).isEmpty();
    });
    assertEquals(Map.of(), kit.plugins.get(1).stagedPaths());
    assertEquals(Map.of(), kit.plugins.get(1).publishedPaths());
  }

  @Test
  void pluginKilledBeforeAnUnmount_keepsItPending_andARestartedPluginFinishesIt() throws Exception {
    VolumeManager m = kit.manager();
    kit.drive(m.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.plugins.get(0).crash();
    CompletableFuture<Void> unmount = m.unmount("mock", vol, "a1");
    // Every try fails (refused); the pending unmount is tried again and again, never dropped.
    VolumeKit.await().until(() -> {
      kit.scheduler.forwardTime(1, java.util.concurrent.TimeUnit.SECONDS);
      return kit.client("mock").calls("NodeUnpublishVolume") >= 6;
    });
    assertFalse(unmount.isDone());

    kit.startPlugin("mock");
    kit.setHealthy(PluginType.CSI_NODE, "mock", false);
    kit.setHealthy(PluginType.CSI_NODE, "mock", true);
    kit.drive(unmount);
    assertTrue(m.find("mock", vol).isEmpty());
  }

  @Test
  void aPendingUnmount_goesOnTheMomentItsPluginIsRegisteredAgain_withoutARestart() throws Exception {
    VolumeManager m = kit.manager();
    kit.drive(m.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    String other = kit.createVolume("mock", "other");
    kit.drive(m.mount(VolumeClaim.of("mock", other, "a2", RWO, false))); // no work: not settled again
    kit.registry.deregister(PluginType.CSI_NODE, "mock", "alloc-mock");
    CompletableFuture<Void> unmount = m.unmount("mock", vol, "a1");
    VolumeKit.await().until(() -> m.find("mock", vol).orElseThrow()
        .usageOf("a1").orElseThrow().allocs().get("a1") == AllocPhase.UNPUBLISHING);
    // The fake clock is never moved here: only the plugin's readiness can finish the unmount.
    kit.registerNode("mock");
    VolumeKit.await().until(unmount::isDone);
    unmount.join();
    assertTrue(m.find("mock", vol).isEmpty());
    assertEquals(AllocPhase.PUBLISHED, m.find("mock", other).orElseThrow().usageOf("a2").orElseThrow().allocs()
        .get("a2"), "the volume without work is left as it was");
  }

  @Test
  void pluginKilledInTheMiddleOfAPublish_andRestartedWithItsState_letsTheRetriedMountSucceed() throws Exception {
    // A driver that keeps its state on disk, as hostpath does in its --statedir.
    java.nio.file.Path state = kit.dir.resolve("driver-state");
    kit.plugins.get(0).close();
    kit.plugins.clear();
    MockCsiPlugin first = kit.startPlugin("mock", b -> b.stateFile(state));
    String v = kit.createVolume("mock", "durable");
    VolumeManager m = kit.manager();
    first.delayCalls("NodePublishVolume", java.time.Duration.ofSeconds(30)); // in flight when the plugin dies
    CompletableFuture<MountedVolume> mount = m.mount(VolumeClaim.of("mock", v, "a1", RWO, false));
    VolumeKit.await()
        .until(() -> kit.client("mock") != null && kit.client("mock").calls("NodePublishVolume") == 1);
    first.crash();
    // The publish fails as a lost connection (transient): retried with backoff while the plugin restarts.
    MockCsiPlugin second = kit.startPlugin("mock", b -> b.stateFile(state));
    MountedVolume mounted = kit.drive(mount);
    assertEquals(v, mounted.volumeId());
    assertTrue(kit.client("mock").calls("NodePublishVolume") >= 2, "the publish was sent again");
    assertEquals(Map.of(v, java.util.Set.of(mounted.stagingPath().orElseThrow().toString())), second.stagedPaths());
    assertEquals(Map.of(v, java.util.Set.of(mounted.targetPath().toString())), second.publishedPaths());
    assertFalse(m.find("mock", v).orElseThrow().hasWork());
  }

  @Test
  void recordsReadAheadOfTheRegistry_areWhatTheManagerRestores() {
    crashedAt(StageState.STAGED, Map.of("a1", AllocPhase.PUBLISHED));
    Map<String, byte[]> records = store.loadAll(VolumeManager.STORE_PREFIX);
    store.put("volume/mock/not-read", VolumeRecordCodec.encode(VolumeRecord.empty(new VolumeKey("mock", "x"),
        kit.socket("mock").getParent())));
    VolumeManager m = kit.manager(kit.builder().records(records));
    assertEquals(List.of(vol), m.list().stream().map(VolumeRecord::volumeId).toList(), "the given records only");
  }
}
