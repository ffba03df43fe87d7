package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.volumes.VolumeClusterClaimsTest.RecordingClaims;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A node in a cluster restarted after a reboot, its journal holding a mount the kernel no longer has (issue 35 item
 * 2): the lost mount is done again only while its cluster claim stands ({@link ClusterClaims#stillClaimed}). A claim
 * gone (fenced past {@code detach_after}, or forced by an operator) means the disk may be another node's now: no
 * NodeStageVolume or NodePublishVolume is sent, the volume says FENCED, and the cluster's sweep unmounts it.
 */
class VolumeFencedLostMountTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final VolumeCapability SHARED = VolumeCapability.mount(AccessMode.SINGLE_NODE_MULTI_WRITER);

  /** {@link RecordingClaims} that also answers whether a claim stands: gone for {@link #gone}, unknown if set. */
  static final class CheckedClaims extends RecordingClaims {
    final List<String> asked = new CopyOnWriteArrayList<>();
    volatile Set<String> gone = Set.of();
    volatile RuntimeException unreadable;

    @Override
    public CompletableFuture<Boolean> stillClaimed(String pluginId, String volumeId, String allocId) {
      asked.add(volumeId + " " + allocId);
      RuntimeException e = unreadable;
      return e != null ? CompletableFuture.failedFuture(e) : CompletableFuture.completedFuture(!gone.contains(allocId));
    }
  }

  private VolumeKit kit;
  private final CheckedClaims claims = new CheckedClaims();
  private String vol;

  @BeforeEach
  void setUp() throws Exception {
    kit = VolumeKit.withMonolith("mono");
    vol = kit.createVolume("mono", "fenced");
  }

  @AfterEach
  void tearDown() {
    kit.close();
  }

  private VolumeManager start() {
    VolumeManager m = kit.manager(kit.builder().clusterClaims(claims));
    claims.manager = m;
    return m;
  }

  /** The power cut: the kernel's mounts are gone, the journal and the plugin's state are not; a new manager. */
  private VolumeManager rebootAndRestart() {
    kit.mounts.reboot();
    kit.managers.forEach(VolumeManager::close);
    kit.managers.clear();
    return start();
  }

  /** Waits until {@code done}, moving fake time on by 1 s per look (so the restart's settle and retries run). */
  private void until(Callable<Boolean> done) {
    VolumeKit.await().until(() -> {
      if (done.call()) {
        return true;
      }
      kit.scheduler.forwardTime(1, TimeUnit.SECONDS);
      return false;
    });
  }

  private AllocPhase phase(VolumeManager m, String alloc) {
    return m.find("mono", vol).orElseThrow().usageOf(alloc).orElseThrow().allocs().get(alloc);
  }

  /** Whose claims were asked about (each settle of the volume asks again). */
  private List<String> asked() {
    return claims.asked.stream().distinct().sorted().toList();
  }

  private String waiting(VolumeManager m) {
    return m.waitingFor().getOrDefault("mono/" + vol, "");
  }

  /** The stage and publish calls made before the reboot. */
  private int stagesBefore;
  private int publishesBefore;

  /** Mounts {@code allocs} through a first manager; notes the calls made so far. */
  private List<MountedVolume> mounted(VolumeCapability capability, String... allocs) {
    VolumeManager first = start();
    List<MountedVolume> out = new ArrayList<>();
    for (String alloc : allocs) {
      out.add(kit.drive(first.mount(VolumeClaim.of("mono", vol, alloc, capability, false))));
    }
    stagesBefore = kit.client("mono").calls("NodeStageVolume");
    publishesBefore = kit.client("mono").calls("NodePublishVolume");
    return out;
  }

  /** NodeStageVolume calls since {@link #mounted}. */
  private int stagesSince() {
    return kit.client("mono").calls("NodeStageVolume") - stagesBefore;
  }

  /** NodePublishVolume calls since {@link #mounted}. */
  private int publishesSince() {
    return kit.client("mono").calls("NodePublishVolume") - publishesBefore;
  }

  private String calls() {
    return kit.client("mono").log().toString();
  }

  @Test
  void afterAReboot_aLostMountWhoseClaimIsGone_isNotDoneAgain_saysFenced_andIsUnmountedBySweep() {
    MountedVolume m = mounted(RWO, "a1").get(0);
    claims.gone = Set.of("a1"); // fenced past detach_after (or detach --force) while the node was down

    VolumeManager second = rebootAndRestart();
    // Settled either way: said FENCED, or (were the claim not asked about) mounted again.
    until(() -> waiting(second).contains("FENCED") || phase(second, "a1") == AllocPhase.PUBLISHED);
    assertEquals(List.of(vol + " a1"), asked(), "asked at each settle, never redone");
    assertTrue(kit.events.stream().anyMatch(e -> e.kind() == VolumeEvent.Kind.PENDING && e.message().contains("FENCED")),
        "the restart's first settle (during build) is heard by a listener given to the builder: " + kit.events);
    assertEquals(0, stagesSince(), "no staging for a claim that is gone: " + calls());
    assertEquals(0, publishesSince(), "no publish for a claim that is gone: " + calls());
    assertFalse(kit.mounts.isMounted(m.targetPath()));
    assertFalse(kit.mounts.isMounted(m.stagingPath().orElseThrow()));
    assertEquals(AllocPhase.LOST, phase(second, "a1"));
    assertTrue(waiting(second).contains("alloc(s) [a1] is not done again: its cluster claim is gone (FENCED)"),
        waiting(second));
    assertFalse(kit.events.stream().anyMatch(e -> e.kind() == VolumeEvent.Kind.REMOUNTED), kit.events.toString());

    // The cluster's sweep (ClusterVolumeClaims) unmounts what its claim no longer covers.
    kit.drive(second.unmount(UnmountRequest.of("mono", vol, "a1")));
    assertTrue(second.find("mono", vol).isEmpty(), "the record ends unmounted: " + second.list());
    assertEquals(0, stagesSince(), calls());
    assertEquals(0, publishesSince(), calls());
    assertEquals(Set.of(), kit.mounts.all());
    VolumeKit.await().until(() -> kit.events.stream() // heard just after the unmount's caller is told
        .anyMatch(e -> e.kind() == VolumeEvent.Kind.UNMOUNTED && e.allocId().equals("a1")));
    assertEquals("", waiting(second));
  }

  @Test
  void afterAReboot_aLostMountWhoseClaimStands_isDoneAgain() {
    MountedVolume m = mounted(RWO, "a1").get(0);

    VolumeManager second = rebootAndRestart();
    until(() -> phase(second, "a1") == AllocPhase.PUBLISHED && second.pending().isEmpty());
    assertEquals(List.of(vol + " a1"), asked(), "the claim was asked about before the mount was redone");
    assertEquals(1, stagesSince(), calls());
    assertEquals(1, publishesSince(), calls());
    assertTrue(kit.mounts.isMounted(m.targetPath()));
    until(() -> kit.events.stream() // reported after the commit its phase is read from
        .anyMatch(e -> e.kind() == VolumeEvent.Kind.REMOUNTED && e.allocId().equals("a1")));
    assertFalse(waiting(second).contains("FENCED"), waiting(second));
  }

  @Test
  void afterAReboot_whenTheClusterCannotSayWhetherTheClaimStands_theMountIsDoneAgain() {
    MountedVolume m = mounted(RWO, "a1").get(0);
    claims.unreadable = new IllegalStateException("etcd unreachable");

    VolumeManager second = rebootAndRestart();
    until(() -> phase(second, "a1") == AllocPhase.PUBLISHED && second.pending().isEmpty());
    assertEquals(List.of(vol + " a1"), asked());
    assertEquals(1, publishesSince(), "the node keeps its mounts: " + calls());
    assertTrue(kit.mounts.isMounted(m.targetPath()));
  }

  @Test
  void afterAReboot_twoAllocsOfOneStaging_onlyTheOneStillClaimedIsDoneAgain() {
    List<MountedVolume> m = mounted(SHARED, "a1", "a2");
    claims.gone = Set.of("a1");

    VolumeManager second = rebootAndRestart();
    until(() -> phase(second, "a2") == AllocPhase.PUBLISHED
        && (waiting(second).contains("FENCED") || phase(second, "a1") == AllocPhase.PUBLISHED));
    assertEquals(List.of(vol + " a1", vol + " a2"), asked());
    assertEquals(1, stagesSince(), "the staging, once, for a2: " + calls());
    assertEquals(1, publishesSince(), "a2 only: " + calls());
    assertTrue(kit.mounts.isMounted(m.get(1).targetPath()));
    assertFalse(kit.mounts.isMounted(m.get(0).targetPath()));
    assertEquals(AllocPhase.LOST, phase(second, "a1"));
    assertTrue(waiting(second).contains("[a1]"), waiting(second));

    kit.drive(second.unmount(UnmountRequest.of("mono", vol, "a1")));
    assertTrue(second.find("mono", vol).orElseThrow().usageOf("a1").isEmpty());
    assertEquals(AllocPhase.PUBLISHED, phase(second, "a2"));
    assertTrue(kit.mounts.isMounted(m.get(1).targetPath()), "a2's mount stays");
    assertEquals(1, publishesSince(), calls());
  }
}
