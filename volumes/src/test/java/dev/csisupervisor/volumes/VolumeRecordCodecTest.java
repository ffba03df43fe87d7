package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import java.util.Optional;
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
    newer[0] = 3;
    assertTrue(assertThrows(RecordFormatException.class, () -> VolumeRecordCodec.decode("volume/p/vol-ü", newer))
        .getMessage().contains("format version 3"));
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

  /** The first format, as the previous release wrote it: read, with the fields version 2 added at their defaults. */
  @Test
  void aVersion1Record_fromThePreviousRelease_isRead() throws Exception {
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (java.io.DataOutputStream out = new java.io.DataOutputStream(bytes)) {
      out.writeByte(1);
      out.writeUTF("p");
      out.writeUTF("vol-1");
      out.writeUTF("/csi/node/p");
      out.writeUTF("PUBLISHED");
      out.writeUTF("node-1");
      out.writeInt(1);
      out.writeUTF("devicePath");
      out.writeUTF("/dev/x");
      out.writeInt(1);
      out.writeUTF("MOUNT");
      out.writeUTF("SINGLE_NODE_WRITER");
      out.writeBoolean(false);
      out.writeUTF("ext4");
      out.writeUTF("");
      out.writeUTF("STAGED");
      out.writeInt(1);
      out.writeUTF("a1");
      out.writeUTF("PUBLISHED");
    }
    VolumeRecord r = VolumeRecordCodec.decode("volume/p/vol-1", bytes.toByteArray());
    assertEquals(Map.of("devicePath", "/dev/x"), r.publishContext());
    assertEquals(Map.of(), r.volumeContext());
    assertEquals(Optional.empty(), r.secretsFile());
    assertFalse(r.forced());
    UsageRecord u = r.usages().values().iterator().next();
    assertEquals(StageState.STAGED, u.stage());
    assertFalse(u.stagingMounted());
    assertFalse(u.needsClaim());
    assertEquals(Map.of("a1", AllocPhase.PUBLISHED), u.allocs());
    assertEquals(r, VolumeRecordCodec.decode("volume/p/vol-1", VolumeRecordCodec.encode(r)), "written again as 2");
  }

  @Test
  void version2Fields_roundTrip() throws Exception {
    VolumeRecord r = sample().withVolumeContext(Map.of("k", "v")).withSecretsFile(Optional.of(Path.of("/etc/s")))
        .withForced(true);
    UsageRecord u = r.usages().values().iterator().next();
    r = r.withUsage(u.withStagingMounted(true).withNeedsClaim(true).withStage(StageState.LOST)
        .withAlloc("a9", AllocPhase.LOST));
    assertEquals(r, VolumeRecordCodec.decode(r.key().storeKey(), VolumeRecordCodec.encode(r)));
  }
}
