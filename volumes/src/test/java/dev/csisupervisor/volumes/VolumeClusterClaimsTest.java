package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The manager in a cluster ({@link ClusterClaims}): the claim first, the cluster's publish context instead of a
 * controller call here, and the claim released only after the allocation is off the volume on this node.
 */
class VolumeClusterClaimsTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);

  /** Records what the manager asks; answers with a publish context, or refuses. */
  static class RecordingClaims implements ClusterClaims {
    final List<String> log = new ArrayList<>();
    volatile String refuse;
    volatile Map<String, String> context = Map.of("device", "/dev/cloud-1");
    volatile VolumeManager manager;

    @Override
    public synchronized CompletableFuture<Optional<Map<String, String>>> acquire(VolumeClaim claim) {
      if (refuse != null) {
        return CompletableFuture.failedFuture(new CompletionException(new IllegalStateException(refuse)));
      }
      log.add("acquire " + claim.volumeId() + " " + claim.allocId());
      return CompletableFuture.completedFuture(Optional.of(context));
    }

    @Override
    public synchronized void released(String pluginId, String volumeId, String allocId) {
      // What the node holds when the release is asked for: the allocation must be gone from the record.
      boolean stillHeld = manager.find(pluginId, volumeId).flatMap(r -> r.usageOf(allocId)).isPresent();
      boolean staged = manager.find(pluginId, volumeId).map(r -> r.allocs().isEmpty() && !r.stagings().isEmpty())
          .orElse(false);
      log.add("release " + volumeId + " " + allocId + (stillHeld ? " WHILE STILL MOUNTED" : "")
          + (staged ? " WHILE STILL STAGED" : ""));
    }

    synchronized List<String> log() {
      return List.copyOf(log);
    }
  }

  private VolumeKit kit;
  private VolumeManager manager;
  private final RecordingClaims claims = new RecordingClaims();

  @BeforeEach
  void setUp() throws Exception {
    kit = VolumeKit.withMonolith("mono");
    manager = kit.manager(kit.builder().clusterClaims(claims));
    claims.manager = manager;
  }

  @AfterEach
  void tearDown() {
    kit.close();
  }

  @Test
  void clusterMount_usesTheClustersPublishContext_andNoControllerCallHere() throws Exception {
    String vol = kit.createVolume("mono", "d1");
    kit.drive(manager.mount(VolumeClaim.of("mono", vol, "a1", RWO, false)));
    assertEquals(0, kit.client("mono").calls("ControllerPublishVolume"), kit.client("mono").log().toString());
    assertEquals(1, kit.client("mono").calls("NodeStageVolume"));
    assertEquals(Map.of("device", "/dev/cloud-1"), manager.find("mono", vol).orElseThrow().publishContext());
    assertEquals(List.of("acquire " + vol + " a1"), claims.log());

    List<String> atCompletion = kit.drive(manager.unmount("mono", vol, "a1").thenApply(x -> claims.log()));
    assertEquals(0, kit.client("mono").calls("ControllerUnpublishVolume"), "the cluster's controller agent unpublishes");
    assertEquals(List.of("acquire " + vol + " a1", "release " + vol + " a1"), atCompletion,
        "the release is asked before the unmount's caller learns it is done");
  }

  @Test
  void secondAllocation_releasesOnlyItsOwnClaim() throws Exception {
    String vol = kit.createVolume("mono", "d2");
    VolumeCapability rwx = VolumeCapability.mount(AccessMode.SINGLE_NODE_MULTI_WRITER);
    kit.drive(manager.mount(VolumeClaim.of("mono", vol, "a1", rwx, false)));
    kit.drive(manager.mount(VolumeClaim.of("mono", vol, "a2", rwx, false)));
    List<String> atCompletion = kit.drive(manager.unmount("mono", vol, "a1").thenApply(x -> claims.log()));
    assertEquals(List.of("acquire " + vol + " a1", "acquire " + vol + " a2", "release " + vol + " a1"), atCompletion);
    atCompletion = kit.drive(manager.unmount("mono", vol, "a2").thenApply(x -> claims.log()));
    assertEquals("release " + vol + " a2", atCompletion.get(3));
  }

  @Test
  void refusedClaim_failsTheMountBeforeAnyCall_andReleasesNothing() throws Exception {
    String vol = kit.createVolume("mono", "d3");
    claims.refuse = "claim refused: held by node n2, alloc b7 as SINGLE_NODE_WRITER";
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mono", vol, "a1", RWO, false)));
    assertEquals(VolumeException.Reason.CLUSTER_REFUSED, e.reason());
    assertTrue(e.getMessage().contains("node n2, alloc b7"), e.getMessage());
    assertEquals(List.of(), kit.client("mono").log(), "no CSI call was made");
    assertEquals(List.of(), claims.log());
    assertTrue(manager.list().isEmpty());
  }

  @Test
  void failedMount_isUndoneFirst_thenItsClaimReleased() throws Exception {
    String warm = kit.createVolume("mono", "d0");
    kit.drive(manager.mount(VolumeClaim.of("mono", warm, "a0", RWO, false))); // the plugin's client is open
    String vol = kit.createVolume("mono", "d4");
    kit.client("mono").fail("NodePublishVolume", StatusCode.INVALID_ARGUMENT, 1);
    kit.failure(manager.mount(VolumeClaim.of("mono", vol, "a1", RWO, false)));
    VolumeKit.await().until(() -> claims.log().size() >= 3);
    // Released after the rollback (by its event, and again, idempotently, as the mount's failure ends).
    assertEquals(List.of("acquire " + warm + " a0", "acquire " + vol + " a1", "release " + vol + " a1"),
        claims.log().stream().distinct().toList());
    assertEquals(1, kit.client("mono").calls("NodeUnstageVolume"), "unstaged before the release");
  }

  @Test
  void aFailingUnstage_keepsTheLastClaim_untilTheVolumeIsUnstaged() throws Exception {
    String vol = kit.createVolume("mono", "busy");
    kit.drive(manager.mount(VolumeClaim.of("mono", vol, "a1", RWO, false)));
    kit.client("mono").fail("NodeUnstageVolume", StatusCode.INTERNAL, 2); // "target is busy", twice
    // Done once the unstage, retried, succeeded; the log as it is when the caller learns that.
    List<String> atCompletion = kit.drive(manager.unmount("mono", vol, "a1").thenApply(x -> claims.log()));
    assertEquals(3, kit.client("mono").calls("NodeUnstageVolume"));
    assertEquals(List.of("acquire " + vol + " a1", "release " + vol + " a1"), atCompletion,
        "released once, after the unstage (CSI: the controller unpublish follows every node unstage), and before the"
            + " unmount's caller learns it is done");
  }

  @Test
  void aSecondAllocationsClaim_goesAtItsUnpublish_theLastOneAfterTheUnstage() throws Exception {
    String vol = kit.createVolume("mono", "two");
    VolumeCapability rwx = VolumeCapability.mount(AccessMode.SINGLE_NODE_MULTI_WRITER);
    kit.drive(manager.mount(VolumeClaim.of("mono", vol, "a1", rwx, false)));
    kit.drive(manager.mount(VolumeClaim.of("mono", vol, "a2", rwx, false)));
    kit.client("mono").fail("NodeUnstageVolume", StatusCode.INTERNAL, 1);
    List<String> atCompletion = kit.drive(manager.unmount("mono", vol, "a1").thenApply(x -> claims.log()));
    assertEquals("release " + vol + " a1", atCompletion.get(2), "a2 still uses the volume: a1's claim goes now");
    atCompletion = kit.drive(manager.unmount("mono", vol, "a2").thenApply(x -> claims.log()));
    assertEquals(List.of("acquire " + vol + " a1", "acquire " + vol + " a2", "release " + vol + " a1",
        "release " + vol + " a2"), atCompletion);
  }
}
