package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.VolumeContentSource;
import java.io.IOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The {@link InMemoryDriver}'s state on disk ({@code --state-file}), so that a mock plugin killed
 * with SIGKILL and started again keeps its volumes, as a real driver keeps them in its state
 * directory (kubernetes-csi hostpath's {@code --statedir}).
 *
 * <p>The format is UTF-8 text, one record per line, fields separated by one space, every free-text
 * field URL-encoded (so it holds no space or newline):
 *
 * <pre>
 * csi-mock-plugin-state 1
 * next-id 5
 * volume ID NAME CAPACITY SOURCE             (SOURCE: -, snapshot:ID or volume:ID)
 * controller-published VOLUME-ID NODE-ID READONLY
 * staged VOLUME-ID STAGING-PATH
 * published VOLUME-ID TARGET-PATH READONLY
 * snapshot ID NAME SOURCE-VOLUME-ID SIZE CREATED-EPOCH-SECONDS CREATED-NANOS
 * end
 * </pre>
 *
 * <p>A save writes the whole image to {@code FILE.tmp}, forces it, renames it over {@code FILE} and
 * forces the directory (the rename is durable too): a reader finds the old image or the new one,
 * never a torn one. The last line, {@code end}, catches a file cut short by other means. Not
 * thread-safe: the driver calls it under its lock. One process per file.
 */
final class DriverStateFile {

  static final String HEADER = "csi-mock-plugin-state 1";

  /** A volume as saved; {@code source} is null if it has none. */
  record StoredVolume(String id, String name, long capacity, VolumeContentSource source,
      Map<String, Boolean> publishedTo, Set<String> stagedAt, Map<String, Boolean> publishedAt) {}

  record StoredSnapshot(String id, String name, String sourceVolumeId, long size, Instant created) {}

  /** The whole driver state; volumes and snapshots in creation order (pagination indexes into it). */
  record Image(long nextId, List<StoredVolume> volumes, List<StoredSnapshot> snapshots) {
    static final Image EMPTY = new Image(1, List.of(), List.of());
  }

  private final Path file;

  DriverStateFile(Path file) {
    this.file = Objects.requireNonNull(file, "stateFile").toAbsolutePath().normalize();
  }

  Path path() {
    return file;
  }

  /**
   * The saved image, or {@link Image#EMPTY} if the file does not exist yet.
   *
   * @throws IOException naming the file (and the line, if it is malformed), or if its directory is
   *     missing: the first save would fail
   */
  Image load() throws IOException {
    Path parent = file.getParent();
    if (parent == null || !Files.isDirectory(parent)) {
      throw new IOException("state file " + file + ": its directory does not exist");
    }
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (NoSuchFileException e) {
      return Image.EMPTY;
    }
    return decode(text, file);
  }

  /** Replaces the file with {@code text}, durably and atomically. */
  void save(String text) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (FileChannel out = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.TRUNCATE_EXISTING)) {
      ByteBuffer bytes = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
      while (bytes.hasRemaining()) {
        out.write(bytes);
      }
      out.force(true); // the data is on disk before the name points at it
    }
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    try (FileChannel dir = FileChannel.open(file.getParent(), StandardOpenOption.READ)) {
      dir.force(true); // and the rename itself survives a crash of the machine
    }
  }

  // ---- codec ----------------------------------------------------------------------------------

  static String encode(Image image) {
    StringBuilder s = new StringBuilder(HEADER).append('\n');
    s.append("next-id ").append(image.nextId()).append('\n');
    for (StoredVolume v : image.volumes()) {
      line(s, "volume", v.id(), v.name(), Long.toString(v.capacity()), source(v.source()));
    }
    for (StoredVolume v : image.volumes()) {
      v.publishedTo().forEach((node, readonly) ->
          line(s, "controller-published", v.id(), node, readonly.toString()));
      v.stagedAt().forEach(path -> line(s, "staged", v.id(), path));
      v.publishedAt().forEach((path, readonly) -> line(s, "published", v.id(), path, readonly.toString()));
    }
    for (StoredSnapshot snap : image.snapshots()) {
      line(s, "snapshot", snap.id(), snap.name(), snap.sourceVolumeId(), Long.toString(snap.size()),
          Long.toString(snap.created().getEpochSecond()), Integer.toString(snap.created().getNano()));
    }
    return s.append("end\n").toString();
  }

  /** @throws IOException naming {@code file} and the line that is wrong */
  static Image decode(String text, Path file) throws IOException {
    String[] lines = text.split("\n", -1);
    if (!lines[0].equals(HEADER)) {
      throw malformed(file, 1, "the first line must be '" + HEADER + "'", lines[0]);
    }
    long nextId = -1;
    Map<String, StoredVolume> volumes = new LinkedHashMap<>();
    List<StoredSnapshot> snapshots = new ArrayList<>();
    boolean ended = false;
    for (int i = 1; i < lines.length; i++) {
      String line = lines[i];
      int number = i + 1;
      if (i == lines.length - 1 && line.isEmpty()) {
        break; // after the newline that ends the last line
      }
      if (ended) {
        throw malformed(file, number, "nothing may follow 'end'", line);
      }
      String[] f = line.split(" ", -1);
      try {
        switch (f[0]) {
          case "next-id" -> {
            fields(f, 2);
            nextId = number(f[1], "next-id");
          }
          case "volume" -> {
            fields(f, 5);
            String id = decode(f[1]);
            if (volumes.containsKey(id)) {
              throw new IllegalArgumentException("volume " + id + " appears twice");
            }
            volumes.put(id, new StoredVolume(id, decode(f[2]), number(f[3], "capacity"), source(decode(f[4])),
                new LinkedHashMap<>(), new LinkedHashSet<>(), new LinkedHashMap<>()));
          }
          case "controller-published" -> {
            fields(f, 4);
            volume(volumes, f[1]).publishedTo().put(decode(f[2]), bool(f[3]));
          }
          case "staged" -> {
            fields(f, 3);
            volume(volumes, f[1]).stagedAt().add(decode(f[2]));
          }
          case "published" -> {
            fields(f, 4);
            volume(volumes, f[1]).publishedAt().put(decode(f[2]), bool(f[3]));
          }
          case "snapshot" -> {
            fields(f, 7);
            snapshots.add(new StoredSnapshot(decode(f[1]), decode(f[2]), decode(f[3]), number(f[4], "size"),
                Instant.ofEpochSecond(number(f[5], "seconds"), number(f[6], "nanos"))));
          }
          case "end" -> {
            fields(f, 1);
            ended = true;
          }
          default -> throw new IllegalArgumentException("unknown record '" + f[0] + "'");
        }
      } catch (IllegalArgumentException | java.time.DateTimeException e) {
        throw malformed(file, number, e.getMessage(), line);
      }
    }
    if (!ended) {
      throw new IOException("state file " + file + ": it ends without its 'end' line (cut short?)");
    }
    if (nextId < 1) {
      throw new IOException("state file " + file + ": no valid 'next-id' line");
    }
    return new Image(nextId, List.copyOf(volumes.values()), List.copyOf(snapshots));
  }

  private static void line(StringBuilder s, String record, String... fields) {
    s.append(record);
    for (String field : fields) {
      s.append(' ').append(URLEncoder.encode(field, StandardCharsets.UTF_8));
    }
    s.append('\n');
  }

  private static String decode(String field) {
    return URLDecoder.decode(field, StandardCharsets.UTF_8);
  }

  private static void fields(String[] f, int count) {
    if (f.length != count) {
      throw new IllegalArgumentException("'" + f[0] + "' needs " + (count - 1) + " field(s), got " + (f.length - 1));
    }
  }

  private static StoredVolume volume(Map<String, StoredVolume> volumes, String encodedId) {
    StoredVolume v = volumes.get(decode(encodedId));
    if (v == null) {
      throw new IllegalArgumentException("no volume " + decode(encodedId) + " before this line");
    }
    return v;
  }

  private static long number(String field, String what) {
    try {
      return Long.parseLong(field);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(what + " must be a number, got '" + field + "'");
    }
  }

  private static boolean bool(String field) {
    return switch (field) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException("readonly must be true or false, got '" + field + "'");
    };
  }

  private static String source(VolumeContentSource source) {
    if (source == null) {
      return "-";
    }
    return switch (source.getTypeCase()) {
      case SNAPSHOT -> "snapshot:" + source.getSnapshot().getSnapshotId();
      case VOLUME -> "volume:" + source.getVolume().getVolumeId();
      default -> throw new IllegalStateException("a stored volume's source has no snapshot or volume: " + source);
    };
  }

  private static VolumeContentSource source(String field) {
    if (field.equals("-")) {
      return null;
    }
    if (field.startsWith("snapshot:")) {
      return VolumeContentSource.newBuilder().setSnapshot(VolumeContentSource.SnapshotSource.newBuilder()
          .setSnapshotId(field.substring("snapshot:".length()))).build();
    }
    if (field.startsWith("volume:")) {
      return VolumeContentSource.newBuilder().setVolume(VolumeContentSource.VolumeSource.newBuilder()
          .setVolumeId(field.substring("volume:".length()))).build();
    }
    throw new IllegalArgumentException("source must be -, snapshot:ID or volume:ID, got '" + field + "'");
  }

  private static IOException malformed(Path file, int line, String problem, String text) {
    return new IOException("state file " + file + " line " + line + ": " + problem + ": '" + text + "'");
  }
}
