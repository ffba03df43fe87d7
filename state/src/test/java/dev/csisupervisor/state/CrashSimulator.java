package dev.csisupervisor.state;

import static dev.csisupervisor.state.StateFiles.strings;
import static dev.csisupervisor.state.StateStoreContractTest.bytes;

import dev.csisupervisor.state.PowerCutIo.Expectation;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Turns what {@link PowerCutIo} recorded into the disk images a power cut could leave, the way ALICE (OSDI '14)
 * explores a trace, and opens the store on each, strict and repairing, checking what it finds against the
 * recorded {@link Expectation}s.
 *
 * <p><b>Crash points</b>: before every force (of a file or a directory) and at the end of the log. At each, the
 * operations not yet durable are the <em>pending</em> ones: a file's writes and truncations until that file is
 * forced (a failed force makes nothing durable), a directory operation until each directory it changes is forced
 * (and every earlier operation on those directories is durable: a directory's operations persist in order).
 * Everything else is durable. <b>Crash states</b> at a point, each one image:
 * <ul>
 *   <li>every prefix of the pending operations (they reach the disk in order, and power fails after the k-th);
 *   <li>every prefix followed by part of the next write, if it spans 512-byte sectors (a torn write: any
 *       proper subset of its sectors when it spans at most 4, else the first j, all but one, and only one, for j
 *       and that one among the first and last eight);
 *   <li>every prefix with one earlier operation left out, together with the later ones that depend on it (writes
 *       to the same 4 KiB page of the same file, any truncation of that file, directory operations on the same
 *       name): the reorderings a file system allows for what was not forced.
 * </ul>
 * Each image is written to a scratch directory (a RAM disk when there is one) and opened twice: strict, and
 * repairing (not strict); each time the records must be one of the expected states, one more change must commit,
 * and a read-only reopen must find it. Identical images are opened once. Not thread-safe.
 */
final class CrashSimulator {
  /** A key no workload uses: the change made after each recovery. */
  static final String PROBE = "probe/after-the-power-cut";
  private static final int MAX_FAILURES_SHOWN = 3;

  /** What a run checked. */
  record Stats(int crashPoints, int crashStates, int images, long millis) {
    @Override
    public String toString() {
      return crashPoints + " crash points, " + crashStates + " crash states, " + images + " distinct images opened"
          + " (strict and repairing) in " + millis + " ms";
    }
  }

  /** What opening one image found, in each mode: the records, or the error. */
  private record Outcome(Map<String, String> strict, String strictError, boolean strictCorrupt,
      Map<String, String> repaired, String repairError) {}

  private record Pending(DiskOp op, Set<Long> unsyncedDirs) {}

  private final Path scratch;
  private final JournalStateStore.Options options;
  private final Map<String, Outcome> outcomes = new HashMap<>();
  private final List<String> failures = new ArrayList<>();
  private int crashPoints;
  private int crashStates;
  private int imageCount;

  /**
   * @param scratch a directory for images (a RAM disk is used instead when there is one)
   * @param segmentBytes the segment size the recorded store used (the recovered stores use it too)
   */
  CrashSimulator(Path scratch, long segmentBytes) throws IOException {
    Path shm = Path.of("/dev/shm");
    Path base = Files.isDirectory(shm) && Files.isWritable(shm) ? shm : scratch;
    this.scratch = Files.createTempDirectory(base, "crash-images-");
    this.options = JournalStateStore.Options.defaults().withSegmentBytes(segmentBytes)
        .withClock(Clock.fixed(Instant.parse("2026-01-01T00:00:00Z"), ZoneOffset.UTC));
  }

  /**
   * Checks every crash state of what {@code io} recorded; throws an {@link AssertionError} describing the first
   * failures, else returns what it checked.
   */
  Stats check(PowerCutIo io) throws IOException {
    long started = System.nanoTime();
    List<DiskOp> log = io.log();
    DiskModel durable = io.base();
    List<Pending> pending = new ArrayList<>();
    Expectation expect = null;
    try {
      for (int i = 0; i < log.size(); i++) {
        DiskOp op = log.get(i);
        if (op instanceof DiskOp.Expect e) {
          expect = e.expectation();
        } else if (op instanceof DiskOp.Sync s) {
          crashPoint(log, i, durable, pending, expect);
          if (s.ok()) {
            persistFile(durable, pending, s.inode());
          }
        } else if (op instanceof DiskOp.SyncDir s) {
          crashPoint(log, i, durable, pending, expect);
          persistDirectory(durable, pending, s.inode());
        } else {
          pending.add(new Pending(op, op instanceof DiskOp.DirectoryOp d ? new HashSet<>(d.directories()) : Set.of()));
        }
      }
      crashPoint(log, log.size(), durable, pending, expect);
    } finally {
      deleteTree(scratch);
    }
    Stats stats = new Stats(crashPoints, crashStates, imageCount, (System.nanoTime() - started) / 1_000_000);
    if (!failures.isEmpty()) {
      throw new AssertionError(failures.size() + " crash state(s) failed (" + stats + "); the first:\n\n"
          + String.join("\n\n", failures.subList(0, Math.min(MAX_FAILURES_SHOWN, failures.size()))));
    }
    return stats;
  }

  /** A file's force: its pending writes and truncations become durable. */
  private static void persistFile(DiskModel durable, List<Pending> pending, long inode) {
    pending.removeIf(p -> {
      if (p.op() instanceof DiskOp.Data d && d.inode() == inode) {
        durable.apply(p.op());
        return true;
      }
      return false;
    });
  }

  /** A directory's force: operations whose directories are all forced become durable, in order per directory. */
  private static void persistDirectory(DiskModel durable, List<Pending> pending, long dir) {
    Set<Long> blocked = new HashSet<>();
    pending.removeIf(p -> {
      if (!(p.op() instanceof DiskOp.DirectoryOp d)) {
        return false;
      }
      p.unsyncedDirs().remove(dir);
      if (p.unsyncedDirs().isEmpty() && d.directories().stream().noneMatch(blocked::contains)) {
        durable.apply(p.op());
        return true;
      }
      blocked.addAll(d.directories());
      return false;
    });
  }

  // ---- crash states ----

  private void crashPoint(List<DiskOp> log, int at, DiskModel durable, List<Pending> pending, Expectation expect)
      throws IOException {
    if (expect == null) {
      return;
    }
    crashPoints++;
    List<DiskOp> ops = pending.stream().map(Pending::op).toList();
    int n = ops.size();
    for (int k = 0; k <= n; k++) {
      BitSet kept = new BitSet();
      kept.set(0, k);
      state(log, at, durable, ops, kept, -1, null, expect, "the first " + k + " of " + n + " pending operations");
    }
    for (int k = 0; k < n; k++) {
      if (ops.get(k) instanceof DiskOp.Write w && !allZero(w.bytes())) {
        BitSet kept = new BitSet();
        kept.set(0, k);
        for (BitSet sectors : tornPatterns(w)) {
          state(log, at, durable, ops, kept, k, sectors, expect, "the first " + k + " of " + n
              + " pending operations, then sectors " + sectors + " of the next (a torn write)");
        }
      }
    }
    for (int k = 2; k <= n; k++) {
      for (int j = 0; j < k - 1; j++) {
        BitSet kept = new BitSet();
        kept.set(0, k);
        kept.andNot(dependents(ops, j, k));
        state(log, at, durable, ops, kept, -1, null, expect, "the first " + k + " of " + n
            + " pending operations without operation " + j + " and what depends on it (reordered)");
      }
    }
  }

  /** Operation {@code j} and those in {@code (j, k)} that must persist after it. */
  private static BitSet dependents(List<DiskOp> ops, int j, int k) {
    BitSet drop = new BitSet();
    drop.set(j);
    for (int i = j + 1; i < k; i++) {
      for (int d = drop.nextSetBit(0); d >= 0; d = drop.nextSetBit(d + 1)) {
        if (ordered(ops.get(d), ops.get(i))) {
          drop.set(i);
          break;
        }
      }
    }
    return drop;
  }

  /** Whether {@code later} can persist only after {@code earlier}, on any file system. */
  private static boolean ordered(DiskOp earlier, DiskOp later) {
    if (earlier instanceof DiskOp.Data a && later instanceof DiskOp.Data b) {
      if (a.inode() != b.inode()) {
        return false;
      }
      if (a instanceof DiskOp.Truncate || b instanceof DiskOp.Truncate) {
        return true;
      }
      long[] ra = range(a);
      long[] rb = range(b);
      return ra[0] / 4096 <= (rb[1] - 1) / 4096 && rb[0] / 4096 <= (ra[1] - 1) / 4096; // a shared page
    }
    if (earlier instanceof DiskOp.DirectoryOp a && later instanceof DiskOp.DirectoryOp b) {
      return a.names().stream().anyMatch(b.names()::contains);
    }
    return false;
  }

  private static long[] range(DiskOp.Data d) {
    if (d instanceof DiskOp.Write w) {
      return new long[] {w.position(), w.position() + Math.max(1, w.bytes().length)};
    }
    DiskOp.Zeros z = (DiskOp.Zeros) d;
    return new long[] {z.position(), z.position() + Math.max(1, z.length())};
  }

  /** Which sectors of a write persist, for a torn write: never none, never all. */
  private static List<BitSet> tornPatterns(DiskOp.Write w) {
    long first = w.position() / JournalReplay.SECTOR;
    int count = (int) ((w.position() + w.bytes().length - 1) / JournalReplay.SECTOR - first + 1);
    List<BitSet> patterns = new ArrayList<>();
    if (count <= 1) {
      return patterns; // a sector is written whole or not at all (the power-safe-overwrite assumption)
    }
    if (count <= 4) {
      for (long mask = 1; mask < (1L << count) - 1; mask++) {
        patterns.add(BitSet.valueOf(new long[] {mask}));
      }
      return patterns;
    }
    Set<Integer> ends = new TreeSet<>();
    for (int i = 0; i < count; i++) {
      if (i < 8 || i >= count - 8) {
        ends.add(i);
      }
    }
    for (int i : ends) {
      if (i > 0) {
        BitSet firstI = new BitSet();
        firstI.set(0, i);
        patterns.add(firstI);
      }
      BitSet allBut = new BitSet();
      allBut.set(0, count);
      allBut.clear(i);
      patterns.add(allBut);
      BitSet only = new BitSet();
      only.set(i);
      patterns.add(only);
    }
    return patterns;
  }

  private static boolean allZero(byte[] b) {
    for (byte x : b) {
      if (x != 0) {
        return false;
      }
    }
    return true;
  }

  /** Builds one crash state's image, opens it (once per distinct image) and checks it against {@code expect}. */
  private void state(List<DiskOp> log, int at, DiskModel durable, List<DiskOp> ops, BitSet kept, int torn,
      BitSet sectors, Expectation expect, String how) throws IOException {
    DiskModel image = durable.copy();
    for (int i = kept.nextSetBit(0); i >= 0; i = kept.nextSetBit(i + 1)) {
      image.apply(ops.get(i));
    }
    if (torn >= 0) {
      image.applyTorn((DiskOp.Write) ops.get(torn), sectors);
    }
    crashStates++;
    String digest = image.digest();
    Outcome outcome = outcomes.get(digest);
    if (outcome == null) {
      outcome = open(image);
      outcomes.put(digest, outcome);
    }
    String problem = judge(image, outcome, expect);
    if (problem != null) {
      failures.add(describe(log, at, ops, kept, torn, how, image, expect, problem));
    }
  }

  private static String judge(DiskModel image, Outcome o, Expectation expect) {
    for (Path p : expect.absent()) {
      if (image.exists(p)) {
        return p + " is there, but it was deleted durably before this point";
      }
    }
    if (o.strictCorrupt()) {
      if (!expect.strictMayFail()) {
        return "a strict open failed as corrupt: " + o.strictError();
      }
    } else if (o.strictError() != null) {
      return "strict: " + o.strictError();
    } else if (!expect.allowed().contains(o.strict())) {
      return "strict open found " + difference(o.strict(), expect.allowed());
    }
    if (o.repairError() != null) {
      return "repairing: " + o.repairError();
    }
    if (!expect.allowed().contains(o.repaired())) {
      return "repairing open found " + difference(o.repaired(), expect.allowed());
    }
    return null;
  }

  /** How {@code found} differs from the nearest allowed state. */
  private static String difference(Map<String, String> found, List<Map<String, String>> allowed) {
    String best = null;
    for (Map<String, String> a : allowed) {
      Set<String> missing = new TreeSet<>(a.keySet());
      missing.removeAll(found.keySet());
      Set<String> extra = new TreeSet<>(found.keySet());
      extra.removeAll(a.keySet());
      Set<String> changed = new TreeSet<>();
      for (String k : a.keySet()) {
        if (found.containsKey(k) && !found.get(k).equals(a.get(k))) {
          changed.add(k);
        }
      }
      String d = found.size() + " records; missing " + missing + ", not expected " + extra + ", other values "
          + changed;
      if (best == null || d.length() < best.length()) {
        best = d;
      }
    }
    return best;
  }

  private String describe(List<DiskOp> log, int at, List<DiskOp> ops, BitSet kept, int torn, String how,
      DiskModel image, Expectation expect, String problem) {
    StringBuilder b = new StringBuilder();
    b.append("power cut before operation ").append(at).append(" of ").append(log.size()).append(" (")
        .append(at < log.size() ? log.get(at).what() : "the end").append("), expecting '").append(expect)
        .append("': ").append(problem).append("\n crash state: ").append(how).append("\n pending:\n");
    for (int i = 0; i < ops.size(); i++) {
      b.append(kept.get(i) ? "   persisted " : i == torn ? "   torn      " : "   lost      ").append(ops.get(i).what())
          .append('\n');
    }
    b.append(" image:\n").append(image.describe());
    return b.toString();
  }

  // ---- opening an image ----

  private Outcome open(DiskModel image) throws IOException {
    imageCount++;
    Path strictCopy = scratch.resolve("image-" + imageCount + "-strict");
    Path repairCopy = scratch.resolve("image-" + imageCount + "-repair");
    Files.createDirectories(strictCopy);
    Files.createDirectories(repairCopy);
    image.writeTo(strictCopy);
    image.writeTo(repairCopy);
    try {
      Map<String, String> strict = null;
      String strictError = null;
      boolean corrupt = false;
      try {
        strict = recover(strictCopy.resolve("data"), options.withStrict(true));
      } catch (StateFileCorruptException e) {
        corrupt = true;
        strictError = e.getMessage();
      } catch (RuntimeException | AssertionError e) {
        strictError = e.toString();
      }
      Map<String, String> repaired = null;
      String repairError = null;
      try {
        repaired = recover(repairCopy.resolve("data"), options.withStrict(false));
      } catch (RuntimeException | AssertionError e) {
        repairError = e.toString();
      }
      return new Outcome(strict, strictError, corrupt, repaired, repairError);
    } finally {
      deleteTree(strictCopy);
      deleteTree(repairCopy);
    }
  }

  /** Opens, reads, commits one more change, closes; reopens read-only and checks that change is there. */
  private static Map<String, String> recover(Path data, JournalStateStore.Options options) {
    Map<String, String> found;
    try (JournalStateStore store = JournalStateStore.open(data, options)) {
      found = strings(store.loadAll());
      store.put(PROBE, bytes("committed after the power cut"));
    }
    try (JournalStateStore again = JournalStateStore.open(data, options.withStrict(true).withReadOnly(true))) {
      Map<String, String> after = strings(again.loadAll());
      Map<String, String> expected = new HashMap<>(found);
      expected.put(PROBE, "committed after the power cut");
      if (!after.equals(expected)) {
        throw new AssertionError("after recovering " + found.size() + " records and one more change, a reopen found "
            + difference(after, List.of(expected)));
      }
    }
    return found;
  }

  private static void deleteTree(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
