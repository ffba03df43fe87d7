package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.VolumeCapability;
import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Two mock plugins (two nodes) sharing one cloud file: disks, attachments, one node per single-node disk. */
class SharedCloudTest {
  @TempDir
  Path dir;

  private MockCsiPlugin a;
  private MockCsiPlugin b;
  private Csi ca;
  private Csi cb;

  @AfterEach
  void close() {
    for (AutoCloseable c : new AutoCloseable[] {ca, cb, a, b}) {
      try {
        if (c != null) {
          c.close();
        }
      } catch (Exception ignored) {
        // closing
      }
    }
  }

  private MockCsiPlugin plugin(String node, Duration attach) throws Exception {
    Files.createDirectories(dir.resolve(node));
    return MockCsiPlugin.builder().socket(dir.resolve(node).resolve("csi.sock")).allCapabilities().nodeId(node)
        .cloud(dir.resolve("cloud"), attach).start();
  }

  private static VolumeCapability mode(VolumeCapability.AccessMode.Mode m) {
    return VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.getDefaultInstance())
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(m)).build();
  }

  private static ControllerPublishVolumeRequest publish(String vol, String node, VolumeCapability.AccessMode.Mode m) {
    return ControllerPublishVolumeRequest.newBuilder().setVolumeId(vol).setNodeId(node).setVolumeCapability(mode(m))
        .build();
  }

  @Test
  void singleNodeDisk_attachesToOneNodeAtATime_fromAnyController() throws Exception {
    a = plugin("na", Duration.ZERO);
    b = plugin("nb", Duration.ofMillis(20));
    ca = new Csi(a.socket());
    cb = new Csi(b.socket());
    String vol = ca.controller().createVolume(CreateVolumeRequest.newBuilder().setName("disk")
        .addVolumeCapabilities(mode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build()).getVolume().getVolumeId();
    var rwo = VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER;

    // a's controller attaches it to b's node; b's controller (another process) cannot attach it to a's.
    ca.controller().controllerPublishVolume(publish(vol, "nb", rwo));
    ca.controller().controllerPublishVolume(publish(vol, "nb", rwo)); // idempotent
    assertEquals(Status.Code.FAILED_PRECONDITION, codeOf(() -> cb.controller().controllerPublishVolume(publish(vol, "na", rwo))));
    SharedCloud cloud = new SharedCloud(dir.resolve("cloud"), Duration.ZERO);
    assertEquals(Set.of("nb"), cloud.attachedTo(vol));

    // b's node stages a disk its own process never made: the cloud has it.
    Path staging = Files.createDirectories(dir.resolve("nb-staging"));
    cb.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(mode(rwo)).build());

    cb.controller().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setNodeId("nb").build());
    cb.controller().controllerPublishVolume(publish(vol, "na", rwo));
    assertEquals(Set.of("na"), cloud.attachedTo(vol));
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> ca.controller().controllerPublishVolume(publish("no-such", "na", rwo))));
  }

  @Test
  void multiNodeDisk_attachesToMany() throws Exception {
    a = plugin("na", Duration.ZERO);
    b = plugin("nb", Duration.ZERO);
    ca = new Csi(a.socket());
    cb = new Csi(b.socket());
    var rox = VolumeCapability.AccessMode.Mode.MULTI_NODE_READER_ONLY;
    String vol = ca.controller().createVolume(CreateVolumeRequest.newBuilder().setName("shared")
        .addVolumeCapabilities(mode(rox)).build()).getVolume().getVolumeId();
    ca.controller().controllerPublishVolume(publish(vol, "na", rox).toBuilder().setReadonly(true).build());
    cb.controller().controllerPublishVolume(publish(vol, "nb", rox).toBuilder().setReadonly(true).build());
    assertEquals(Set.of("na", "nb"), new SharedCloud(dir.resolve("cloud"), Duration.ZERO).attachedTo(vol));
  }

  @Test
  void badAttachTime_isNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> MockCsiPlugin.builder().cloud(dir.resolve("cloud"), Duration.ofMillis(-1)));
    assertTrue(e.getMessage().contains("attachTime"), e.getMessage());
  }

  private static CreateVolumeRequest create(String name) {
    return CreateVolumeRequest.newBuilder().setName(name)
        .addVolumeCapabilities(mode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build();
  }

  @Test
  void createByName_inAnotherProcess_answersTheSameDisk_andIdsComeFromTheCloud() throws Exception {
    a = plugin("na", Duration.ZERO);
    b = plugin("nb", Duration.ZERO);
    ca = new Csi(a.socket());
    cb = new Csi(b.socket());
    String x = ca.controller().createVolume(create("x")).getVolume().getVolumeId();
    assertEquals(x, cb.controller().createVolume(create("x")).getVolume().getVolumeId(), "the same disk, by name");
    String y = cb.controller().createVolume(create("y")).getVolume().getVolumeId();
    assertTrue(!x.equals(y), x + " and " + y + ": two processes never make the same id");
    String cloud = Files.readString(dir.resolve("cloud"));
    assertEquals(2, cloud.lines().filter(l -> l.startsWith("disk ")).count(), cloud);
    assertTrue(cloud.contains("disk " + x + " ") && cloud.contains(" x\n"), cloud);
  }

  @Test
  void deleteOfAnAttachedDisk_isRefused_untilItIsDetached() throws Exception {
    a = plugin("na", Duration.ZERO);
    ca = new Csi(a.socket());
    String vol = ca.controller().createVolume(create("d")).getVolume().getVolumeId();
    ca.controller().controllerPublishVolume(publish(vol, "nb", VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER));
    DeleteVolumeRequest delete = DeleteVolumeRequest.newBuilder().setVolumeId(vol).build();
    assertEquals(Status.Code.FAILED_PRECONDITION, codeOf(() -> ca.controller().deleteVolume(delete)));
    ca.controller().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setNodeId("nb").build());
    ca.controller().deleteVolume(delete);
    assertTrue(new SharedCloud(dir.resolve("cloud"), Duration.ZERO).disk(vol).isEmpty());
  }

  @Test
  void aSlowCreate_existsFromItsStart_andTheSameNameMeanwhileIsAborted() throws Exception {
    Files.createDirectories(dir.resolve("na"));
    a = MockCsiPlugin.builder().socket(dir.resolve("na").resolve("csi.sock")).allCapabilities().nodeId("na")
        .cloud(dir.resolve("cloud"), Duration.ZERO).createTime(Duration.ofSeconds(5)).start();
    b = plugin("nb", Duration.ZERO);
    ca = new Csi(a.socket());
    cb = new Csi(b.socket());
    var slow = ControllerGrpc.newFutureStub(ca.channel).createVolume(create("slow"));
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
        .until(() -> Files.exists(dir.resolve("cloud")) && Files.readString(dir.resolve("cloud")).contains(" slow\n"));
    assertEquals(Status.Code.ABORTED, codeOf(() -> ca.controller().createVolume(create("slow"))),
        "an operation is pending for it in this process");
    // Its sender gone, another process asked the same name answers the disk at once: never a second one.
    String id = cb.controller().createVolume(create("slow")).getVolume().getVolumeId();
    assertEquals(Set.of(id), new java.util.HashSet<>(Files.readString(dir.resolve("cloud")).lines()
        .filter(l -> l.startsWith("disk ")).map(l -> l.split(" ")[1]).toList()));
    slow.cancel(true);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> MockCsiPlugin.builder().createTime(Duration.ofMillis(-1)));
    assertTrue(e.getMessage().contains("createTime"), e.getMessage());
  }
}
