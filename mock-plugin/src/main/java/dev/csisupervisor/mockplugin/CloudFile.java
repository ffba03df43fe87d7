package dev.csisupervisor.mockplugin;

import dev.csisupervisor.mockplugin.CloudReport.Count;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * The shared cloud's file ({@link SharedCloud}): its records parsed into a {@link State}, and one change at a time
 * applied under an exclusive file lock, the file rewritten only if the change changed it (then forced).
 *
 * <p>One line per record, fields URL-encoded and separated by one space:
 * <ul>
 *   <li>{@code disk ID CAPACITY [NAME]}, {@code attached ID NODE MULTI(0|1)}, {@code next N} — the disks;
 *   <li>{@code source ID snapshot|volume SOURCE_ID} — what a restored or cloned disk was made from;
 *       {@code capability ID mount|block MODE} — each (access type, access mode number) its create asked;
 *       {@code pool ID POOL} — the pool ({@code --pools}) it was made in; {@code mutable ID KEY VALUE} — its
 *       mutable parameters; {@code abnormal ID MESSAGE} — marked abnormal ({@code cloud-mark-abnormal});
 *   <li>{@code snapshot ID SOURCE SIZE CREATED_MS CUT_UNTIL_MS READY_AT_MS NAME} — a snapshot, cut by
 *       {@code CUT_UNTIL_MS} and ready to use from {@code READY_AT_MS} (epoch milliseconds);
 *   <li>{@code staged ID NODE PATH}, {@code published ID NODE PATH}, {@code count KIND N},
 *       {@code election PLUGIN REVISION AGENT}, {@code violation KIND TEXT} — the oracle's ({@link CloudOracle}).
 * </ul>
 * Lines it does not know (or with other field counts) are skipped, so an older file reads as a cloud without what it
 * lacks, and a line of a newer version is ignored. Thread-safe: the lock is the file's, and the JVM's own threads
 * (of every plugin on the file) take turns on one monitor per file.
 */
final class CloudFile {
  /** How many violation descriptions the file keeps (the counts are never capped). */
  static final int KEPT_VIOLATIONS = 100;

  private final Path path;

  CloudFile(Path path) {
    this.path = path.toAbsolutePath().normalize();
  }

  Path path() {
    return path;
  }

  /** A snapshot of the cloud; times in epoch milliseconds. */
  record Snap(String id, String source, long size, long createdMs, long cutUntilMs, long readyAtMs, String name) {}

  /** The file's content, parsed; changed in place by one {@link #locked} step. */
  static final class State {
    final Map<String, Long> disks = new LinkedHashMap<>();
    final Map<String, String> names = new LinkedHashMap<>();
    final Map<String, Map<String, Boolean>> attached = new LinkedHashMap<>();
    long next;
    /** disk -> "snapshot"|"volume" and the source's id */
    final Map<String, String[]> sources = new LinkedHashMap<>();
    /** disk -> "mount MODE" / "block MODE" */
    final Map<String, Set<String>> capabilities = new LinkedHashMap<>();
    final Map<String, String> pools = new LinkedHashMap<>();
    final Map<String, Map<String, String>> mutable = new LinkedHashMap<>();
    final Map<String, String> abnormal = new LinkedHashMap<>();
    final Map<String, Snap> snapshots = new LinkedHashMap<>();
    /** disk -> node -> staging paths */
    final Map<String, Map<String, Set<String>>> staged = new LinkedHashMap<>();
    /** disk -> node -> target paths */
    final Map<String, Map<String, Set<String>>> published = new LinkedHashMap<>();
    final Map<Count, Long> counts = new EnumMap<>(Count.class);
    /** plugin name -> the highest revision seen and its agent */
    final Map<String, CloudReport.Election> elections = new LinkedHashMap<>();
    final Deque<String[]> violations = new ArrayDeque<>(); // {kind, text}

    void count(Count kind, String text) {
      counts.merge(kind, 1L, Long::sum);
      violations.addLast(new String[] {kind.key(), text});
      while (violations.size() > KEPT_VIOLATIONS) {
        violations.removeFirst();
      }
    }

