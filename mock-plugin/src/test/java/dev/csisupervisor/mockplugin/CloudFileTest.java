package dev.csisupervisor.mockplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The cloud file's records: an older file still reads, every record kind survives a round trip, unknown lines are
 * skipped.
 */
@Timeout(10)
class CloudFileTest {

  @Test
  void anOlderFile_readsAsACloudWithoutWhatItLacks_andUnknownLinesAreSkipped() {
    CloudFile.State s = CloudFile.parse("disk vol-1 1048576 data\nattached vol-1 n1 0\nnext 1\n"
        + "hologram vol-1 42\nsnapshot too few fields\n\n");
    assertEquals(Map.of("vol-1", 1048576L), s.disks);
    assertEquals(Map.of("n1", false), s.attached.get("vol-1"));
    assertEquals(1, s.next);
    assertTrue(s.snapshots.isEmpty() && s.sources.isEmpty() && s.pools.isEmpty());
    assertEquals("disk vol-1 1048576 data\nattached vol-1 n1 0\nnext 1\n", CloudFile.format(s),
        "unknown lines are not kept; the known ones are written as before");
  }

  @Test
  void everyRecordKind_survivesARoundTrip_withFieldsEncoded() {
    String text = "disk projects%2Fp%2Fdisks%2F3 4194304 my+restore\n"
        + "next 3\n"
        + "source projects%2Fp%2Fdisks%2F3 snapshot snap-2\n"
        + "capability projects%2Fp%2Fdisks%2F3 mount 1\n"
        + "capability projects%2Fp%2Fdisks%2F3 block 5\n"
        + "pool projects%2Fp%2Fdisks%2F3 fast\n"
        + "mutable projects%2Fp%2Fdisks%2F3 iops 3000\n"
        + "abnormal projects%2Fp%2Fdisks%2F3 I%2FO+errors\n"
        + "snapshot snap-2 vol-1 4194304 1000 2000 3000 daily\n";
    CloudFile.State s = CloudFile.parse(text);
    String id = "projects/p/disks/3";
    assertEquals("my restore", s.names.get(id));
    assertEquals(Set.of("mount 1", "block 5"), s.capabilities.get(id));
    assertEquals("I/O errors", s.abnormal.get(id));
    assertEquals(new CloudFile.Snap("snap-2", "vol-1", 4194304, 1000, 2000, 3000, "daily"), s.snapshots.get("snap-2"));
    assertEquals(text, CloudFile.format(s));
  }

  @Test
  void aMalformedNumber_namesTheLine() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CloudFile.parse("next 1\nsnapshot s v lots 1 2 3 n\n"));
    assertTrue(e.getMessage().startsWith("line 2 is malformed"), e.getMessage());
  }
}
