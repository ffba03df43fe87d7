package dev.csisupervisor.mockplugin;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BiPredicate;

/**
 * What a shared cloud ({@code --cloud FILE}, {@link MockCsiPlugin.Builder#cloud}) holds now and what its oracle has
 * counted since the file was made: a snapshot read under the file's lock. The counts, each a call the cloud saw
 * that a correct container orchestrator never makes ({@link Count}); the disks attached to each node; what each
 * node plugin has staged and published; per plugin name the highest election revision that made a controller call.
 *
 * <p>The cloud cannot see the CO's own records, so the settle check "no disk attached that nothing records" is
 * {@link #unrecorded}: the caller gives what its records say (e.g. etcd's attachment keys), the report answers the
 * attachments outside them. Immutable; thread-safe.
 *
 * @param file the cloud file
 * @param counts every {@link Count}, 0 if never seen
 * @param attachments the attachments now, by disk then node in the file's order
 * @param staged what node plugins have staged now: (disk, node, staging path)
 * @param published what node plugins have published now: (disk, node, target path)
 * @param elections per plugin name (GetPluginInfo's), the highest election revision a controller call carried
 * @param violations a description of each of the last {@value CloudFile#KEPT_VIOLATIONS} counted calls, oldest first
 */
public record CloudReport(Path file, Map<Count, Long> counts, List<Attachment> attachments, List<NodeUse> staged,
    List<NodeUse> published, List<Election> elections, List<String> violations) {

  /** What the oracle counts. */
  public enum Count {
    /**
     * ControllerPublishVolume of a disk to a node while it is attached to another, and one of the two attachments is
     * single-node (the cloud refuses it, FAILED_PRECONDITION; counted all the same).
     */
    DOUBLE_ATTACH,
    /**
     * ControllerUnpublishVolume that detached a disk from a node whose node plugin still has it staged or published
     * there (CSI: the CO calls it only after every NodeUnpublishVolume and NodeUnstageVolume succeeded).
     */
    DETACH_IN_USE,
    /**
     * A controller call whose caller ({@link Caller}) carried a lower election revision than one an earlier
     * controller call of the same plugin name carried (a deposed controller agent acting after its successor
     * started), or the same revision from another agent. Calls without the caller headers are not counted.
     */
    DEPOSED_CONTROLLER_CALL;

    /** Its name in the file and in the report: {@code double_attach}, {@code detach_in_use}, ... */
    public String key() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }

    static Optional<Count> ofKey(String key) {
      for (Count c : values()) {
        if (c.key().equals(key)) {
          return Optional.of(c);
        }
      }
      return Optional.empty();
    }
  }

  /** A disk attached to a node; {@code multiNode}: with a multi-node access mode. */
  public record Attachment(String volumeId, String nodeId, boolean multiNode) {
    public Attachment {
      Objects.requireNonNull(volumeId, "volumeId");
      Objects.requireNonNull(nodeId, "nodeId");
    }
  }

  /** A disk staged (or published) by the node plugin of {@code nodeId} at {@code path}. */
  public record NodeUse(String volumeId, String nodeId, String path) {
    public NodeUse {
      Objects.requireNonNull(volumeId, "volumeId");
      Objects.requireNonNull(nodeId, "nodeId");
      Objects.requireNonNull(path, "path");
    }
  }

  /** The highest election revision a controller call of {@code plugin} carried, and the agent that sent it. */
  public record Election(String plugin, long revision, String agentNodeId) {
    public Election {
      Objects.requireNonNull(plugin, "plugin");
      Objects.requireNonNull(agentNodeId, "agentNodeId");
    }
  }

  public CloudReport {
    Objects.requireNonNull(file, "file");
    EnumMap<Count, Long> all = new EnumMap<>(Count.class);
    for (Count c : Count.values()) {
      all.put(c, Objects.requireNonNull(counts, "counts").getOrDefault(c, 0L));
    }
    counts = java.util.Collections.unmodifiableMap(all);
    attachments = List.copyOf(attachments);
    staged = List.copyOf(staged);
    published = List.copyOf(published);
    elections = List.copyOf(elections);
    violations = List.copyOf(violations);
  }

  /**
   * Reads the cloud file under its lock (changing nothing).
   *
   * @throws NoSuchFileException if there is no such file (no plugin has used that cloud yet)
   * @throws IOException naming the file if it cannot be read or a line is malformed
   */
  public static CloudReport read(Path cloudFile) throws IOException {
    Objects.requireNonNull(cloudFile, "cloudFile");
    if (!Files.isRegularFile(cloudFile)) {
      throw new NoSuchFileException(cloudFile.toString(), null, "no cloud file");
    }
    try {
      return new SharedCloud(cloudFile, Duration.ZERO).report();
    } catch (java.io.UncheckedIOException e) {
      throw e.getCause();
    } catch (IllegalArgumentException e) {
      throw new IOException("cloud file " + cloudFile + ": " + e.getMessage(), e);
    }
  }

  /** The count of {@code c}. */
  public long count(Count c) {
    return counts.get(Objects.requireNonNull(c, "c"));
  }

  /** All counts added up: 0 when the oracle has seen nothing wrong. */
  public long total() {
    return counts.values().stream().mapToLong(Long::longValue).sum();
  }

  /**
   * The attachments that {@code recorded} does not know: at settle, disks attached that nothing records.
   *
   * @param recorded whether the CO's records have an attachment of (volume id, node id)
   */
  public List<Attachment> unrecorded(BiPredicate<String, String> recorded) {
    Objects.requireNonNull(recorded, "recorded");
    List<Attachment> out = new ArrayList<>();
    for (Attachment a : attachments) {
      if (!recorded.test(a.volumeId(), a.nodeId())) {
        out.add(a);
      }
    }
    return List.copyOf(out);
  }

  /** {@link #toJson(Optional)} without a comparison with records. */
  public String toJson() {
    return toJson(Optional.empty());
  }

  /**
   * The report as JSON, keys in a fixed order, one count per line:
   * <pre>{@code
   * {
   *   "cloud": "/tmp/cloud",
   *   "counts": {
   *     "double_attach": 0,
   *     "detach_in_use": 0,
   *     "deposed_controller_call": 0,
   *     "unrecorded_attachment": 0
   *   },
   *   "total": 0,
   *   "attachments": [{"volume": "vol-1", "node": "a1", "multi_node": false}],
   *   "unrecorded_attachments": [],
   *   "staged": [{"volume": "vol-1", "node": "a1", "path": "/..."}],
   *   "published": [],
   *   "elections": [{"plugin": "ebs.csi.dev", "revision": 12, "agent": "a1"}],
   *   "violations": []
   * }
   * }</pre>
   * {@code unrecorded_attachment} and {@code unrecorded_attachments} only with {@code unrecorded} given; {@code total}
   * adds every count, that one included.
   *
   * @param unrecorded the attachments nothing records ({@link #unrecorded}), if they were compared
   */
  public String toJson(Optional<List<Attachment>> unrecorded) {
    Objects.requireNonNull(unrecorded, "unrecorded");
    StringBuilder b = new StringBuilder("{\n");
    b.append("  \"cloud\": ").append(str(file.toString())).append(",\n");
    b.append("  \"counts\": {\n");
    List<String> lines = new ArrayList<>();
    counts.forEach((c, n) -> lines.add("    " + str(c.key()) + ": " + n));
    unrecorded.ifPresent(u -> lines.add("    \"unrecorded_attachment\": " + u.size()));
    b.append(String.join(",\n", lines)).append("\n  },\n");
    b.append("  \"total\": ").append(total() + unrecorded.map(List::size).orElse(0)).append(",\n");
    b.append("  \"attachments\": ").append(attachmentsJson(attachments)).append(",\n");
    unrecorded.ifPresent(u -> b.append("  \"unrecorded_attachments\": ").append(attachmentsJson(u)).append(",\n"));
    b.append("  \"staged\": ").append(usesJson(staged)).append(",\n");
    b.append("  \"published\": ").append(usesJson(published)).append(",\n");
    List<String> es = new ArrayList<>();
    for (Election e : elections) {
      es.add("{\"plugin\": " + str(e.plugin()) + ", \"revision\": " + e.revision() + ", \"agent\": "
          + str(e.agentNodeId()) + "}");
    }
    b.append("  \"elections\": ").append(list(es)).append(",\n");
    b.append("  \"violations\": ").append(list(violations.stream().map(CloudReport::str).toList())).append("\n");
    return b.append("}\n").toString();
  }

  private static String attachmentsJson(List<Attachment> as) {
    return list(as.stream().map(a -> "{\"volume\": " + str(a.volumeId()) + ", \"node\": " + str(a.nodeId())
        + ", \"multi_node\": " + a.multiNode() + "}").toList());
  }

  private static String usesJson(List<NodeUse> us) {
    return list(us.stream().map(u -> "{\"volume\": " + str(u.volumeId()) + ", \"node\": " + str(u.nodeId())
        + ", \"path\": " + str(u.path()) + "}").toList());
  }

  private static String list(List<String> items) {
    return items.isEmpty() ? "[]" : "[\n    " + String.join(",\n    ", items) + "\n  ]";
  }

  /** A JSON string literal. */
  static String str(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20 || c == 0x7f || c == 0x2028 || c == 0x2029) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }
}
