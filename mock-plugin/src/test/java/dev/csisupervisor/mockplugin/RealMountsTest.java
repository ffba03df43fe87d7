package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static dev.csisupervisor.mockplugin.Csi.statusOf;
import static dev.csisupervisor.mockplugin.TestMounts.isMountPoint;
import static dev.csisupervisor.mockplugin.TestMounts.mountsAt;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.csi.v1.CapacityRange;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsRequest;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.VolumeCapability;
import dev.csisupervisor.csi.v1.VolumeUsage;
import io.grpc.Status;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code realMounts}: stage and publish as bind mounts the kernel lists in /proc/self/mountinfo,
 * over the plugin's unix socket. Needs root; as any other user these tests are skipped, but the
 * refusal to start without root is tested with a fake uid.
 */
@Timeout(60)
class RealMountsTest extends PluginOnSocketTest {
  private static final VolumeCapability MOUNT_RW = Csi.singleNodeWriter(VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.getDefaultInstance()));
  private static final VolumeCapability BLOCK = Csi.singleNodeWriter(VolumeCapability.newBuilder()
      .setBlock(VolumeCapability.BlockVolume.getDefaultInstance()));

  /** A short directory under /tmp (whatever java.io.tmpdir is): socket, data, staging and target. */
  private Path root;
  private Path data;
  private Path staging;
  private Path target;

  @BeforeEach
  void directories() throws IOException {
    root = Files.createTempDirectory(Path.of("/tmp"), "csi-rm");
    data = root.resolve("data");
    staging = Files.createDirectory(root.resolve("staging"));
    target = root.resolve("target");
  }

  @AfterEach
  void unmountEverythingAndDelete() {
    TestMounts.unmountAllUnder(root);
    FileTrees.deleteQuietly(root);
  }

  @Override
  MockCsiPlugin.Builder builder() {
    return MockCsiPlugin.builder().socket(root.resolve("csi.sock")).allCapabilities().realMounts(data);
  }

  /** Starts a real-mount plugin; skips the test unless this JVM is root. */
  private void startAsRoot(Consumer<MockCsiPlugin.Builder> configure) throws Exception {
    assumeTrue(TestMounts.isRoot(),
        "real mounts need root: this JVM runs with effective uid " + TestMounts.effectiveUid());
    start(configure);
  }

  /** As root: a plugin and a new 1 MiB volume; its id. */
  private String startWithAVolume() throws Exception {
    startAsRoot(b -> { });
    return create("data", 1 << 20);
  }

  /** As root: a plugin and a new 1 MiB mount volume, staged and published read-write; its id. */
  private String startWithAPublishedVolume() throws Exception {
    String v = startWithAVolume();
    stage(v, MOUNT_RW, staging);
    publish(v, MOUNT_RW, false);
    return v;
  }

  private String create(String name, long bytes) {
    return csi.controller().createVolume(CreateVolumeRequest.newBuilder().setName(name)
        .addVolumeCapabilities(MOUNT_RW)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes)).build()).getVolume().getVolumeId();
  }

  private void stage(String volume, VolumeCapability capability, Path at) {
    csi.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(volume)
        .setStagingTargetPath(at.toString()).setVolumeCapability(capability).build());
  }

  private void publish(String volume, VolumeCapability capability, boolean readonly) {
    csi.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(volume)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
        .setVolumeCapability(capability).setReadonly(readonly).build());
  }

  private void unpublish(String volume) {
    csi.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume)
        .setTargetPath(target.toString()).build());
  }

  private void unstage(String volume) {
    csi.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volume)
        .setStagingTargetPath(staging.toString()).build());
  }

  private Path dataOf(String volume) {
    return data.resolve(RealMounts.sha256(volume));
  }

  @Test
  void stage_bindMountsTheVolumesDataOnTheStagingPath_once() throws Exception {
    String v = startWithAVolume();
    stage(v, MOUNT_RW, staging);
    assertEquals(1, mountsAt(staging));
    assertEquals(PosixFilePermissions.fromString("rwx------"), Files.getPosixFilePermissions(dataOf(v)));
    Files.writeString(dataOf(v).resolve("seen"), "from the data");
    assertEquals("from the data", Files.readString(staging.resolve("seen")));

    stage(v, MOUNT_RW, staging);
    assertEquals(1, mountsAt(staging), "staged again: the mount is there, none is added");
  }

  @Test
  void stage_onAStagingPathTheCoDidNotCreate_isFailedPrecondition() throws Exception {
    String v = startWithAVolume();
    Path missing = root.resolve("missing");
    Status status = statusOf(() -> stage(v, MOUNT_RW, missing));
    assertEquals(Status.Code.FAILED_PRECONDITION, status.getCode());
    assertTrue(status.getDescription().contains(missing + " is not a directory"), status.getDescription());
    assertEquals(Map.of(), plugin.stagedPaths());
  }

  @Test
  void publish_mountsTheStagingPath_andAFileWrittenThroughTheTargetIsInTheData() throws Exception {
    String v = startWithAPublishedVolume();
    assertTrue(isMountPoint(target));
    Files.writeString(target.resolve("hello"), "written through the target");
    assertEquals("written through the target", Files.readString(dataOf(v).resolve("hello")));
    assertEquals("written through the target", Files.readString(staging.resolve("hello")));

    publish(v, MOUNT_RW, false);
    assertEquals(1, mountsAt(target), "published again: the mount is there, none is added");
    var usage = csi.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(v)
        .setVolumePath(target.toString()).build()).getUsage(0);
    assertEquals(VolumeUsage.Unit.BYTES, usage.getUnit());
    assertEquals("written through the target".length(), usage.getUsed());
    assertEquals((1 << 20) - usage.getUsed(), usage.getAvailable());
  }

  @Test
  void readonlyPublish_refusesWrites_andTheOtherFlagIsAlreadyExists() throws Exception {
    String v = startWithAVolume();
    stage(v, MOUNT_RW, staging);
    Files.writeString(staging.resolve("old"), "before");
    publish(v, MOUNT_RW, true);
    assertTrue(KernelMounts.read().at(target).orElseThrow().readOnly());
    assertEquals("before", Files.readString(target.resolve("old")));
    IOException refused = assertThrows(IOException.class, () -> Files.writeString(target.resolve("new"), "x"));
    assertTrue(refused.getMessage().contains("Read-only file system"), refused.getMessage());
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> publish(v, MOUNT_RW, false)));
    Files.writeString(staging.resolve("new"), "the staging path stays writable");
  }

  @Test
  void unpublishAndUnstage_unmount_andUnpublishRemovesTheTarget() throws Exception {
    String v = startWithAPublishedVolume();
    Files.writeString(target.resolve("kept"), "in the data");

    unpublish(v);
    assertFalse(Files.exists(target));
    unstage(v);
    assertFalse(isMountPoint(staging));
    assertTrue(Files.isDirectory(staging), "the staging directory is the CO's: it stays");
    assertEquals("in the data", Files.readString(dataOf(v).resolve("kept")));
    assertEquals(Map.of(), plugin.publishedPaths());
    assertEquals(Map.of(), plugin.stagedPaths());

    unpublish(v); // idempotent
    unstage(v);
  }

  @Test
  void afterAReboot_publishWaitsForAStage_thenBothMountAgain() throws Exception {
    String v = startWithAPublishedVolume();
    Files.writeString(target.resolve("old"), "before the reboot");
    TestMounts.unmount(target); // the reboot: the driver still thinks both are mounted
    TestMounts.unmount(staging);

    Status status = statusOf(() -> publish(v, MOUNT_RW, false));
    assertEquals(Status.Code.FAILED_PRECONDITION, status.getCode());
    assertEquals("volume " + v + " is not staged at " + staging + " (not a mount point)", status.getDescription());
    assertFalse(isMountPoint(target));

    stage(v, MOUNT_RW, staging);
    assertTrue(isMountPoint(staging));
    publish(v, MOUNT_RW, false);
    assertTrue(isMountPoint(target));
    assertEquals("before the reboot", Files.readString(target.resolve("old")));
  }

  @Test
  void aRestartedPlugin_findsItsMountsThere_andDoesNotMountTwice() throws Exception {
    Path stateFile = root.resolve("driver.state");
    startAsRoot(b -> b.stateFile(stateFile));
    String v = create("data", 1 << 20);
    stage(v, MOUNT_RW, staging);
    publish(v, MOUNT_RW, false);
    csi.close();
    plugin.close();

    start(b -> b.stateFile(stateFile));
    stage(v, MOUNT_RW, staging);
    publish(v, MOUNT_RW, false);
    assertEquals(1, mountsAt(staging));
    assertEquals(1, mountsAt(target));
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> publish(v, MOUNT_RW, true)));
  }

  @Test
  void aPluginThatForgotItsVolumes_asksTheKernel_whatIsMountedAndHowReadOnly() throws Exception {
    String v = startWithAVolume();
    stage(v, MOUNT_RW, staging);
    publish(v, MOUNT_RW, true);
    csi.close();
    plugin.close();

    start(b -> { }); // no state file: it knows no volume, and counts ids from 1 again
    assertEquals(v, create("data", 1 << 20));
    stage(v, MOUNT_RW, staging);
    assertEquals(1, mountsAt(staging));
    Status status = statusOf(() -> publish(v, MOUNT_RW, false));
    assertEquals(Status.Code.ALREADY_EXISTS, status.getCode());
    assertEquals("volume " + v + " is already mounted at " + target + " read-only", status.getDescription());
    publish(v, MOUNT_RW, true);
    assertEquals(1, mountsAt(target));
  }

  @Test
  void withoutStageUnstage_publishMountsTheVolumesDataItself() throws Exception {
    startAsRoot(b -> b.nodeCapabilities(List.of()));
    String v = create("data", 1 << 20);
    csi.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(v)
        .setTargetPath(target.toString()).setVolumeCapability(MOUNT_RW).build());
    assertTrue(isMountPoint(target));
    Files.writeString(target.resolve("direct"), "no staging");
    assertEquals("no staging", Files.readString(dataOf(v).resolve("direct")));
  }

  @Test
  void blockVolume_stageMountsNothing_andPublishBindMountsItsBackingFileOnAFile() throws Exception {
    startAsRoot(b -> { });
    String v = create("disk", 4 << 20);
    stage(v, BLOCK, staging);
    assertFalse(isMountPoint(staging), "a block volume is staged without a mount");
    Path backing = data.resolve(RealMounts.sha256(v) + ".img");
    assertEquals(4 << 20, Files.size(backing), "as large as the volume (sparse)");

    publish(v, BLOCK, false);
    assertTrue(Files.isRegularFile(target));
    assertTrue(isMountPoint(target));
    byte[] written = "block data".getBytes(StandardCharsets.UTF_8);
    try (RandomAccessFile device = new RandomAccessFile(target.toFile(), "rw")) {
      device.seek(1 << 20);
      device.write(written);
    }
    byte[] read = new byte[written.length];
    try (RandomAccessFile file = new RandomAccessFile(backing.toFile(), "r")) {
      file.seek(1 << 20);
      file.readFully(read);
    }
    assertArrayEquals(written, read);

    unpublish(v);
    assertFalse(Files.exists(target));
    unstage(v);
    assertEquals(Map.of(), plugin.stagedPaths());
  }

  @Test
  void aBusyUnmount_failsInternal_andTheVolumeStaysPublishedAndStaged() throws Exception {
    String v = startWithAPublishedVolume();
    try (FileChannel open = FileChannel.open(target.resolve("open"), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE)) {
      Status status = statusOf(() -> unpublish(v));
      assertEquals(Status.Code.INTERNAL, status.getCode());
      assertTrue(status.getDescription().startsWith("cannot unmount volume " + v + " at " + target + ": 'umount "),
          status.getDescription());
      assertTrue(status.getDescription().contains("busy"), status.getDescription());
      assertTrue(isMountPoint(target));
      assertEquals(Map.of(v, Set.of(target.toString())), plugin.publishedPaths());
    }
    unpublish(v);
    assertEquals(Map.of(), plugin.publishedPaths());

    try (FileChannel open = FileChannel.open(staging.resolve("open"), StandardOpenOption.WRITE)) {
      assertEquals(Status.Code.INTERNAL, codeOf(() -> unstage(v)));
      assertEquals(Map.of(v, Set.of(staging.toString())), plugin.stagedPaths());
    }
    unstage(v);
    assertFalse(isMountPoint(staging));
  }

  @Test
  void deleteVolume_removesItsData() throws Exception {
    String v = startWithAVolume();
    stage(v, MOUNT_RW, staging);
    unstage(v);
    assertTrue(Files.isDirectory(dataOf(v)));
    csi.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v).build());
    assertFalse(Files.exists(dataOf(v)));
  }

  @Test
  void withoutRoot_startFails_namingTheOption_andServesNothing() {
    MockCsiPlugin plugin = builder().uidSource(() -> 1000).build();
    IOException e = assertThrows(IOException.class, plugin::start);
    assertEquals("real mounts (realMounts, --real-mounts DIR) need root to mount volumes: this process runs"
        + " with effective uid 1000", e.getMessage());
    assertFalse(plugin.isRunning());
    assertFalse(Files.exists(root.resolve("csi.sock")));
    assertFalse(Files.exists(data), "nothing made before the check");
  }

  @Test
  void effectiveUid_isTheSecondFieldOfTheUidLine() throws IOException {
    assertEquals(0, RealMounts.effectiveUid("Name:\tjava\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n"));
    assertEquals(1000, RealMounts.effectiveUid("Uid:\t0\t1000\t0\t0\n"));
    assertThrows(IOException.class, () -> RealMounts.effectiveUid("Name:\tjava\n"));
    RealMounts.requireRoot(0);
  }
}
