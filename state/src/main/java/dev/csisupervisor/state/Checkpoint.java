package dev.csisupervisor.state;

import dev.csisupervisor.common.Printable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.HTreeMap;
import org.mapdb.Serializer;
import org.mapdb.volume.FileChannelVol;
import org.mapdb.volume.Volume;

/**
 * A checkpoint: the whole record image as of one journal sequence, in a MapDB file that is written once under a
 * temporary name, closed, forced and renamed into place, and never written again (so MapDB's missing log replay
 * cannot hurt it).
 *
 * <p>The records are packed into chunks of about {@value #CHUNK_BYTES} bytes, each one MapDB value: a restore
 * reads a few large values instead of one MapDB record per registration, and decodes them with a flat loop.
 * A chunk is {@code u32 crc32c(payload) | payload}, the payload repeats {@code u16 keyLength | key (UTF-8) |
 * u32 valueLength | value}. A {@code meta} map holds the format version, the sequence, and the record and
 * chunk counts, all checked on read: a file that does not read back exactly is a {@link StateStoreException}.
 */
final class Checkpoint {
  static final int FORMAT = 1;
  static final int CHUNK_BYTES = 60_000; // under MapDB's largest single record (64 KiB): one read per chunk
  private static final String META = "meta";
  private static final String CHUNKS = "chunks";
  /** MapDB's page size, as its fileDB uses: 1 MiB. */
  private static final int PAGE_SHIFT = 20;
  /** Makes each temporary file's name unique in this process. */
  private static final AtomicLong TEMP_NAMES = new AtomicLong();

  private Checkpoint() {}

  /** A checkpoint's records and the journal sequence they include. */
  record Image(long sequence, Map<String, byte[]> records) {}

  /** Writes {@code records} as of {@code sequence} to {@code target} atomically: {@link #writeAside}, {@link #publish}. */
  static void write(Path target, long sequence, Map<String, byte[]> records, StateDirectory dir) throws IOException {
    publish(writeAside(target, sequence, records, dir), target, dir);
  }

