package dev.csisupervisor.state;

import static dev.csisupervisor.state.StateFiles.crashCopy;
import static dev.csisupervisor.state.StateFiles.strings;
import static dev.csisupervisor.state.StateStoreContractTest.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What open does with a journal or checkpoint that a crash, a full disk or bit rot left behind. */
class JournalDamageTest {

  @TempDir Path tmp;

  private static JournalStateStore.Options strict() {
    return JournalStateStore.Options.defaults().withStrict(true);
  }

  /** Frame offsets in a segment: start of each frame, and the end of the data. */
  private static List<Integer> frameStarts(Path segment) throws IOException {
    ByteBuffer data = ByteBuffer.wrap(Files.readAllBytes(segment));
    List<Integer> starts = new ArrayList<>();
    int pos = 0;
    while (JournalFormat.read(data, pos) instanceof JournalFormat.Frame f) {
      starts.add(pos);
      pos = f.end();
    }
    starts.add(pos);
    return starts;
  }

  private static void patch(Path file, int offset, byte[] bytes) throws IOException {
    try (FileChannel c = FileChannel.open(file, StandardOpenOption.WRITE)) {
      c.write(ByteBuffer.wrap(bytes), offset);
    }
  }

  private static byte[] read(Path file, int offset, int length) throws IOException {
    byte[] all = Files.readAllBytes(file);
    byte[] out = new byte[length];
    System.arraycopy(all, offset, out, 0, length);
    return out;
  }

  /**
   * A crash-copied journal: its directory, its one segment, where each frame of that segment starts (and, last, where
   * its data ends), and the records committed before the last batch.
   */
  private record Crashed(Path dir, Path segment, List<Integer> frameStarts, Map<String, String> beforeLast) {
    /** The start of the last frame. */
    int lastFrame() {
      return frameStarts.get(frameStarts.size() - 2);
    }

    /** The end of the segment's data. */
    int dataEnd() {
      return frameStarts.get(frameStarts.size() - 1);
    }
  }

  /** A store with ten single-record batches and then one last batch of {@code lastBatch} records, crash-copied. */
  private Crashed journalWithLastBatch(int lastBatch) throws IOException {
    Path live = tmp.resolve("live");
    Map<String, String> beforeLast = new LinkedHashMap<>();
    Path crashed;
    try (JournalStateStore store = JournalStateStore.open(live, strict())) {
      for (int i = 0; i < 10; i++) {
        store.put("key-" + i, bytes("value-" + i + "-".repeat(i * 9)));
        beforeLast.put("key-" + i, "value-" + i + "-".repeat(i * 9));
      }
      List<StateChange> last = new ArrayList<>();
      for (int i = 0; i < lastBatch; i++) {
        last.add(new StateChange.Put("last-" + i, bytes("the last batch, record " + i)));
      }
      store.apply(last);
      crashed = crashCopy(live, tmp.resolve("crashed"));
    }
    Path segment = StateFiles.segments(crashed).get(0);
    return new Crashed(crashed, segment, frameStarts(segment), beforeLast);
  }

  /** Adds {@code delta} to the sequence of the frame at {@code frameStart} and gives it a valid CRC again. */
  private static void shiftSequence(Path segment, int frameStart, long delta) throws IOException {
    ByteBuffer data = ByteBuffer.wrap(Files.readAllBytes(segment));
    int bodyLength = data.getInt(frameStart);
    data.putLong(frameStart + 8, data.getLong(frameStart + 8) + delta);
    data.putInt(frameStart + 4, JournalFormat.crc(data, frameStart + 8, bodyLength));
    Files.write(segment, data.array());
  }

