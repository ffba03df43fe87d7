package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import dev.csisupervisor.volumes.VolumeRecordCodec.RecordFormatException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class VolumeRecordCodecTest {
  private static VolumeRecord sample() {
    VolumeUsage rw = new VolumeUsage(VolumeCapability.AccessType.MOUNT, AccessMode.MULTI_NODE_MULTI_WRITER, false);
    VolumeUsage block = new VolumeUsage(VolumeCapability.AccessType.BLOCK, AccessMode.SINGLE_NODE_READER_ONLY, true);
    TreeMap<VolumeUsage, UsageRecord> usages = new TreeMap<>(VolumeRecord.USAGE_ORDER);
    usages.put(rw, new UsageRecord(rw, new VolumeCapability(VolumeCapability.AccessType.MOUNT, "xfs",
        List.of("noatime", "password=hunter2"), "1000", AccessMode.MULTI_NODE_MULTI_WRITER), StageState.STAGED,
        new TreeMap<>(Map.of("a1", AllocPhase.PUBLISHED, "a2", AllocPhase.UNPUBLISHING))));
    usages.put(block, new UsageRecord(block, VolumeCapability.block(AccessMode.SINGLE_NODE_READER_ONLY),
        StageState.STAGING, new TreeMap<>(Map.of("a3", AllocPhase.PUBLISHING))));
    return new VolumeRecord("p", "vol-ü", Path.of("/csi/node/p"), ControllerState.PUBLISHED, "node-1",
        Map.of("device", "/dev/xvdf"), usages);
  }

  @Test
  void roundTrip_keepsEverything_butTheMountFlags() throws Exception {
    VolumeRecord r = sample();
    VolumeRecord back = VolumeRecordCodec.decode(r.key().storeKey(), VolumeRecordCodec.encode(r));
    assertEquals(r, back);
    assertTrue(back.usages().values().stream().allMatch(u -> u.capability().mountFlags().isEmpty()),
        "mount flags may be sensitive (CSI): never stored");
    assertTrue(!new String(VolumeRecordCodec.encode(r), java.nio.charset.StandardCharsets.UTF_8).contains("hunter2"));
  }

  @Test
  void aRecordUnderAnotherKey_aNewerVersion_aTruncatedOrPaddedRecord_areFormatErrors() {
    byte[] bytes = VolumeRecordCodec.encode(sample());
    assertThrows(RecordFormatException.class, () -> VolumeRecordCodec.decode("volume/p/other", bytes));
    byte[] newer = bytes.clone();
    newer[0] = 2;
    assertTrue(assertThrows(RecordFormatException.class, () -> VolumeRecordCodec.decode("volume/p/vol-ü", newer))
        .getMessage().contains("format version 2"));
    for (int cut = 0; cut < bytes.length; cut += 7) {
      byte[] part = Arrays.copyOf(bytes, cut);
      assertThrows(RecordFormatException.class, () -> VolumeRecordCodec.decode("volume/p/vol-ü", part), "cut " + cut);
    }
    byte[] padded = Arrays.copyOf(bytes, bytes.length + 1);
    assertThrows(RecordFormatException.class, () -> VolumeRecordCodec.decode("volume/p/vol-ü", padded));
    assertArrayEquals(bytes, VolumeRecordCodec.encode(sample()), "deterministic");
  }

  @Test
  void hasWork_isExactlyWhatIsNotFinal() {
    VolumeRecord r = sample();
    assertTrue(r.hasWork());
    VolumeUsage rw = new VolumeUsage(VolumeCapability.AccessType.MOUNT, AccessMode.MULTI_NODE_MULTI_WRITER, false);
    VolumeRecord settled = r.withoutUsage(r.usages().firstKey().equals(rw) ? r.usages().lastKey() : r.usages().firstKey())
        .withUsage(r.usages().get(rw).withoutAlloc("a2"));
    assertTrue(!settled.hasWork(), settled.toString());
    assertTrue(settled.withUsage(settled.usages().get(rw).withoutAlloc("a1")).hasWork(), "a staging nobody uses");
  }
}
