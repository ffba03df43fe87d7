package dev.csisupervisor.mockplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.VolumeContentSource;
import dev.csisupervisor.mockplugin.DriverStateFile.Image;
import dev.csisupervisor.mockplugin.DriverStateFile.StoredSnapshot;
import dev.csisupervisor.mockplugin.DriverStateFile.StoredVolume;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The driver's state file: its text format, its atomic save, and the errors a bad file gets. */
class DriverStateFileTest {
  @TempDir
  Path dir;

  private static Image sample() {
    VolumeContentSource fromSnap = VolumeContentSource.newBuilder()
        .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId("snap-2")).build();
    StoredVolume plain = new StoredVolume("vol-1", "data with spaces %20 + ü\nnewline", 1L << 30, null,
        new LinkedHashMap<>(Map.of("node-1", false)),
        new LinkedHashSet<>(List.of("/var/lib/staging dir/vol-1")),
        new LinkedHashMap<>(Map.of("/pods/a b/target", true)));
    StoredVolume restored = new StoredVolume("vol-3", "restored", 1 << 20, fromSnap,
        new LinkedHashMap<>(), new LinkedHashSet<>(), new LinkedHashMap<>());
    StoredSnapshot snap = new StoredSnapshot("snap-2", "nightly", "vol-1", 1L << 30,
        Instant.ofEpochSecond(1_700_000_000L, 123_456_789));
    return new Image(4, List.of(plain, restored), List.of(snap));
  }

  @Test
  void encodeThenDecode_givesTheSameImage_whateverTheNamesAndPathsHold() throws Exception {
    Image image = sample();
    String text = DriverStateFile.encode(image);
    assertEquals(image, DriverStateFile.decode(text, dir.resolve("state")));
    assertTrue(text.startsWith("csi-mock-plugin-state 1\nnext-id 4\n"), text);
    assertTrue(text.endsWith("end\n"), text);
    assertEquals(9, text.split("\n").length, "one line per record: " + text);
  }

  @Test
  void save_replacesTheFileAtomically_andLoadReadsIt() throws Exception {
    DriverStateFile file = new DriverStateFile(dir.resolve("state"));
    assertEquals(Image.EMPTY, file.load(), "no file yet: empty");
    file.save(DriverStateFile.encode(sample()));
    file.save(DriverStateFile.encode(Image.EMPTY));
    file.save(DriverStateFile.encode(sample()));
    assertEquals(sample(), file.load());
    assertEquals(Set.of(dir.resolve("state")), Set.copyOf(Files.list(dir).toList()), "no temporary file left");
  }

  @Test
  void load_withoutItsDirectory_failsNamingTheFile() {
    Path missing = dir.resolve("no-such-dir/state");
    IOException e = assertThrows(IOException.class, () -> new DriverStateFile(missing).load());
    assertEquals("state file " + missing + ": its directory does not exist", e.getMessage());
  }

  @Test
  void malformedFiles_failNamingTheFileAndTheLine() throws Exception {
    Path state = dir.resolve("state");
    String good = DriverStateFile.encode(sample());
    assertMalformed(state, "", "line 1: the first line must be 'csi-mock-plugin-state 1'");
    assertMalformed(state, "csi-mock-plugin-state 2\nend\n", "line 1: the first line must be");
    assertMalformed(state, good.substring(0, good.indexOf("snapshot ")),
        ": it ends without its 'end' line (cut short?)");
    assertMalformed(state, good.replace("staged vol-1 ", "staged vol-9 "), "line 6: no volume vol-9 before this line");
    assertMalformed(state, good.replace("published vol-1 %2Fpods%2Fa+b%2Ftarget true", "published vol-1 x maybe"),
        "line 7: readonly must be true or false, got 'maybe'");
    assertMalformed(state, good.replace("next-id 4", "next-id four"), "line 2: next-id must be a number, got 'four'");
    assertMalformed(state, good.replace("next-id 4\n", ""), "no valid 'next-id' line");
    assertMalformed(state, good.replace("end\n", "volume x\nend\n"), "line 9: 'volume' needs 4 field(s), got 1");
    assertMalformed(state, good + "more\n", "line 10: nothing may follow 'end'");
    assertMalformed(state, good.replace("next-id", "next-ids"), "line 2: unknown record 'next-ids'");
  }

  private static void assertMalformed(Path state, String text, String problem) throws IOException {
    Files.writeString(state, text);
    IOException e = assertThrows(IOException.class, () -> new DriverStateFile(state).load(), text);
    assertTrue(e.getMessage().startsWith("state file " + state), e.getMessage());
    assertTrue(e.getMessage().contains(problem), "expected '" + problem + "' in: " + e.getMessage());
    assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
  }
}