  @Test
  void tornTail_atEveryByteOffsetOfTheLastRecord_dropsExactlyThatBatch_evenInStrictMode() throws IOException {
    Crashed crashed = journalWithLastBatch(1);
    Map<String, String> expected = crashed.beforeLast();
    Path segment = crashed.segment();
    int lastStart = crashed.lastFrame();
    int end = crashed.dataEnd();
    byte[] original = Files.readAllBytes(segment);
    for (int cut = lastStart; cut < end; cut++) {
      for (String how : List.of("zeros", "truncated")) {
        Path copy = tmp.resolve("torn-" + how + "-" + cut);
        Path segCopy = crashCopy(crashed.dir(), copy).resolve("state").resolve(segment.getFileName());
        if (how.equals("zeros")) {
          patch(segCopy, cut, new byte[end - cut]);
        } else {
          try (FileChannel c = FileChannel.open(segCopy, StandardOpenOption.WRITE)) {
            c.truncate(cut);
          }
        }
        try (JournalStateStore store = JournalStateStore.open(copy, strict())) {
          assertEquals(expected, strings(store.loadAll()), how + " from byte " + cut);
          if (cut % 16 == 0) {
            store.put("after", bytes("reopen"));
          }
        }
        if (cut % 16 == 0) {
          try (JournalStateStore store = JournalStateStore.open(copy, strict())) {
            Map<String, String> withAfter = new HashMap<>(expected);
            withAfter.put("after", "reopen");
            assertEquals(withAfter, strings(store.loadAll()), how + " from byte " + cut + ", then one more change");
          }
        }
      }
    }
    assertArrayEquals(original, Files.readAllBytes(segment));
  }

  @Test
  void tornMiddleOfTheLastBatch_dropsTheWholeBatch_neverPartOfIt() throws IOException {
    Crashed crashed = journalWithLastBatch(3);
    List<Integer> starts = crashed.frameStarts();
    int middle = starts.get(starts.size() - 3); // the second record of the last batch
    patch(crashed.segment(), middle + 10, new byte[20]);
    try (JournalStateStore store = JournalStateStore.open(crashed.dir(), strict())) {
      assertEquals(crashed.beforeLast(), strings(store.loadAll()));
    }
  }

  @Test
  void flippedBitBeforeTheTail_isCorruption_strictFailsTouchingNothing() throws IOException {
    Crashed crashed = journalWithLastBatch(1);
    Path segment = crashed.segment();
    int fifth = crashed.frameStarts().get(4);
    byte[] b = read(segment, fifth + 30, 1);
    b[0] ^= 0x10;
    patch(segment, fifth + 30, b);
    Map<String, byte[]> before = StateFiles.snapshot(crashed.dir());
    StateFileCorruptException e = assertCorrupt(crashed.dir(), "a later batch follows it intact");
    assertTrue(e.getMessage().contains(segment.getFileName().toString()) && e.getMessage().contains("CRC"),
        e.getMessage());
    Map<String, byte[]> after = StateFiles.snapshot(crashed.dir());
    assertEquals(before.keySet(), after.keySet());
    before.forEach((k, v) -> assertArrayEquals(v, after.get(k), k));
  }

  @Test
  void flippedBitBeforeTheTail_notStrict_keepsWhatReadsBack_andMovesTheSegmentAside() throws IOException {
    Crashed crashed = journalWithLastBatch(1);
    Path segment = crashed.segment();
    byte[] damaged = Files.readAllBytes(segment);
    int fifth = crashed.frameStarts().get(4);
    damaged[fifth + 30] ^= 0x10;
    Files.write(segment, damaged);
    try (JournalStateStore store = JournalStateStore.open(crashed.dir(), strict().withStrict(false))) {
      Map<String, String> kept = strings(store.loadAll());
      assertEquals(Map.of("key-0", "value-0", "key-1", "value-1---------", "key-2", "value-2" + "-".repeat(18),
          "key-3", "value-3" + "-".repeat(27)), kept, "the four records before the damage");
      Path moved = store.quarantinedTo().orElseThrow();
      assertArrayEquals(damaged, Files.readAllBytes(moved.resolve(segment.getFileName())));
      store.put("new", bytes("works"));
    }
    try (JournalStateStore store = JournalStateStore.open(crashed.dir(), strict())) {
      assertEquals(5, store.loadAll().size(), "the kept records and the new one, now clean");
    }
  }

