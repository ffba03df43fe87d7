package dev.csisupervisor.mockplugin;

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
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

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
 * <p>The file: one line per record, fields URL-encoded and separated by one space:
 * {@code disk ID CAPACITY [NAME]}, {@code attached ID NODE MULTI(0|1)} and {@code next N}. Thread-safe (the lock is the file's; the
 * JVM's own threads are serialised by {@code this}).
 */
final class SharedCloud {
  private final Path file;
  private final Duration attachTime;

  SharedCloud(Path file, Duration attachTime) {
    this.file = file.toAbsolutePath().normalize();
    this.attachTime = attachTime;
  }

  Path file() {
    return file;
  }

  private record State(Map<String, Long> disks, Map<String, String> names, Map<String, Map<String, Boolean>> attached,
      long[] next) {}

  /** A disk of the cloud: its id, capacity and name ("" if it was made without one). */
  record Disk(String id, long capacity, String name) {}

  /** Reads, changes and writes the file under its lock; what {@code change} returns. */
  private synchronized <T> T locked(java.util.function.Function<State, T> change) {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE); FileLock lock = ch.lock()) {
      ByteBuffer buf = ByteBuffer.allocate((int) ch.size());
      while (buf.hasRemaining() && ch.read(buf) >= 0) {
        // read it all
      }
      State s = parse(new String(buf.array(), StandardCharsets.UTF_8));
      T result = change.apply(s);
      byte[] out = format(s).getBytes(StandardCharsets.UTF_8);
      ch.truncate(0);
      ch.write(ByteBuffer.wrap(out), 0);
      ch.force(true);
      return result;
    } catch (IOException e) {
      throw new UncheckedIOException("cloud file " + file + ": " + e.getMessage(), e);
    }
  }

  private static State parse(String text) {
    Map<String, Long> disks = new LinkedHashMap<>();
    Map<String, String> names = new LinkedHashMap<>();
    Map<String, Map<String, Boolean>> attached = new LinkedHashMap<>();
    long[] next = {0};
    for (String line : text.split("\n")) {
      String[] f = line.split(" ");
      if ((f.length == 3 || f.length == 4) && f[0].equals("disk")) {
        disks.put(dec(f[1]), Long.parseLong(f[2]));
        if (f.length == 4) {
          names.put(dec(f[1]), dec(f[3]));
        }
      } else if (f.length == 4 && f[0].equals("attached")) {
        attached.computeIfAbsent(dec(f[1]), k -> new LinkedHashMap<>()).put(dec(f[2]), f[3].equals("1"));
      } else if (f.length == 2 && f[0].equals("next")) {
        next[0] = Long.parseLong(f[1]);
      }
    }
    return new State(disks, names, attached, next);
  }

  private static String format(State s) {
    StringBuilder b = new StringBuilder();
    s.disks().forEach((id, cap) -> b.append("disk ").append(enc(id)).append(' ').append(cap)
        .append(s.names().containsKey(id) ? " " + enc(s.names().get(id)) : "").append('\n'));
    s.attached().forEach((id, nodes) -> nodes.forEach((node, multi) -> b.append("attached ").append(enc(id)).append(' ')
        .append(enc(node)).append(' ').append(multi ? '1' : '0').append('\n')));
    if (s.next()[0] > 0) {
      b.append("next ").append(s.next()[0]).append('\n');
    }
    return b.toString();
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  private static String dec(String s) {
    return URLDecoder.decode(s, StandardCharsets.UTF_8);
  }

  /** A disk made by a controller of one of the processes. */
  void addDisk(String id, long capacity) {
    locked(s -> s.disks().put(id, capacity));
  }

  /**
   * The disk of this name, made now (id {@code idPrefix} + the cloud's next number, {@code capacity}) if the cloud has
   * none by that name.
   *
   * @return the disk, and whether it was made now
   */
  java.util.Map.Entry<Disk, Boolean> create(String name, long capacity, String idPrefix) {
    return locked(s -> {
      for (Map.Entry<String, String> e : s.names().entrySet()) {
        if (e.getValue().equals(name)) {
          return Map.entry(new Disk(e.getKey(), s.disks().getOrDefault(e.getKey(), 0L), name), false);
        }
      }
      String id;
      do {
        id = idPrefix + (++s.next()[0]);
      } while (s.disks().containsKey(id));
      s.disks().put(id, capacity);
      s.names().put(id, name);
      return Map.entry(new Disk(id, capacity, name), true);
    });
  }

  /** The disk of this name, if the cloud has one. */
  java.util.Optional<Disk> diskNamed(String name) {
    return locked(s -> s.names().entrySet().stream().filter(e -> e.getValue().equals(name)).findFirst()
        .map(e -> new Disk(e.getKey(), s.disks().getOrDefault(e.getKey(), 0L), name)));
  }

  /** The name the disk was made with, or its id if none. */
  String nameOf(String id) {
    return locked(s -> s.names().getOrDefault(id, id));
  }

  void removeDisk(String id) {
    locked(s -> {
      s.disks().remove(id);
      s.names().remove(id);
      s.attached().remove(id);
      return null;
    });
  }

  /** The disk's capacity, if the cloud has it. */
  java.util.Optional<Long> disk(String id) {
    return locked(s -> java.util.Optional.ofNullable(s.disks().get(id)));
  }

  /**
   * Attaches the disk to {@code node} after the scripted attach time; idempotent for a node it is attached to.
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
    locked(s -> {
      if (!s.disks().containsKey(id)) {
        throw Status.NOT_FOUND.withDescription("disk '" + id + "' does not exist in the cloud").asRuntimeException();
      }
      Map<String, Boolean> on = s.attached().computeIfAbsent(id, k -> new LinkedHashMap<>());
      if (!on.containsKey(node)) {
        for (Map.Entry<String, Boolean> other : on.entrySet()) {
          if (!multiNode || !other.getValue()) {
            throw Status.FAILED_PRECONDITION.withDescription("disk '" + id + "' is attached to node '" + other.getKey()
                + "' and cannot be attached to a second node").asRuntimeException();
          }
        }
        on.put(node, multiNode);
      }
      return null;
    });
  }

  /** Detaches the disk from {@code node}; nothing if it was not attached. */
  void detach(String id, String node) {
    locked(s -> {
      Map<String, Boolean> on = s.attached().get(id);
      if (on != null) {
        on.remove(node);
        if (on.isEmpty()) {
          s.attached().remove(id);
        }
      }
      return null;
    });
  }

  /** The nodes the disk is attached to. */
  Set<String> attachedTo(String id) {
    return locked(s -> new LinkedHashSet<>(s.attached().getOrDefault(id, Map.of()).keySet()));
  }
}