    boolean inUse(String disk, String node) {
      return !staged.getOrDefault(disk, Map.of()).getOrDefault(node, Set.of()).isEmpty()
          || !published.getOrDefault(disk, Map.of()).getOrDefault(node, Set.of()).isEmpty();
    }

    /** The id of the disk of this name, if any. */
    Optional<String> diskNamed(String name) {
      return names.entrySet().stream().filter(e -> e.getValue().equals(name)).map(Map.Entry::getKey).findFirst();
    }

    /** A new id: {@code prefix} and the cloud's next number, not taken by a disk or a snapshot. */
    String newId(String prefix) {
      String id;
      do {
        id = prefix + (++next);
      } while (disks.containsKey(id) || snapshots.containsKey(id));
      return id;
    }

    /** Forgets the disk and everything about it (not the oracle's records of its node uses). */
    void removeDisk(String id) {
      disks.remove(id);
      names.remove(id);
      attached.remove(id);
      sources.remove(id);
      capabilities.remove(id);
      pools.remove(id);
      mutable.remove(id);
      abnormal.remove(id);
    }
  }

  /**
   * Reads, changes and writes the file under its lock; what {@code change} returns. The file is written only if the
   * change changed it.
   */
  <T> T locked(Function<State, T> change) {
    synchronized (IN_THIS_JVM.computeIfAbsent(path, k -> new Object())) {
      return lockedFile(change);
    }
  }

  /**
   * One monitor per cloud file for the whole JVM: a {@link FileLock} is held for the JVM, so two plugins of one JVM
   * locking it at once would fail ({@code OverlappingFileLockException}) rather than wait; they take turns here.
   */
  private static final java.util.concurrent.ConcurrentMap<Path, Object> IN_THIS_JVM =
      new java.util.concurrent.ConcurrentHashMap<>();

