package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * A directory tree in memory, by inode: what a disk holds. Directories map names to inodes; a file is its bytes (an
 * array never changed once made, so copies of a model share them). An inode no name reaches is an orphan, and not
 * part of the tree. Inode 0 is the root: the directory the recording started in. Not thread-safe.
 */
final class DiskModel {
  static final long ROOT = 0;

  private final Map<Long, Map<String, Long>> dirs;
  private final Map<Long, byte[]> files;

  private DiskModel(Map<Long, Map<String, Long>> dirs, Map<Long, byte[]> files) {
    this.dirs = dirs;
    this.files = files;
  }

  /** The tree below {@code root} as it is now; inodes numbered from 1 in a walk. */
  static DiskModel read(Path root) throws IOException {
    DiskModel m = new DiskModel(new HashMap<>(), new HashMap<>());
    m.dirs.put(ROOT, new TreeMap<>());
    m.readInto(root, ROOT, new long[] {1});
    return m;
  }

  private void readInto(Path dir, long inode, long[] next) throws IOException {
    try (Stream<Path> entries = Files.list(dir)) {
      for (Path p : entries.sorted().toList()) {
        long child = next[0]++;
        dirs.get(inode).put(p.getFileName().toString(), child);
        if (Files.isDirectory(p)) {
          dirs.put(child, new TreeMap<>());
          readInto(p, child, next);
        } else {
          files.put(child, Files.readAllBytes(p));
        }
      }
    }
  }

  /** A copy that shares the file arrays (they never change). */
  DiskModel copy() {
    Map<Long, Map<String, Long>> d = new HashMap<>();
    dirs.forEach((k, v) -> d.put(k, new TreeMap<>(v)));
    return new DiskModel(d, new HashMap<>(files));
  }

  long maxInode() {
    long max = ROOT;
    for (long k : dirs.keySet()) {
      max = Math.max(max, k);
    }
    for (long k : files.keySet()) {
      max = Math.max(max, k);
    }
    return max;
  }

  /** The inode at {@code relative} (a path below the root), or null. */
  Long resolve(Path relative) {
    long at = ROOT;
    if (relative.toString().isEmpty()) {
      return at;
    }
    for (Path name : relative) {
      Map<String, Long> entries = dirs.get(at);
      Long next = entries == null ? null : entries.get(name.toString());
      if (next == null) {
        return null;
      }
      at = next;
    }
    return at;
  }

  /** Where {@code inode} is in the tree, for messages. */
  String pathOf(long inode) {
    String p = pathOf(ROOT, "", inode);
    return p != null ? p : "(inode " + inode + ", no name)";
  }

  private String pathOf(long dir, String path, long inode) {
    for (Map.Entry<String, Long> e : dirs.get(dir).entrySet()) {
      String p = path.isEmpty() ? e.getKey() : path + "/" + e.getKey();
      if (e.getValue() == inode) {
        return p;
      }
      if (dirs.containsKey(e.getValue())) {
        String found = pathOf(e.getValue(), p, inode);
        if (found != null) {
          return found;
        }
      }
    }
    return null;
  }

  /** A file's bytes (empty for an unknown one). */
  byte[] content(long inode) {
    return files.getOrDefault(inode, new byte[0]);
  }

  /** Applies an operation whole. */
  void apply(DiskOp op) {
    if (op instanceof DiskOp.Create c) {
      files.putIfAbsent(c.inode(), new byte[0]);
      dir(c.dir()).put(c.name(), c.inode());
    } else if (op instanceof DiskOp.Mkdir m) {
      dirs.putIfAbsent(m.inode(), new TreeMap<>());
      dir(m.dir()).put(m.name(), m.inode());
    } else if (op instanceof DiskOp.Rename r) {
      Long moved = dir(r.fromDir()).remove(r.fromName());
      if (moved != null) {
        dir(r.toDir()).put(r.toName(), moved);
      }
    } else if (op instanceof DiskOp.Unlink u) {
      dir(u.dir()).remove(u.name());
    } else if (op instanceof DiskOp.Write w) {
      write(w.inode(), w.position(), w.bytes(), null);
    } else if (op instanceof DiskOp.Zeros z) {
      byte[] b = Arrays.copyOf(content(z.inode()), Math.max(content(z.inode()).length,
          Math.toIntExact(z.position() + z.length())));
      Arrays.fill(b, (int) z.position(), (int) (z.position() + z.length()), (byte) 0);
      files.put(z.inode(), b);
    } else if (op instanceof DiskOp.Truncate t) {
      files.put(t.inode(), Arrays.copyOf(content(t.inode()), Math.toIntExact(t.size())));
    }
  }