  /**
   * Writes {@code records} as of {@code sequence} into a new temporary file beside {@code target}, closes it, forces
   * it and gives it mode 0600; returns it. Its name is this process's alone ({@code <target>.<n>.tmp}), so two
   * checkpoints of one sequence (a background one and the final one at close) never write into one file. On
   * failure the file is deleted.
   */
  static Path writeAside(Path target, long sequence, Map<String, byte[]> records, StateDirectory dir)
      throws IOException {
    Path temp = target.resolveSibling(target.getFileName() + "." + TEMP_NAMES.incrementAndGet()
        + StateDirectory.TEMP_SUFFIX);
    ContextClassLoader loader = ContextClassLoader.ensure();
    try {
      dir.io.delete(temp); // a file an earlier process left under this name: never data
      dir.io.open(temp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)).close();
      // Our own volume, closed in any case: where MapDB fails half-way (a full disk) its own close may not reach
      // the file, and an open descriptor of a deleted file would hold its blocks until the process exits.
      Volume volume = new FileChannelVol(temp.toFile(), false, -1L, PAGE_SHIFT, 0L);
      try {
        DB db = DBMaker.volumeDB(volume, false).make();
        try {
          fill(db, sequence, records);
        } finally {
          db.close();
        }
      } finally {
        volume.close();
      }
      try (FileChannel channel = dir.io.open(temp, Set.of(StandardOpenOption.WRITE))) {
        channel.force(true);
      }
      dir.restrictPermissions(temp);
      return temp;
    } catch (IOException | RuntimeException e) {
      deleteQuietly(temp, e, dir);
      throw e instanceof IOException io ? io : new IOException("MapDB could not write " + temp + ": " + e, e);
    } finally {
      loader.restore();
    }
  }

  /** Renames a checkpoint {@link #writeAside} wrote into place and forces the directory; deletes it on failure. */
  static void publish(Path temp, Path target, StateDirectory dir) throws IOException {
    try {
      dir.io.rename(temp, target);
      dir.sync();
    } catch (IOException | RuntimeException e) {
      deleteQuietly(temp, e, dir);
      throw e;
    }
  }

  private static void deleteQuietly(Path temp, Exception cause, StateDirectory dir) {
    try {
      dir.io.delete(temp);
    } catch (IOException suppressed) {
      cause.addSuppressed(suppressed);
    }
  }

  private static void fill(DB db, long sequence, Map<String, byte[]> records) {
    HTreeMap<Integer, byte[]> chunks = db.hashMap(CHUNKS, Serializer.INTEGER, Serializer.BYTE_ARRAY).create();
    ByteBuffer chunk = ByteBuffer.allocate(CHUNK_BYTES);
    int count = 0;
    chunk.position(4);
    for (Map.Entry<String, byte[]> e : records.entrySet()) {
      byte[] key = e.getKey().getBytes(StandardCharsets.UTF_8);
      byte[] value = e.getValue();
      int size = 2 + key.length + 4 + value.length;
      if (chunk.position() > 4 && chunk.remaining() < size) {
        chunks.put(count++, seal(chunk));
        chunk.clear().position(4);
      }
      if (chunk.remaining() < size) {
        chunk = ByteBuffer.allocate(4 + size).position(4);
      }
      chunk.putShort((short) key.length).put(key).putInt(value.length).put(value);
    }
    if (chunk.position() > 4) {
      chunks.put(count++, seal(chunk));
    }
    HTreeMap<String, Long> meta = db.hashMap(META, Serializer.STRING, Serializer.LONG).create();
    meta.put("format", (long) FORMAT);
    meta.put("sequence", sequence);
    meta.put("records", (long) records.size());
    meta.put("chunks", (long) count);
  }

  private static byte[] seal(ByteBuffer chunk) {
    byte[] bytes = new byte[chunk.position()];
    chunk.get(0, bytes);
    CRC32C crc = new CRC32C();
    crc.update(bytes, 4, bytes.length - 4);
    ByteBuffer.wrap(bytes).putInt(0, (int) crc.getValue());
    return bytes;
  }

  /**
   * Reads a checkpoint back, checking every chunk's CRC and the counts.
   *
   * @throws StateStoreException if the file is not exactly a checkpoint this code wrote (damage)
   */
  static Image read(Path file) {
    ContextClassLoader loader = ContextClassLoader.ensure();
    try {
      return readWithClassLoader(file);
    } finally {
      loader.restore();
    }
  }

  private static Image readWithClassLoader(Path file) {
    DB db;
    try {
      db = DBMaker.fileDB(file.toFile()).readOnly().fileChannelEnable().fileLockDisable().make();
    } catch (RuntimeException | AssertionError | StackOverflowError e) {
      throw new StateStoreException("checkpoint " + file + " cannot be opened by MapDB: " + StateDirectory.describe(e), e);
    }
    try {
      Map<String, Long> meta = db.hashMap(META, Serializer.STRING, Serializer.LONG).open();
      long format = value(meta, "format", file);
      if (format != FORMAT) {
        throw new StateStoreException("checkpoint " + file + " has format " + format + "; this agent reads format "
            + FORMAT);
      }
      long sequence = value(meta, "sequence", file);
      long expected = value(meta, "records", file);
      long chunkCount = value(meta, "chunks", file);
      Map<Integer, byte[]> chunks = db.hashMap(CHUNKS, Serializer.INTEGER, Serializer.BYTE_ARRAY).open();
      if (expected < 0 || expected > Integer.MAX_VALUE || chunkCount < 0 || chunkCount != chunks.size()) {
        throw new StateStoreException("checkpoint " + file + " says " + expected + " records in " + chunkCount
            + " chunks but holds " + chunks.size() + " chunks");
      }
      Map<String, byte[]> records = new HashMap<>((int) Math.min(expected * 4 / 3 + 1, 1 << 24));
      for (int i = 0; i < chunkCount; i++) {
        byte[] chunk = chunks.get(i);
        if (chunk == null) {
          throw new StateStoreException("checkpoint " + file + " lacks chunk " + i);
        }
        unpack(file, i, chunk, records);
      }
      if (records.size() != expected) {
        throw new StateStoreException("checkpoint " + file + " says " + expected + " records but holds "
            + records.size());
      }
      return new Image(sequence, records);
    } catch (StateStoreException e) {
      throw e;
    } catch (RuntimeException | AssertionError | StackOverflowError e) {
      throw new StateStoreException("checkpoint " + file + " cannot be read back: " + StateDirectory.describe(e), e);
    } finally {
      try {
        db.close();
      } catch (RuntimeException ignored) {
        // read-only: nothing to lose
      }
    }
  }

  private static long value(Map<String, Long> meta, String name, Path file) {
    Long v = meta.get(name);
    if (v == null) {
      throw new StateStoreException("checkpoint " + file + " has no '" + name + "' entry");
    }
    return v;
  }

  private static void unpack(Path file, int index, byte[] chunk, Map<String, byte[]> records) {
    ByteBuffer in = ByteBuffer.wrap(chunk);
    CRC32C crc = new CRC32C();
    if (chunk.length < 4) {
      throw new StateStoreException("checkpoint " + file + ": chunk " + index + " is " + chunk.length + " bytes long");
    }
    crc.update(chunk, 4, chunk.length - 4);
    if ((int) crc.getValue() != in.getInt(0)) {
      throw new StateStoreException("checkpoint " + file + ": chunk " + index + " fails its CRC32C check");
    }
    in.position(4);
    while (in.hasRemaining()) {
      if (in.remaining() < 6) {
        throw new StateStoreException("checkpoint " + file + ": chunk " + index + " ends inside a record");
      }
      int keyLength = in.getShort() & 0xffff;
      if (keyLength == 0 || keyLength > in.remaining() - 4) {
        throw new StateStoreException("checkpoint " + file + ": chunk " + index + " has a bad key length " + keyLength);
      }
      String key = new String(chunk, in.position(), keyLength, StandardCharsets.UTF_8);
      in.position(in.position() + keyLength);
      int valueLength = in.getInt();
      if (valueLength < 0 || valueLength > in.remaining()) {
        throw new StateStoreException("checkpoint " + file + ": chunk " + index + " has a bad value length "
            + valueLength);
      }
      byte[] value = new byte[valueLength];
      in.get(value);
      if (records.put(key, value) != null) {
        throw new StateStoreException("checkpoint " + file + " holds key " + Printable.quote(key) + " twice");
      }
    }
  }
}
