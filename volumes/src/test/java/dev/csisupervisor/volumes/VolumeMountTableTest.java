package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The journal against the mount table (a {@link FakeMountTable} that the client changes as a mounting driver
 * would): a reboot's lost mounts are redone at the same paths, an unmount is checked, allocations go on their
 * own, dead allocations are released, a gone node plugin can be forced, secrets stay out of the state.
 */
class VolumeMountTableTest extends MockNodeVolumeTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final VolumeCapability RWX = VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER);

  private VolumeManager restart() {
    kit.managers.forEach(VolumeManager::close);
    kit.managers.clear();
    return kit.manager();
  }

  private AllocPhase phase(VolumeManager m, String alloc) {
    return m.find("mock", vol).orElseThrow().usageOf(alloc).orElseThrow().allocs().get(alloc);
  }

  @Test
  void afterAReboot_everyRecordIsCheckedAndTheLostMountIsRedoneAtTheSamePaths() {
    VolumeManager first = kit.manager();
    MountedVolume m = kit.drive(first.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    assertTrue(kit.mounts.isMounted(m.targetPath()));
    assertTrue(kit.mounts.isMounted(m.stagingPath().orElseThrow()));
    FaultyClient client = kit.client("mock");
    int stages = client.calls("NodeStageVolume");
    int publishes = client.calls("NodePublishVolume");

    kit.mounts.reboot(); // the power cut: the kernel's mounts are gone, the journal and the plugin's state are not
    VolumeManager second = restart();
    assertTrue(second.recovered().stream().anyMatch(l -> l.contains("is not mounted") && l.contains("a1")),
        second.recovered().toString());
    // The plugin is ready at once: the lost mount is redone without waiting for the task.
    VolumeKit.await().until(() -> kit.mounts.isMounted(m.targetPath()));
    assertTrue(kit.mounts.isMounted(m.stagingPath().orElseThrow()));
    VolumeKit.await()
        .until(() -> phase(second, "a1") == AllocPhase.PUBLISHED && second.pending().isEmpty());
    assertEquals(stages + 1, client.calls("NodeStageVolume"));
    assertEquals(publishes + 1, client.calls("NodePublishVolume"));
    VolumeKit.await().until(() -> kit.events.stream() // reported after the commit its phase is read from
        .anyMatch(e -> e.kind() == VolumeEvent.Kind.REMOUNTED && e.allocId().equals("a1")));
    // The task's own mount after the restart: the same path, nothing called.
    assertEquals(m.targetPath(), kit.drive(second.mount(VolumeClaim.of("mock", vol, "a1", RWO, false))).targetPath());
    assertEquals(publishes + 1, client.calls("NodePublishVolume"));
  }

  @Test
  void aLostMountWhoseClaimHadMountFlags_waitsForTheClaim_thenIsRedoneWithIt() {
    VolumeCapability flagged = new VolumeCapability(VolumeCapability.AccessType.MOUNT, "", List.of("noatime"), "",
        AccessMode.SINGLE_NODE_WRITER);
    MountedVolume m = kit.drive(kit.manager().mount(VolumeClaim.of("mock", vol, "a1", flagged, false)));
    kit.mounts.reboot();
    VolumeManager second = restart();
    kit.scheduler.forwardTime(1, TimeUnit.SECONDS);
    VolumeKit.await()
        .until(() -> second.waitingFor().getOrDefault("mock/" + vol, "").contains("mount flags or secrets"));
    assertFalse(kit.mounts.isMounted(m.targetPath()));
    assertEquals(AllocPhase.LOST, phase(second, "a1"));
    assertEquals(m.targetPath(), kit.drive(second.mount(VolumeClaim.of("mock", vol, "a1", flagged, false))).targetPath());
    assertTrue(kit.mounts.isMounted(m.targetPath()));
    assertEquals(AllocPhase.PUBLISHED, phase(second, "a1"));
  }

  @Test
  void mountOfAPublishedAlloc_whoseTargetIsNoLongerMounted_mountsItAgain_beforeHandingItBack() {
    VolumeManager manager = kit.manager();
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    int publishes = kit.client("mock").calls("NodePublishVolume");
    kit.mounts.lose(m.targetPath()); // unmounted by hand behind the agent's back
    assertEquals(m.targetPath(), kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false))).targetPath());
    assertEquals(publishes + 1, kit.client("mock").calls("NodePublishVolume"));
    assertTrue(kit.mounts.isMounted(m.targetPath()));
    assertTrue(kit.events.stream().anyMatch(e -> e.kind() == VolumeEvent.Kind.LOST));
  }

  @Test
  void aNewAllocOfAStagedUsage_whoseStagingWasLost_isStagedAgainFirst() {
    VolumeManager manager = kit.manager();
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWX, false)));
    int stages = kit.client("mock").calls("NodeStageVolume");
    kit.mounts.lose(m.stagingPath().orElseThrow());
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a2", RWX, false)));
    assertEquals(stages + 1, kit.client("mock").calls("NodeStageVolume"), "never published from an empty staging");
    assertTrue(kit.mounts.isMounted(m.stagingPath().orElseThrow()));
  }

  @Test
  void anUnpublishAnsweringDoneOverALiveMount_staysPending_andSaysWhy() {
    VolumeManager manager = kit.manager();
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.client("mock").leavesMounts = true; // the plugin lost its state: "done", but the bind mount is there
    CompletableFuture<Void> unmount = manager.unmount("mock", vol, "a1");
    kit.scheduler.forwardTime(1, TimeUnit.SECONDS);
    VolumeKit.await()
        .until(() -> manager.waitingFor().getOrDefault("mock/" + vol, "").contains("still a mount point"));
    assertFalse(unmount.isDone());
    assertEquals(AllocPhase.UNPUBLISHING, phase(manager, "a1"));
    assertTrue(manager.waitingFor().get("mock/" + vol).contains(m.targetPath().toString()),
        manager.waitingFor().toString());
    kit.client("mock").leavesMounts = false;
    kit.drive(unmount);
    assertTrue(manager.list().isEmpty());
    assertEquals(Set.of(), kit.mounts.all());
  }

  @Test
  void twoAllocsOfOneVolume_oneTargetBusy_theOtherCompletes_andTheUnstageWaitsForTheLast() {
    VolumeManager manager = kit.manager();
    MountedVolume m1 = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWX, false)));
    MountedVolume m2 = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a2", RWX, false)));
    kit.mounts.pin(m1.targetPath()); // a1's target is busy: it stays mounted whatever the plugin says
    CompletableFuture<Void> u1 = manager.unmount("mock", vol, "a1");
    CompletableFuture<Void> u2 = manager.unmount("mock", vol, "a2");
    kit.drive(u2);
    assertFalse(u1.isDone(), "a1's target is still mounted");
    assertFalse(kit.mounts.isMounted(m2.targetPath()));
    assertTrue(kit.mounts.isMounted(m1.stagingPath().orElseThrow()), "no unstage while a1 is there");
    assertEquals(List.of("a1"), manager.find("mock", vol).orElseThrow().allocs());
    kit.mounts.unpin(m1.targetPath());
    kit.drive(u1);
    assertTrue(manager.list().isEmpty());
    assertEquals(Set.of(), kit.mounts.all());
  }

  @Test
  void retainAllocs_releasesEveryAllocationTheTaskRunnerNoLongerRuns() throws Exception {
    String other = kit.createVolume("mock", "v2");
    VolumeManager first = kit.manager();
    kit.drive(first.mount(VolumeClaim.of("mock", vol, "dead", RWO, false)));
    kit.drive(first.mount(VolumeClaim.of("mock", other, "live", RWO, false)));
    VolumeManager second = restart();
    assertEquals(List.of("dead"), kit.drive(second.retainAllocs(Set.of("live"))));
    assertEquals(Optional.empty(), second.find("mock", vol), "the dead alloc's claim and slot are gone");
    assertEquals(List.of("live"), second.find("mock", other).orElseThrow().allocs());
    // The single-writer volume is free for a new alloc.
    kit.drive(second.mount(VolumeClaim.of("mock", vol, "new", RWO, false)));
  }

  @Test
  void releaseAlloc_unmountsEveryVolumeOfTheAllocation() throws Exception {
    String other = kit.createVolume("mock", "v2");
    VolumeManager manager = kit.manager();
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.drive(manager.mount(VolumeClaim.of("mock", other, "a1", RWO, false)));
    assertEquals(List.of("mock/" + other, "mock/" + vol).stream().sorted().toList(),
        kit.drive(manager.releaseAlloc("a1", false)).stream().sorted().toList());
    assertTrue(manager.list().isEmpty());
  }

  @Test
  void forcedUnmount_withTheNodePluginGone_unmountsItself_thenDoesTheControllerSide() {
    kit.registerController("mock", VolumeKit.ALL_CONTROLLER_CAPS);
    VolumeManager manager = kit.manager();
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    assertEquals(ControllerState.PUBLISHED, manager.find("mock", vol).orElseThrow().controller());
    kit.setHealthy(PluginType.CSI_NODE, "mock", false); // the node plugin is gone for good

    CompletableFuture<Void> plain = manager.unmount("mock", vol, "a1");
    kit.scheduler.forwardTime(5, TimeUnit.SECONDS);
    VolumeKit.await()
        .until(() -> manager.waitingFor().getOrDefault("mock/" + vol, "").contains("waiting for node plugin mock"));
    assertFalse(plain.isDone());
    int unpublishes = kit.client("mock").calls("NodeUnpublishVolume");

    kit.drive(manager.unmount(UnmountRequest.of("mock", vol, "a1").forced()));
    kit.drive(plain);
    assertEquals(List.of(m.targetPath(), m.stagingPath().orElseThrow()), kit.mounts.agentUnmounts);
    assertEquals(unpublishes, kit.client("mock").calls("NodeUnpublishVolume"), "the node plugin was not called");
    assertEquals(1, kit.client("mock").calls("ControllerUnpublishVolume"));
    assertTrue(manager.list().isEmpty());
    assertFalse(Files.exists(m.targetPath()), "the empty target directory is removed");
  }

  @Test
  void aForcedUnmountThatCannotUnmount_staysPending_andSaysWhy() {
    VolumeManager manager = kit.manager();
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.setHealthy(PluginType.CSI_NODE, "mock", false);
    kit.mounts.unmountFailure = new IOException("umount: target is busy");
    CompletableFuture<Void> forced = manager.unmount(UnmountRequest.of("mock", vol, "a1").forced());
    kit.scheduler.forwardTime(1, TimeUnit.SECONDS);
    VolumeKit.await()
        .until(() -> manager.waitingFor().getOrDefault("mock/" + vol, "").contains("target is busy"));
    assertFalse(forced.isDone());
    assertTrue(manager.find("mock", vol).orElseThrow().forced());
    kit.mounts.unmountFailure = null;
    kit.drive(forced);
    assertTrue(manager.list().isEmpty());
  }

  @Test
  void theControllerStep_doesNotWaitForTheNodePlugin() {
    kit.registerController("mock", VolumeKit.ALL_CONTROLLER_CAPS);
    VolumeManager manager = kit.manager();
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.client("mock").fail("ControllerUnpublishVolume", dev.csisupervisor.client.StatusCode.INTERNAL, 1);
    CompletableFuture<Void> unmount = manager.unmount("mock", vol, "a1");
    // The node steps are done, the controller's retry waits on the fake clock (not moved: it would end the wait).
    VolumeKit.await()
        .until(() -> manager.find("mock", vol).map(r -> r.usages().isEmpty()).orElse(false));
    kit.setHealthy(PluginType.CSI_NODE, "mock", false); // only the controller step is left
    kit.drive(unmount);
    assertEquals(2, kit.client("mock").calls("ControllerUnpublishVolume"));
    assertTrue(manager.list().isEmpty());
  }

  @Test
  void controllerSecrets_fromAFile_areReadAgainWhenNeeded_andNeverWrittenToTheStateOrTheLog() throws Exception {
    Path stateDir = kit.dir.resolve("state");
    Files.createDirectories(stateDir);
    String secret = "s3cr3t-" + System.nanoTime();
    Path secretsFile = kit.dir.resolve("secrets");
    Files.writeString(secretsFile, "token=" + secret + "\n");
    PrintStream err = System.err;
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    try (StateStore journal = JournalStateStore.open(stateDir)) {
      kit.registerController("mock", VolumeKit.ALL_CONTROLLER_CAPS);
      System.setErr(new PrintStream(log, true, StandardCharsets.UTF_8));
      VolumeManager manager = kit.manager(kit.builder().stateStore(journal));
      kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)
          .withSecretsFile(Secrets.of(Map.of("token", secret)), secretsFile)));
      kit.setHealthy(PluginType.CSI_CONTROLLER, "mock", false);
      CompletableFuture<Void> unmount = manager.unmount(UnmountRequest.of("mock", vol, "a1"));
      kit.scheduler.forwardTime(1, TimeUnit.SECONDS);
      VolumeKit.await()
          .until(() -> manager.find("mock", vol).map(r -> r.usages().isEmpty()).orElse(false));
      assertEquals(Optional.of(secretsFile), manager.find("mock", vol).orElseThrow().secretsFile());
      kit.setHealthy(PluginType.CSI_CONTROLLER, "mock", true);
      kit.drive(unmount);
      manager.close();
    } finally {
      System.setErr(err);
    }
    ControllerUnpublishVolumeRequest sent = (ControllerUnpublishVolumeRequest) kit.plugins.get(0)
        .lastRequest("ControllerUnpublishVolume").orElseThrow();
    assertEquals(Map.of("token", secret), sent.getSecretsMap(), "read again from the file when the step came");
    try (Stream<Path> files = Files.walk(stateDir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        assertFalse(new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1).contains(secret), f.toString());
      }
    }
    assertFalse(log.toString(StandardCharsets.UTF_8).contains(secret), "never in the log");
    assertTrue(log.size() > 0, "the log was captured");
  }

  @Test
  void orphanMountsAreReported_listed_andRemovedOnlyWhenAsked_emptyOrphanDirectoriesAtStart() throws Exception {
    Path pluginDir = kit.socket("mock").getParent();
    Path orphan = pluginDir.resolve("per-alloc/gone/v9/mount-single-node-writer-rw");
    Files.createDirectories(orphan);
    kit.mounts.mount(orphan);
    Path emptyLeftover = pluginDir.resolve("per-alloc/old/v8/mount-single-node-writer-rw");
    Files.createDirectories(emptyLeftover);
    VolumeManager manager = kit.manager();
    assertTrue(manager.recovered().stream().anyMatch(l -> l.contains("orphan mount " + orphan)),
        manager.recovered().toString());
    assertFalse(Files.exists(pluginDir.resolve("per-alloc/old")), "empty directories no record names are removed");
    assertTrue(Files.exists(orphan), "an orphan mount is left until asked");
    assertEquals(List.of(new OrphanMount(orphan, false, Optional.empty())), kit.drive(manager.collectOrphans(false)));
    assertTrue(kit.mounts.isMounted(orphan));
    assertEquals(List.of(new OrphanMount(orphan, true, Optional.empty())), kit.drive(manager.collectOrphans(true)));
    assertFalse(kit.mounts.isMounted(orphan));
    assertFalse(Files.exists(pluginDir.resolve("per-alloc/gone")));
  }

  @Test
  void aMountTableThatCannotBeRead_atStart_isReported_andARecordedPathIsNotHandedBackUnchecked() {
    MountedVolume m = kit.drive(kit.manager().mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.mounts.readFailure = new IOException("EIO");
    VolumeManager second = restart();
    assertTrue(second.recovered().stream().anyMatch(l -> l.contains("mount table not read") && l.contains("EIO")),
        second.recovered().toString());
    VolumeException e = kit.failure(second.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    assertEquals(VolumeException.Reason.LOCAL_IO, e.reason(), e.getMessage());
    kit.mounts.readFailure = null;
    assertEquals(m.targetPath(), kit.drive(second.mount(VolumeClaim.of("mock", vol, "a1", RWO, false))).targetPath());
  }

  @Test
  void stagedUsageWithNoAllocAfterAReboot_isUnstaged_notRedone() {
    VolumeManager first = kit.manager();
    kit.drive(first.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.client("mock").fail("NodeUnstageVolume", dev.csisupervisor.client.StatusCode.INTERNAL, 1);
    CompletableFuture<Void> u = first.unmount("mock", vol, "a1");
    VolumeKit.await().until(() -> first.find("mock", vol)
        .map(r -> r.allocs().isEmpty() && r.stagings().values().iterator().next().state() == StageState.STAGED)
        .orElse(false));
    kit.mounts.reboot();
    VolumeManager second = restart();
    VolumeKit.await().until(() -> {
      kit.scheduler.forwardTime(1, TimeUnit.SECONDS);
      return second.list().isEmpty();
    });
  }
}