  /**
   * Applies the 512-byte sectors of a write that {@code sectors} names (bit i: the i-th sector the write touches,
   * counted from the sector holding its first byte): a write a power cut tore. The file grows to the end of the
   * write if any of it persisted; sectors that did not persist keep their old bytes (zeros past the old end).
   */
  void applyTorn(DiskOp.Write w, BitSet sectors) {
    write(w.inode(), w.position(), w.bytes(), sectors);
  }

  private void write(long inode, long position, byte[] bytes, BitSet sectors) {
    byte[] old = content(inode);
    int end = Math.toIntExact(position + bytes.length);
    byte[] b = Arrays.copyOf(old, Math.max(old.length, end));
    int first = (int) (position / JournalReplay.SECTOR);
    for (int i = 0; i < bytes.length; i++) {
      int at = (int) position + i;
      if (sectors == null || sectors.get(at / JournalReplay.SECTOR - first)) {
        b[at] = bytes[i];
      }
    }
    files.put(inode, b);
  }

  private Map<String, Long> dir(long inode) {
    return dirs.computeIfAbsent(inode, k -> new TreeMap<>());
  }

  /** Writes the tree into {@code target} (an empty directory). */
  void writeTo(Path target) throws IOException {
    writeDir(ROOT, target);
  }

  private void writeDir(long inode, Path target) throws IOException {
    for (Map.Entry<String, Long> e : dirs.get(inode).entrySet()) {
      Path p = target.resolve(e.getKey());
      if (dirs.containsKey(e.getValue())) {
        Files.createDirectory(p);
        writeDir(e.getValue(), p);
      } else {
        Files.write(p, content(e.getValue()));
      }
    }
  }

  /** Whether a file or directory is at {@code relative}. */
  boolean exists(Path relative) {
    return resolve(relative) != null;
  }

  /**
   * A digest of the tree: names, kinds, sizes and CRCs of the bytes, leaving out files named {@code *.tmp} (the
   * store never reads one: open deletes them), so that images differing only there count as one.
   */
  String digest() {
    StringBuilder b = new StringBuilder();
    walk(ROOT, "", (path, data) -> {
      if (data == null) {
        b.append(path).append("/;");
      } else if (!path.endsWith(StateDirectory.TEMP_SUFFIX)) {
        CRC32C crc = new CRC32C();
        crc.update(data);
        b.append(path).append('=').append(data.length).append(':').append(Long.toHexString(crc.getValue()))
            .append(';');
      }
    });
    return b.toString();
  }

  /** The tree as lines (for failure messages). */
  String describe() {
    StringBuilder b = new StringBuilder();
    walk(ROOT, "", (path, data) -> b.append("  ").append(path)
        .append(data == null ? "/" : " (" + data.length + " bytes)").append('\n'));
    return b.toString();
  }

  /** Visits every entry below {@code inode}, parents first: its path, and its bytes (null for a directory). */
  private void walk(long inode, String path, BiConsumer<String, byte[]> visitor) {
    for (Map.Entry<String, Long> e : dirs.get(inode).entrySet()) {
      String p = path + "/" + e.getKey();
      boolean dir = dirs.containsKey(e.getValue());
      visitor.accept(p, dir ? null : content(e.getValue()));
      if (dir) {
        walk(e.getValue(), p, visitor);
      }
    }
  }
}