  private <T> T lockedFile(Function<State, T> change) {
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE); FileLock lock = ch.lock()) {
      ByteBuffer buf = ByteBuffer.allocate((int) ch.size());
      while (buf.hasRemaining() && ch.read(buf) >= 0) {
        // read it all
      }
      String before = new String(buf.array(), StandardCharsets.UTF_8);
      State s = parse(before);
      T result = change.apply(s);
      String after = format(s);
      if (!after.equals(before)) {
        byte[] out = after.getBytes(StandardCharsets.UTF_8);
        ch.truncate(0);
        ch.write(ByteBuffer.wrap(out), 0);
        ch.force(true);
      }
      return result;
    } catch (IOException e) {
      throw new UncheckedIOException("cloud file " + path + ": " + e.getMessage(), e);
    }
  }

  static State parse(String text) {
    State s = new State();
    int n = 0;
    for (String line : text.split("\n")) {
      n++;
      String[] f = line.split(" ");
      try {
        parseLine(s, f);
      } catch (IllegalArgumentException e) { // NumberFormatException too
        throw new IllegalArgumentException("line " + n + " is malformed (" + e.getMessage() + "): '" + line + "'", e);
      }
    }
    return s;
  }

  private static void parseLine(State s, String[] f) {
    switch (f[0] + "/" + f.length) {
      case "disk/3", "disk/4" -> {
        s.disks.put(dec(f[1]), Long.parseLong(f[2]));
        if (f.length == 4) {
          s.names.put(dec(f[1]), dec(f[3]));
        }
      }
      case "attached/4" -> s.attached.computeIfAbsent(dec(f[1]), k -> new LinkedHashMap<>())
          .put(dec(f[2]), f[3].equals("1"));
      case "next/2" -> s.next = Long.parseLong(f[1]);
      case "source/4" -> s.sources.put(dec(f[1]), new String[] {f[2], dec(f[3])});
      case "capability/4" -> s.capabilities.computeIfAbsent(dec(f[1]), k -> new LinkedHashSet<>())
          .add(f[2] + " " + Integer.parseInt(f[3]));
      case "pool/3" -> s.pools.put(dec(f[1]), dec(f[2]));
      case "mutable/4" -> s.mutable.computeIfAbsent(dec(f[1]), k -> new TreeMap<>()).put(dec(f[2]), dec(f[3]));
      case "abnormal/3" -> s.abnormal.put(dec(f[1]), dec(f[2]));
      case "snapshot/8" -> s.snapshots.put(dec(f[1]), new Snap(dec(f[1]), dec(f[2]), Long.parseLong(f[3]),
          Long.parseLong(f[4]), Long.parseLong(f[5]), Long.parseLong(f[6]), dec(f[7])));
      case "staged/4", "published/4" -> (f[0].equals("staged") ? s.staged : s.published)
          .computeIfAbsent(dec(f[1]), k -> new LinkedHashMap<>())
          .computeIfAbsent(dec(f[2]), k -> new LinkedHashSet<>()).add(dec(f[3]));
      case "count/3" -> Count.ofKey(f[1]).ifPresent(kind -> s.counts.put(kind, Long.parseLong(f[2])));
      case "election/4" -> s.elections.put(dec(f[1]),
          new CloudReport.Election(dec(f[1]), Long.parseLong(f[2]), dec(f[3])));
      case "violation/3" -> s.violations.addLast(new String[] {f[1], dec(f[2])});
      default -> {
        // a line of a newer version, or an empty one: skipped
      }
    }
  }

  static String format(State s) {
    StringBuilder b = new StringBuilder();
    s.disks.forEach((id, cap) -> b.append("disk ").append(enc(id)).append(' ').append(cap)
        .append(s.names.containsKey(id) ? " " + enc(s.names.get(id)) : "").append('\n'));
    s.attached.forEach((id, nodes) -> nodes.forEach((node, multi) -> b.append("attached ").append(enc(id)).append(' ')
        .append(enc(node)).append(' ').append(multi ? '1' : '0').append('\n')));
    if (s.next > 0) {
      b.append("next ").append(s.next).append('\n');
    }
    s.sources.forEach((id, src) -> line(b, "source", enc(id), src[0], enc(src[1])));
    s.capabilities.forEach((id, caps) -> caps.forEach(c -> line(b, "capability", enc(id), c)));
    s.pools.forEach((id, pool) -> line(b, "pool", enc(id), enc(pool)));
    s.mutable.forEach((id, kv) -> kv.forEach((k, v) -> line(b, "mutable", enc(id), enc(k), enc(v))));
    s.abnormal.forEach((id, message) -> line(b, "abnormal", enc(id), enc(message)));
    s.snapshots.values().forEach(x -> line(b, "snapshot", enc(x.id()), enc(x.source()), Long.toString(x.size()),
        Long.toString(x.createdMs()), Long.toString(x.cutUntilMs()), Long.toString(x.readyAtMs()), enc(x.name())));
    formatUses(b, "staged", s.staged);
    formatUses(b, "published", s.published);
    s.counts.forEach((kind, n) -> b.append("count ").append(kind.key()).append(' ').append(n).append('\n'));
    s.elections.values().forEach(e -> b.append("election ").append(enc(e.plugin())).append(' ').append(e.revision())
        .append(' ').append(enc(e.agentNodeId())).append('\n'));
    s.violations.forEach(v -> b.append("violation ").append(v[0]).append(' ').append(enc(v[1])).append('\n'));
    return b.toString();
  }

  private static void line(StringBuilder b, String kind, String... fields) {
    b.append(kind);
    for (String f : fields) {
      b.append(' ').append(f);
    }
    b.append('\n');
  }

  private static void formatUses(StringBuilder b, String kind, Map<String, Map<String, Set<String>>> uses) {
    uses.forEach((id, nodes) -> nodes.forEach((node, paths) -> paths.forEach(path -> b.append(kind).append(' ')
        .append(enc(id)).append(' ').append(enc(node)).append(' ').append(enc(path)).append('\n'))));
  }

  static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  static String dec(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }
}
