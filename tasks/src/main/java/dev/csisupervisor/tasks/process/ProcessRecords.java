package dev.csisupervisor.tasks.process;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The launched plugin processes, in a small JSON file ({@code <data_dir>/processes.json}) kept
 * apart from the registry's state store: it describes processes, not registrations.
 *
 * <p>Every change rewrites the whole (small) file atomically: write a temporary file, fsync it,
 * rename it over the old one, fsync the directory. A crash leaves either the old or the new file.
 * A file that cannot be parsed is moved aside as {@code processes.json.corrupt-<time>} (logged)
 * and the agent starts with no records: it then launches fresh copies, and the processes it can no
 * longer recognise keep running untracked, which the log names.
 *
 * <p>Thread-safe: calls are serialized.
 */
public final class ProcessRecords {
  private static final Logger log = LoggerFactory.getLogger(ProcessRecords.class);
  private static final int FORMAT_VERSION = 1;
  private static final ObjectMapper JSON = JsonMapper.builder()
      .enable(SerializationFeature.INDENT_OUTPUT)
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .build();
  private static final DateTimeFormatter STAMP =
      DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss.SSS'Z'").withZone(ZoneOffset.UTC);

  record FileFormat(@JsonProperty("version") int version,
      @JsonProperty("processes") Map<String, ProcessRecord> processes) {}

  private final Path file;
  private final Clock clock;
  private final TreeMap<String, ProcessRecord> records = new TreeMap<>();

  private ProcessRecords(Path file, Clock clock) {
    this.file = file;
    this.clock = clock;
  }

  /**
   * Loads the records (none if the file does not exist; a corrupt file is moved aside).
   *
   * @throws IOException if the file exists but cannot be read, or the directory is unusable
   */
  public static ProcessRecords open(Path file, Clock clock) throws IOException {
    ProcessRecords r = new ProcessRecords(requireNonNull(file, "file"), requireNonNull(clock,
        "clock"));
    r.load();
    return r;
  }

  /**
   * Reads the records without changing anything (for inspection).
   *
   * @throws IOException if the file cannot be read or parsed
   */
  public static Map<String, ProcessRecord> read(Path file) throws IOException {
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      return Map.of();
    }
    try {
      FileFormat f = JSON.readValue(bytes, FileFormat.class);
      if (f == null || f.version() != FORMAT_VERSION) {
        throw new IOException("unknown format version " + (f == null ? "(empty)" : f.version()));
      }
      TreeMap<String, ProcessRecord> out = new TreeMap<>();
      if (f.processes() != null) {
        f.processes().forEach((id, rec) -> {
          if (rec != null && rec.id().equals(id)) {
            out.put(id, rec);
          }
        });
      }
      return out;
    } catch (RuntimeException e) {
      throw new IOException(e.getMessage(), e);
    }
  }

  private void load() throws IOException {
    if (!Files.exists(file)) {
      return;
    }
    try {
      records.putAll(read(file));
    } catch (java.nio.file.FileSystemException e) {
      throw e; // cannot read it at all (permissions, a directory): not a corrupt file
    } catch (IOException e) {
      Path aside = file.resolveSibling(file.getFileName() + ".corrupt-"
          + STAMP.format(clock.instant()));
      Files.move(file, aside, StandardCopyOption.REPLACE_EXISTING);
      log.error("process records file {} is unreadable ({}); moved it to {} and starting without"
          + " records: plugins will be launched anew", file, e.getMessage(), aside);
    }
  }

  public Path file() {
    return file;
  }

  public synchronized Map<String, ProcessRecord> all() {
    return Map.copyOf(records);
  }

  public synchronized Optional<ProcessRecord> get(String id) {
    return Optional.ofNullable(records.get(id));
  }

  /** Stores or replaces the record of {@code record.id()}; durable when it returns. */
  public synchronized void put(ProcessRecord record) throws IOException {
    requireNonNull(record, "record");
    ProcessRecord before = records.put(record.id(), record);
    try {
      write();
    } catch (IOException | RuntimeException e) {
      if (before == null) {
        records.remove(record.id());
      } else {
        records.put(record.id(), before);
      }
      throw e;
    }
  }

  /** Removes the record of {@code id} (no-op if absent); durable when it returns. */
  public synchronized void remove(String id) throws IOException {
    ProcessRecord before = records.remove(id);
    if (before == null) {
      return;
    }
    try {
      write();
    } catch (IOException | RuntimeException e) {
      records.put(id, before);
      throw e;
    }
  }

  /**
   * Removes the record of {@code id} only if it is the one of process {@code pid}: a stopping
   * task never removes the record of a newer task of the same plugin. Durable when it returns.
   */
  public synchronized void remove(String id, long pid) throws IOException {
    ProcessRecord current = records.get(id);
    if (current == null || current.pid() != pid) {
      return;
    }
    remove(id);
  }

  private void write() throws IOException {
    byte[] bytes = JSON.writeValueAsBytes(new FileFormat(FORMAT_VERSION, records));
    Path dir = file.toAbsolutePath().getParent();
    Files.createDirectories(dir);
    Path tmp = dir.resolve(file.getFileName() + ".tmp");
    try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE,
        StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
      ByteBuffer buf = ByteBuffer.wrap(bytes);
      while (buf.hasRemaining()) {
        ch.write(buf);
      }
      ch.force(true);
    }
    Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
    try {
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    } catch (AtomicMoveNotSupportedException e) {
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
    }
    // The rename is durable only once the directory entry is.
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      log.debug("fsync of directory {} failed: {}", dir, e.toString());
    }
  }
}
