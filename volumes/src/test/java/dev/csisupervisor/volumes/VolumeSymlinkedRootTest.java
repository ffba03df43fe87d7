package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.testing.ShortTempDir;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A CSI root below a symlinked directory (hosts whose {@code /var/lib} or {@code /tmp} is a link): the kernel's
 * mount table writes the resolved paths, the records the configured ones. Before, every live mount looked lost after
 * a restart, and was unpublished and published again under its running task.
 */
class VolumeSymlinkedRootTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);

  private final ShortTempDir dir = new ShortTempDir("vl");
  private VolumeKit kit;

  @AfterEach
  void close() {
    if (kit != null) {
      kit.close();
    }
    dir.close();
  }

  @Test
  void aLiveMountBelowASymlinkedRoot_isHandedBackUntouched_afterARestart() throws Exception {
    Path real = Files.createDirectories(dir.resolve("real"));
    Path link = Files.createSymbolicLink(dir.resolve("link"), real);
    kit = new VolumeKit(new InMemoryStateStore(), link.resolve("csi"));
    kit.mounts.kernelPaths = true; // the table says real/csi/..., the records link/csi/...
    kit.startPlugin("mock");
    kit.registerNode("mock");
    String vol = kit.createVolume("mock", "v1");
    VolumeManager first = kit.manager();
    MountedVolume m = kit.drive(first.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    FaultyClient client = kit.client("mock");
    int publishes = client.calls("NodePublishVolume");
    int unpublishes = client.calls("NodeUnpublishVolume");

    // The agent alone restarts (killed): the mount is still in the kernel's table, written with real paths.
    kit.managers.forEach(VolumeManager::close);
    kit.managers.clear();
    VolumeManager second = kit.manager();
    assertTrue(second.recovered().stream().noneMatch(l -> l.contains("is not mounted")), second.recovered().toString());
    assertEquals(AllocPhase.PUBLISHED,
        second.find("mock", vol).orElseThrow().usageOf("a1").orElseThrow().allocs().get("a1"));
    assertEquals(m.targetPath(), kit.drive(second.mount(VolumeClaim.of("mock", vol, "a1", RWO, false))).targetPath());
    assertEquals(publishes, client.calls("NodePublishVolume"), "handed back as it is: no remount");
    assertEquals(unpublishes, client.calls("NodeUnpublishVolume"));
    assertTrue(second.pending().isEmpty(), second.pending().toString());
  }
}
