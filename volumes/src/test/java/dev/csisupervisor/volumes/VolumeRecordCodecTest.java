package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.Layout;
import dev.csisupervisor.volumes.VolumeRecord.Staging;
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
    VolumeCapability xfs = new VolumeCapability(VolumeCapability.AccessType.MOUNT, "xfs",
        List.of("noatime", "password=hunter2"), "1000", AccessMode.MULTI_NODE_MULTI_WRITER);
    String staging = VolumeIds.dirName("vol-ü");
    usages.put(rw, new UsageRecord(rw, xfs, staging,
        new TreeMap<>(Map.of("a1", AllocPhase.PUBLISHED, "a2", AllocPhase.UNPUBLISHING)), true));
    usages.put(block, new UsageRecord(block, VolumeCapability.block(AccessMode.SINGLE_NODE_READER_ONLY), "",
        new TreeMap<>(Map.of("a3", AllocPhase.PUBLISHING)), false));
    TreeMap<String, Staging> stagings = new TreeMap<>(Map.of(staging,
        new Staging(StageState.STAGED, true, VolumeRecord.compatibility(xfs))));
    return new VolumeRecord("p", "vol-ü", Path.of("/csi/node/p"), ControllerState.PUBLISHED, "node-1",
        Map.of("device", "/dev/xvdf"), usages, Map.of("k", "v"), Optional.of(Path.of("/etc/s")), true,
        Layout.PER_VOLUME, stagings);
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
    newer[0] = 5;
    assertTrue(assertThrows(RecordFormatException.class, () -> VolumeRecordCodec.decode("volume/p/vol-ü", newer))
        .getMessage().contains("format version 5"));
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
    assertEquals(Layout.PER_USAGE, r.layout(), "the previous layout, kept until the last unmount");
    assertEquals(StageState.STAGED, r.stageOf(u));
    assertEquals(Optional.of(Path.of("/csi/node/p/staging/vol-1/mount-single-node-writer-rw")), r.stagingPathOf(u),
        "unmounted from where it was mounted");
    assertEquals(Path.of("/csi/node/p/per-alloc/a1/vol-1/mount-single-node-writer-rw"), r.targetPath("a1", u.usage()));
    assertFalse(r.stagings().values().iterator().next().mounted());
    assertFalse(u.needsClaim());
    assertEquals(Map.of("a1", AllocPhase.PUBLISHED), u.allocs());
    assertEquals(r, VolumeRecordCodec.decode("volume/p/vol-1", VolumeRecordCodec.encode(r)), "written again as 4");
  }

  @Test
  void aNodeExpansionOwed_roundTrips_inFormat4_andAFormat3RecordHasNone() throws Exception {
    VolumeRecord r = sample().withNodeExpansion(Optional.of(new CapacityRange(2L << 30, 4L << 30)));
    byte[] bytes = VolumeRecordCodec.encode(r);
    assertEquals(4, bytes[0]);
    assertEquals(r, VolumeRecordCodec.decode(r.key().storeKey(), bytes));
    // Format 3 is format 4 without the trailing flag.
    byte[] v4 = VolumeRecordCodec.encode(sample());
    byte[] v3 = Arrays.copyOf(v4, v4.length - 1);
    v3[0] = 3;
    assertEquals(sample(), VolumeRecordCodec.decode("volume/p/vol-ü", v3));
  }

  @Test
  void aRecordThatOnlyOwesANodeExpansion_isKept_butIsNoVolumeOnTheNode_andHasNoWork() throws Exception {
    VolumeRecord owed = VolumeRecord.empty(new VolumeKey("p", "vol-9"), Path.of("/csi/node/p"))
        .withNodeExpansion(Optional.of(CapacityRange.atLeast(1L << 30)));
    assertFalse(owed.onNode());
    assertFalse(owed.isEmpty(), "kept: the expansion is done at the next mount");
    assertFalse(owed.hasWork(), "nothing for the settler");
    assertEquals(List.of(), owed.paths());
    assertEquals(owed, VolumeRecordCodec.decode("volume/p/vol-9", VolumeRecordCodec.encode(owed)));
    assertTrue(owed.withNodeExpansion(Optional.empty()).isEmpty());
  }

  @Test
  void lostPhases_andAnyVolumeIdTheSpecAllows_roundTrip() throws Exception {
    VolumeRecord r = sample();
    UsageRecord u = r.usages().values().stream().filter(UsageRecord::staged).findFirst().orElseThrow();
    String name = u.staging();
    r = r.withUsage(u.withAlloc("a9", AllocPhase.LOST)).withStaging(name, r.stagings().get(name).withState(StageState.LOST));
    assertEquals(r, VolumeRecordCodec.decode(r.key().storeKey(), VolumeRecordCodec.encode(r)));
    VolumeRecord gce = VolumeRecord.empty(new VolumeKey("p", "projects/p/zones/z/disks/d"), Path.of("/csi/node/p"));
    assertEquals(gce, VolumeRecordCodec.decode("volume/p/projects/p/zones/z/disks/d", VolumeRecordCodec.encode(gce)));
    assertEquals(Path.of("/csi/node/p/staging/" + VolumeIds.dirName("projects/p/zones/z/disks/d")),
        gce.stagingPath(gce.stagingNameFor(u.usage())));
  }
}
