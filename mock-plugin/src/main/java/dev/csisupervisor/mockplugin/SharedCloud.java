package dev.csisupervisor.mockplugin;

import dev.csisupervisor.mockplugin.CloudReport.Count;
import io.grpc.Status;
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
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * A "cloud" several mock plugin processes share ({@code --cloud FILE}): which disks exist and to which nodes each
 * is attached, in one file every change reads and writes under an exclusive file lock (so plugin processes on the
 * same machine see one cloud). A controller of any process attaches a disk to any node; a disk attached with a
 * single-node access mode is refused a second node ({@code FAILED_PRECONDITION}, as a cloud refuses to attach a
 * disk that is in use), so a double attachment cannot go unnoticed; an attach takes the scripted attach time. A
 * node plugin stages a disk it has never seen if the cloud has it attached to its node.
 *
 * <p>Disks have names: a CreateVolume by a name the cloud has (made by any process) answers that disk, so a create
 * sent again through another plugin process after its first sender died makes no second disk; the cloud hands out
 * the ids ({@code next}), so two processes never make the same id.
 *
 * <p><b>The oracle.</b> Node plugins record here what they have staged and published, per (disk, node, path), and
 * the cloud counts what a correct CO never does ({@link Count}): a single-node disk attached to a second node, a
 * detach from a node that still has the disk staged or published, a controller call from a deposed controller
 * agent (by the election revision its {@link Caller} headers carry). The counts are in the file, so they survive
 * plugin restarts; {@link #report()} reads them with everything else.
 *
 * <p>The file: one line per record, fields URL-encoded and separated by one space:
 * {@code disk ID CAPACITY [NAME]}, {@code attached ID NODE MULTI(0|1)}, {@code next N},
 * {@code staged ID NODE PATH}, {@code published ID NODE PATH}, {@code count KIND N},
 * {@code election PLUGIN REVISION AGENT} and {@code violation KIND TEXT} (the last {@value #KEPT_VIOLATIONS}). Lines
 * it does not know are skipped, so an older file (only the first three kinds) reads as a cloud with nothing staged
 * and nothing counted. Thread-safe (the lock is the file's; the JVM's own threads, of every plugin on the file, are serialised by one
 * monitor per file).
 */
final class SharedCloud {
  /** How many violation descriptions the file keeps (the counts are never capped). */
  static final int KEPT_VIOLATIONS = 100;

  private final Path file;
  private final Duration attachTime;

  SharedCloud(Path file, Duration attachTime) {
    this.file = file.toAbsolutePath().normalize();
    this.attachTime = attachTime;
  }

  Path file() {
    return file;
  }

  /** The file's content, parsed; changed in place by one {@link #locked} step. */
  private static final class State {
    final Map<String, Long> disks = new LinkedHashMap<>();
    final Map<String, String> names = new LinkedHashMap<>();
    final Map<String, Map<String, Boolean>> attached = new LinkedHashMap<>();
    long next;
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
  }

  /** A disk of the cloud: its id, capacity and name ("" if it was made without one). */
  record Disk(String id, long capacity, String name) {}

  /**
   * Reads, changes and writes the file under its lock; what {@code change} returns. The file is written only if
   * the change changed it.
   */
  private <T> T locked(Function<State, T> change) {
    synchronized (IN_THIS_JVM.computeIfAbsent(file, k -> new Object())) {
      return lockedFile(change);
    }
  }

  /**
   * One monitor per cloud file for the whole JVM: a {@link FileLock} is held for the JVM, so two plugins of one JVM
   * (two {@code SharedCloud}s on one file) locking it at once would fail ({@code OverlappingFileLockException})
   * rather than wait; they take turns here first.
   */
  private static final java.util.concurrent.ConcurrentMap<Path, Object> IN_THIS_JVM =
      new java.util.concurrent.ConcurrentHashMap<>();

  private <T> T lockedFile(Function<State, T> change) {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
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
      throw new UncheckedIOException("cloud file " + file + ": " + e.getMessage(), e);
    }
  }

  private static State parse(String text) {
    State s = new State();
    int n = 0;
    for (String line : text.split("\n")) {
      n++;
      String[] f = line.split(" ");
      try {
        switch (f[0]) {
          case "disk" -> {
            if (f.length == 3 || f.length == 4) {
              s.disks.put(dec(f[1]), Long.parseLong(f[2]));
              if (f.length == 4) {
                s.names.put(dec(f[1]), dec(f[3]));
              }
            }
          }
          case "attached" -> {
            if (f.length == 4) {
              s.attached.computeIfAbsent(dec(f[1]), k -> new LinkedHashMap<>()).put(dec(f[2]), f[3].equals("1"));
            }
          }
          case "next" -> {
            if (f.length == 2) {
              s.next = Long.parseLong(f[1]);
            }
          }
          case "staged", "published" -> {
            if (f.length == 4) {
              (f[0].equals("staged") ? s.staged : s.published).computeIfAbsent(dec(f[1]), k -> new LinkedHashMap<>())
                  .computeIfAbsent(dec(f[2]), k -> new LinkedHashSet<>()).add(dec(f[3]));
            }
          }
          case "count" -> {
            if (f.length == 3) {
              Optional<Count> kind = Count.ofKey(f[1]);
              if (kind.isPresent()) {
                s.counts.put(kind.get(), Long.parseLong(f[2]));
              }
            }
          }
          case "election" -> {
            if (f.length == 4) {
              s.elections.put(dec(f[1]), new CloudReport.Election(dec(f[1]), Long.parseLong(f[2]), dec(f[3])));
            }
          }
          case "violation" -> {
            if (f.length == 3) {
              s.violations.addLast(new String[] {f[1], dec(f[2])});
            }
          }
          default -> {
            // a line of a newer version, or an empty one: skipped
          }
        }
      } catch (IllegalArgumentException e) { // NumberFormatException too
        throw new IllegalArgumentException("line " + n + " is malformed (" + e.getMessage() + "): '" + line + "'", e);
      }
    }
    return s;
  }

  private static String format(State s) {
    StringBuilder b = new StringBuilder();
    s.disks.forEach((id, cap) -> b.append("disk ").append(enc(id)).append(' ').append(cap)
        .append(s.names.containsKey(id) ? " " + enc(s.names.get(id)) : "").append('\n'));
    s.attached.forEach((id, nodes) -> nodes.forEach((node, multi) -> b.append("attached ").append(enc(id)).append(' ')
        .append(enc(node)).append(' ').append(multi ? '1' : '0').append('\n')));
    if (s.next > 0) {
      b.append("next ").append(s.next).append('\n');
    }
    formatUses(b, "staged", s.staged);
    formatUses(b, "published", s.published);
    s.counts.forEach((kind, n) -> b.append("count ").append(kind.key()).append(' ').append(n).append('\n'));
    s.elections.values().forEach(e -> b.append("election ").append(enc(e.plugin())).append(' ').append(e.revision())
        .append(' ').append(enc(e.agentNodeId())).append('\n'));
    s.violations.forEach(v -> b.append("violation ").append(v[0]).append(' ').append(enc(v[1])).append('\n'));
    return b.toString();
  }

  private static void formatUses(StringBuilder b, String kind, Map<String, Map<String, Set<String>>> uses) {
    uses.forEach((id, nodes) -> nodes.forEach((node, paths) -> paths.forEach(path -> b.append(kind).append(' ')
        .append(enc(id)).append(' ').append(enc(node)).append(' ').append(enc(path)).append('\n'))));
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  private static String dec(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }

  /** A disk made by a controller of one of the processes. */
  void addDisk(String id, long capacity) {
    locked(s -> s.disks.put(id, capacity));
  }

  /**
   * The disk of this name, made now (id {@code idPrefix} + the cloud's next number, {@code capacity}) if the cloud has
   * none by that name.
   *
   * @return the disk, and whether it was made now
   */
  Map.Entry<Disk, Boolean> create(String name, long capacity, String idPrefix) {
    return locked(s -> {
      for (Map.Entry<String, String> e : s.names.entrySet()) {
        if (e.getValue().equals(name)) {
          return Map.entry(new Disk(e.getKey(), s.disks.getOrDefault(e.getKey(), 0L), name), false);
        }
      }
      String id;
      do {
        id = idPrefix + (++s.next);
      } while (s.disks.containsKey(id));
      s.disks.put(id, capacity);
      s.names.put(id, name);
      return Map.entry(new Disk(id, capacity, name), true);
    });
  }

  /** The disk of this name, if the cloud has one. */
  Optional<Disk> diskNamed(String name) {
    return locked(s -> s.names.entrySet().stream().filter(e -> e.getValue().equals(name)).findFirst()
        .map(e -> new Disk(e.getKey(), s.disks.getOrDefault(e.getKey(), 0L), name)));
  }

  /** The name the disk was made with, or its id if none. */
  String nameOf(String id) {
    return locked(s -> s.names.getOrDefault(id, id));
  }

  void removeDisk(String id) {
    locked(s -> {
      s.disks.remove(id);
      s.names.remove(id);
      s.attached.remove(id);
      return null;
    });
  }

  /** The disk's capacity, if the cloud has it. */
  Optional<Long> disk(String id) {
    return locked(s -> Optional.ofNullable(s.disks.get(id)));
  }

  /**
   * Attaches the disk to {@code node} after the scripted attach time; idempotent for a node it is attached to. A
   * refused second attachment is counted ({@link Count#DOUBLE_ATTACH}).
   *
   * @param multiNode whether the access mode lets more than one node have it
   * @throws io.grpc.StatusRuntimeException NOT_FOUND for a disk the cloud does not have, FAILED_PRECONDITION when it
   *     is attached to another node and either attachment is single-node
   */
  void attach(String id, String node, boolean multiNode) {
    if (!attachTime.isZero()) {
      try {
        Thread.sleep(attachTime.toMillis()); // the cloud's scripted attach time, as a real attach takes
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw Status.ABORTED.withDescription("attach interrupted").asRuntimeException();
      }
    }
    Status refused = locked(s -> {
      if (!s.disks.containsKey(id)) {
        return Status.NOT_FOUND.withDescription("disk '" + id + "' does not exist in the cloud");
      }
      Map<String, Boolean> on = s.attached.computeIfAbsent(id, k -> new LinkedHashMap<>());
      if (!on.containsKey(node)) {
        for (Map.Entry<String, Boolean> other : on.entrySet()) {
          if (!multiNode || !other.getValue()) {
            String what = "disk '" + id + "' is attached to node '" + other.getKey()
                + "' and cannot be attached to a second node";
            s.count(Count.DOUBLE_ATTACH, what + " ('" + node + "', " + (multiNode ? "multi" : "single") + "-node)");
            return Status.FAILED_PRECONDITION.withDescription(what);
          }
        }
        on.put(node, multiNode);
      }
      return null;
    });
    if (refused != null) {
      throw refused.asRuntimeException();
    }
  }

  /**
   * Detaches the disk from {@code node} (from every node if it is empty); nothing if it was not attached. A detach
   * from a node whose plugin still has the disk staged or published is counted ({@link Count#DETACH_IN_USE}), and
   * done all the same, as a cloud would.
   */
  void detach(String id, String node) {
    locked(s -> {
      Map<String, Boolean> on = s.attached.get(id);
      if (on != null) {
        for (String n : node.isEmpty() ? List.copyOf(on.keySet()) : List.of(node)) {
          if (on.remove(n) != null && s.inUse(id, n)) {
            s.count(Count.DETACH_IN_USE, "disk '" + id + "' detached from node '" + n + "' which has it "
                + describeUse(s, id, n));
          }
        }
        if (on.isEmpty()) {
          s.attached.remove(id);
        }
      }
      return null;
    });
  }

  private static String describeUse(State s, String id, String node) {
    List<String> parts = new ArrayList<>();
    Set<String> st = s.staged.getOrDefault(id, Map.of()).getOrDefault(node, Set.of());
    Set<String> pu = s.published.getOrDefault(id, Map.of()).getOrDefault(node, Set.of());
    if (!st.isEmpty()) {
      parts.add("staged at " + st);
    }
    if (!pu.isEmpty()) {
      parts.add("published at " + pu);
    }
    return String.join(" and ", parts);
  }

  /** The nodes the disk is attached to. */
  Set<String> attachedTo(String id) {
    return locked(s -> new LinkedHashSet<>(s.attached.getOrDefault(id, Map.of()).keySet()));
  }

  /** What a node plugin does to a disk, as the oracle records it. */
  enum NodeUse { STAGED, PUBLISHED }

  /**
   * The node plugin of {@code node} has (or, {@code on} false, no longer has) the disk staged or published at
   * {@code path}.
   */
  void recordNodeUse(NodeUse use, String id, String node, String path, boolean on) {
    locked(s -> {
      Map<String, Map<String, Set<String>>> uses = use == NodeUse.STAGED ? s.staged : s.published;
      if (on) {
        uses.computeIfAbsent(id, k -> new LinkedHashMap<>()).computeIfAbsent(node, k -> new LinkedHashSet<>())
            .add(path);
      } else {
        Map<String, Set<String>> nodes = uses.get(id);
        if (nodes != null && nodes.containsKey(node)) {
          nodes.get(node).remove(path);
          if (nodes.get(node).isEmpty()) {
            nodes.remove(node);
          }
          if (nodes.isEmpty()) {
            uses.remove(id);
          }
        }
      }
      return null;
    });
  }

  /**
   * A controller call of {@code method} to the plugin named {@code plugin} from {@code caller}: the first of a
   * higher election revision than any before is remembered as the plugin's controller; one of a lower revision, or
   * of the same revision from another agent, is counted ({@link Count#DEPOSED_CONTROLLER_CALL}).
   */
  void controllerCall(String plugin, Caller caller, String method) {
    locked(s -> {
      CloudReport.Election seen = s.elections.get(plugin);
      if (seen == null || caller.electionRevision() > seen.revision()) {
        s.elections.put(plugin, new CloudReport.Election(plugin, caller.electionRevision(), caller.agentNodeId()));
      } else if (caller.electionRevision() < seen.revision()
          || !caller.agentNodeId().equals(seen.agentNodeId())) {
        s.count(Count.DEPOSED_CONTROLLER_CALL, method + " to plugin '" + plugin + "' from agent '"
            + caller.agentNodeId() + "' at election revision " + caller.electionRevision() + " after agent '"
            + seen.agentNodeId() + "' called at revision " + seen.revision());
      }
      return null;
    });
  }

  /** Everything the cloud holds and has counted, read under the lock. */
  CloudReport report() {
    return locked(s -> {
      List<CloudReport.Attachment> attachments = new ArrayList<>();
      s.attached.forEach((id, nodes) -> nodes.forEach((node, multi) ->
          attachments.add(new CloudReport.Attachment(id, node, multi))));
      List<String> violations = new ArrayList<>();
      s.violations.forEach(v -> violations.add(v[0] + ": " + v[1]));
      return new CloudReport(file, s.counts, attachments, uses(s.staged), uses(s.published),
          List.copyOf(s.elections.values()), violations);
    });
  }

  private static List<CloudReport.NodeUse> uses(Map<String, Map<String, Set<String>>> uses) {
    List<CloudReport.NodeUse> out = new ArrayList<>();
    uses.forEach((id, nodes) -> nodes.forEach((node, paths) -> paths.forEach(p ->
        out.add(new CloudReport.NodeUse(id, node, p)))));
    return out;
  }
}