  @Test
  void zeroedSectorBeforeTheTail_isCorruption() throws IOException {
    Crashed crashed = journalWithLastBatch(1);
    patch(crashed.segment(), crashed.frameStarts().get(3), new byte[8]); // a header zeroed: looks like the end of the data
    assertCorrupt(crashed.dir(), "a later batch follows it intact");
  }

  @Test
  void sequenceGapInsideASegment_isCorruption() throws IOException {
    Crashed crashed = journalWithLastBatch(1);
    shiftSequence(crashed.segment(), crashed.frameStarts().get(4), 1); // sequence 5 -> 6, with a valid CRC
    assertCorrupt(crashed.dir(), "sequence 6 follows 4");
  }

  @Test
  void intactRecordWithTheWrongSequence_evenAsTheLastOne_isCorruption_neverATornTail() throws IOException {
    Crashed crashed = journalWithLastBatch(1);
    shiftSequence(crashed.segment(), crashed.lastFrame(), 5);
    assertCorrupt(crashed.dir(), "sequence 16 follows 10");
  }

  @Test
  void missingMiddleSegment_isCorruption() throws IOException {
    Path data = tmp.resolve("hand");
    StateDirectory dir = new StateDirectory(data.resolve("state"));
    dir.prepare(false);
    JournalWriter writer = new JournalWriter(dir, 1, List.of(), 4096, JournalWriter.ChannelFactory.DEFAULT,
        new SegmentPipeline(dir, JournalWriter.ChannelFactory.DEFAULT, Runnable::run));
    for (int i = 0; i < 100; i++) {
      writer.append(List.of(new StateChange.Put("k" + i, bytes("v".repeat(100)))));
    }
    writer.close();
    List<Path> segments = StateFiles.segments(data);
    assertTrue(segments.size() >= 3, segments.toString());
    Files.delete(segments.get(1));
    assertCorrupt(data, "sequence gap");
  }

  @Test
  void damagedCheckpoint_strictFails_otherwiseMovedAsideAndTheRestOfTheStateOpens() throws IOException {
    Path data = tmp.resolve("cp");
    try (JournalStateStore store = JournalStateStore.open(data, strict())) {
      for (int i = 0; i < 50; i++) {
        store.put("k" + i, bytes("value " + i));
      }
    }
    Path checkpoint = StateFiles.list(data.resolve("state")).stream()
        .filter(p -> p.getFileName().toString().startsWith("checkpoint-")).findFirst().orElseThrow();
    byte[] bytes = Files.readAllBytes(checkpoint);
    int at = new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1).indexOf("value 25");
    assertTrue(at > 0, "the records are in the file");
    bytes[at + 6] ^= 0x01; // "value 35": bit rot inside a chunk
    Files.write(checkpoint, bytes);
    assertCorrupt(data, checkpoint.getFileName().toString());
    assertArrayEquals(bytes, Files.readAllBytes(checkpoint));
    try (JournalStateStore store = JournalStateStore.open(data, strict().withStrict(false))) {
      assertEquals(0, store.loadAll().size());
      assertArrayEquals(bytes, Files.readAllBytes(store.quarantinedTo().orElseThrow().resolve(checkpoint.getFileName())));
    }
    assertFalse(Files.exists(checkpoint));
  }

  /** Opening {@code dir} strictly fails as corrupt, and the message says {@code why}. */
  private static StateFileCorruptException assertCorrupt(Path dir, String why) {
    StateFileCorruptException e = assertThrows(StateFileCorruptException.class,
        () -> JournalStateStore.open(dir, strict()));
    assertTrue(e.getMessage().contains(why), e.getMessage());
    return e;
  }
}
