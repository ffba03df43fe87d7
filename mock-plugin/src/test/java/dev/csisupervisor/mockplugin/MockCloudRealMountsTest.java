package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.CloudCalls.MIB;
import static dev.csisupervisor.mockplugin.CloudCalls.RWO;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Real mounts on a shared cloud (needs root; skipped otherwise): bytes written through one node plugin's published
 * target are in the cloud's data beside its file, and a volume restored from a snapshot (or cloned) through another
 * plugin process, mounted by that node's plugin, holds them.
 */
@Timeout(60)
class MockCloudRealMountsTest {
  private Path root;
  private MockCsiPlugin a;
  private MockCsiPlugin b;
  private Csi ca;
  private Csi cb;

  @AfterEach
  void cleanUp() {
    for (AutoCloseable c : new AutoCloseable[] {ca, cb, a, b}) {
      try {
        if (c != null) {
          c.close();
        }
      } catch (Exception ignored) {
        // closing
      }
    }
    if (root != null) {
      TestMounts.unmountAllUnder(root);
      FileTrees.deleteQuietly(root);
    }
  }

  private MockCsiPlugin plugin(String node) throws Exception {
    Files.createDirectories(root.resolve(node));
    return MockCsiPlugin.builder().socket(root.resolve(node).resolve("csi.sock")).nodeId(node).allCapabilities()
        .cloud(root.resolve("cloud"), Duration.ZERO).realMounts(root.resolve(node).resolve("unused")).start();
  }

  /** Stages and publishes the volume on {@code c}'s node at {@code NODE/staging-ID}, {@code NODE/target-ID}. */
  private Path mount(Csi c, String node, String volume) throws Exception {
    Path staging = Files.createDirectories(root.resolve(node).resolve("s-" + volume.hashCode()));
    Path target = root.resolve(node).resolve("t-" + volume.hashCode());
    CloudCalls.attach(c, volume, node);
    c.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(volume)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(RWO).build());
    c.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(volume)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(RWO).build());
    return target;
  }

  private void unmount(Csi c, String node, String volume) {
    c.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume)
        .setTargetPath(root.resolve(node).resolve("t-" + volume.hashCode()).toString()).build());
    c.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volume)
        .setStagingTargetPath(root.resolve(node).resolve("s-" + volume.hashCode()).toString()).build());
  }

  @Test
  void bytesWrittenThroughAMount_areInTheRestoreAndTheClone_mountedByAnotherProcess() throws Exception {
    assumeTrue(TestMounts.isRoot(), "real mounts need root: effective uid " + TestMounts.effectiveUid());
    root = Files.createTempDirectory(Path.of("/tmp"), "csi-cm");
    a = plugin("na");
    b = plugin("nb");
    ca = new Csi(a.socket());
    cb = new Csi(b.socket());
    String vol = CloudCalls.create(ca, "data", MIB).getVolumeId();
    Path target = mount(ca, "na", vol);
    Files.writeString(target.resolve("hello"), "written before the snapshot");
    assertEquals("written before the snapshot",
        Files.readString(DiskData.besideCloud(root.resolve("cloud")).diskDir(vol).resolve("hello")),
        "the bytes are the cloud's, beside its file");
    unmount(ca, "na", vol);

    String snap = CloudCalls.snapshot(ca, "s", vol).getSnapshotId();
    String restored = CloudCalls.restore(cb, "restored", snap).getVolumeId();
    String cloned = CloudCalls.cloneOf(cb, "cloned", vol).getVolumeId();
    assertEquals("written before the snapshot", Files.readString(mount(cb, "nb", restored).resolve("hello")));
    assertEquals("written before the snapshot", Files.readString(mount(cb, "nb", cloned).resolve("hello")));
    unmount(cb, "nb", restored);
    unmount(cb, "nb", cloned);
  }
}
