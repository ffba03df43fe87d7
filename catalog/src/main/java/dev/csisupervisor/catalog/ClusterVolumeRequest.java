package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import dev.csisupervisor.common.Values;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * An operation on a cluster volume or snapshot, as desired state in etcd (the external-provisioner's and
 * external-snapshotter's way): {@code <prefix>/requests/<plugin>/<kind>/<name>} with the kinds {@code create},
 * {@code delete}, {@code snapshot}, {@code snapshot-delete}, {@code modify} and {@code register}. Written by whoever
 * asks (the CLI), acted on by the plugin id's elected controller agent, which writes its progress and outcome into
 * it. A done create or snapshot stays (it says which volume or snapshot the name made, and the same asked again of
 * the same name answers it); a done delete goes with its volume, a done snapshot-delete with its snapshot. Never
 * secrets: at most the path of a secrets file that the controller agent reads on its own machine. Immutable.
 *
 * @param kind what is asked
 * @param pluginId the plugin id
 * @param name the request's key: for a create, the volume's name and for a snapshot the snapshot's name (CSI's
 *     idempotency keys); for a delete, modify or register, the volume id; for a snapshot-delete, the snapshot id
 * @param spec what is asked ({@link Spec}; for a delete or snapshot-delete {@link Spec#NONE})
 * @param secretsFile an absolute path the controller agent reads its secrets from, if any
 * @param state where it is
 * @param volumeId the id the request made or acts on: a create's volume (set when {@link State#DONE}), a snapshot's
 *     snapshot id (set once CreateSnapshot answered, ready or not), else the id it names
 * @param message the last error: why it is retried, or why it failed; a snapshot's "cut at T, not ready"; a create
 *     waiting for its snapshot says so; else ""
 * @param attempts how many times the controller agent has sent it
 * @param controllerNodeId the agent that last sent it, "" if none yet
 * @param attemptStarted when the last attempt was sent, if any: with {@link State#PENDING} and no later outcome,
 *     the call is in flight there (or that agent died and its successor sends it again)
 * @param nextAttempt with {@link State#PENDING} after a retriable error, not before this
 * @param requested when it was asked for
 * @param revision the etcd mod revision it was read at (0 if not read from etcd); not part of its value
 */
public record ClusterVolumeRequest(Kind kind, String pluginId, String name, Spec spec, Optional<Path> secretsFile,
    State state, String volumeId, String message, int attempts, String controllerNodeId,
    Optional<Instant> attemptStarted, Optional<Instant> nextAttempt, Instant requested, long revision) {

  /** What is asked. */
  public enum Kind {
    /** CreateVolume by name (from a snapshot or a clone if its spec says), then the volume under {@code volumes/}. */
    CREATE,
    /** DeleteVolume of a registered volume with no claim, no attachment and no snapshot being cut, then its key. */
    DELETE,
    /** CreateSnapshot by name of a registered volume, then the snapshot under {@code snapshots/}, sent again until ready. */
    SNAPSHOT,
    /** DeleteSnapshot of a recorded snapshot that no pending create is made from, then its key removed. */
    SNAPSHOT_DELETE,
    /** ControllerModifyVolume with the spec's mutable parameters, then merged into the volume's record. */
    MODIFY,
    /** ValidateVolumeCapabilities of an existing disk, then its record written (marked so if not validated). */
    REGISTER;

    /** The key segment: {@code create}, {@code snapshot-delete}, ... */
    public String segment() {
      return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }

    /** The kind of a key segment or of a CLI word ({@code snapshot-delete}, {@code snapshot_delete}). */
    public static Kind parse(String field, String word) {
      for (Kind k : values()) {
        if (k.segment().equals(word) || k.name().equalsIgnoreCase(word)) {
          return k;
        }
      }
      throw new IllegalArgumentException(field + " must be one of create, delete, snapshot, snapshot-delete, modify or "
          + "register, got '" + word + "'");
    }

    /** Whether its name is an id the plugin gave (not a name the asker chose). */
    boolean namesAnId() {
      return this != CREATE && this != SNAPSHOT;
    }
  }

  /** Where a request is. */
  public enum State {
    /** Not answered yet: waiting for the controller agent, in flight there, or to be retried after an error. */
    PENDING,
    /** Done: a create's volume is registered ({@link #volumeId()}). A done delete is removed with its volume. */
    DONE,
    /** A final error ({@link #message()}): not tried again until asked again. */
    FAILED,
    /**
     * Withdrawn after it was sent: the controller agent learns by name what the call may have made (the call is sent
     * again: CSI's creates are idempotent by name), deletes it, then removes the request; nothing is leaked.
     */
    CANCELLED
  }

  /**
   * What a request asks. A create: CreateVolume's arguments; a snapshot: its source volume and parameters; a modify:
   * its mutable parameters; a register: the record to write (capacity as {@code requiredBytes}, accessible topology as
   * {@code requisite}, volume context) and the capabilities to validate.
   *
   * @param requiredBytes capacity_range.required_bytes, 0: not set
   * @param limitBytes capacity_range.limit_bytes, 0: not set
   * @param accessModes the volume capabilities' access modes (at least one for a create and a register)
   * @param block a raw block volume instead of a file system mount
   * @param fsType the file system type for a mount, "" for the plugin's default
   * @param parameters CreateVolume's or CreateSnapshot's parameters (never secrets)
   * @param requisite accessibility_requirements.requisite
   * @param preferred accessibility_requirements.preferred
   * @param source a create's volume_content_source; a snapshot's source volume
   * @param mutableParameters a create's or a modify's mutable_parameters
   * @param volumeContext a register's volume_context
   */
  public record Spec(long requiredBytes, long limitBytes, Set<VolumeAccessMode> accessModes, boolean block,
      String fsType, Map<String, String> parameters, List<Map<String, String>> requisite,
      List<Map<String, String>> preferred, Optional<VolumeSource> source, Map<String, String> mutableParameters,
      Map<String, String> volumeContext) {
    /** A delete's: nothing. */
    public static final Spec NONE = new Spec(0, 0, Set.of(), false, "", Map.of(), List.of(), List.of());

    /** A create's from nothing, with no mutable parameters. */
    public Spec(long requiredBytes, long limitBytes, Set<VolumeAccessMode> accessModes, boolean block, String fsType,
        Map<String, String> parameters, List<Map<String, String>> requisite, List<Map<String, String>> preferred) {
      this(requiredBytes, limitBytes, accessModes, block, fsType, parameters, requisite, preferred, Optional.empty(),
          Map.of(), Map.of());
    }

    public Spec {
      if (requiredBytes < 0) {
        throw new IllegalArgumentException("requiredBytes must not be negative, got " + requiredBytes);
      }
      if (limitBytes < 0) {
        throw new IllegalArgumentException("limitBytes must not be negative, got " + limitBytes);
      }
      if (limitBytes != 0 && requiredBytes > limitBytes) {
        throw new IllegalArgumentException("requiredBytes must not be more than limitBytes, got " + requiredBytes
            + " > " + limitBytes);
      }
      Objects.requireNonNull(accessModes, "accessModes");
      if (accessModes.stream().anyMatch(Objects::isNull)) {
        throw new IllegalArgumentException("accessModes must not contain null, got " + accessModes);
      }
      accessModes = accessModes.isEmpty() ? Set.of() : Collections.unmodifiableSet(EnumSet.copyOf(accessModes));
      new ClaimAccess(block, fsType); // the same rules as the claims of the volume it makes
      parameters = Values.copyOf(parameters, "parameters");
      requisite = topologies(requisite, "requisite");
      preferred = topologies(preferred, "preferred");
      for (Map<String, String> p : preferred) {
        if (!requisite.isEmpty() && !requisite.contains(p)) {
          throw new IllegalArgumentException("preferred topology " + p + " must also be in requisite " + requisite
              + " (CSI)");
        }
      }
      Objects.requireNonNull(source, "source");
      mutableParameters = Values.copyOf(mutableParameters, "mutableParameters");
      volumeContext = Values.copyOf(volumeContext, "volumeContext");
    }

    /** The same, made from {@code from}. */
    public Spec from(VolumeSource from) {
      return new Spec(requiredBytes, limitBytes, accessModes, block, fsType, parameters, requisite, preferred,
          Optional.of(from), mutableParameters, volumeContext);
    }

    /** The same, with these mutable parameters. */
    public Spec withMutableParameters(Map<String, String> mutable) {
      return new Spec(requiredBytes, limitBytes, accessModes, block, fsType, parameters, requisite, preferred, source,
          mutable, volumeContext);
    }

    private static List<Map<String, String>> topologies(List<Map<String, String>> list, String field) {
      Objects.requireNonNull(list, field);
      List<Map<String, String>> out = new ArrayList<>();
      for (int i = 0; i < list.size(); i++) {
        Map<String, String> s = list.get(i);
        if (s == null || s.isEmpty()) {
          throw new IllegalArgumentException(field + "[" + i + "] must be a non-empty segment, got " + s);
        }
        out.add(Values.copyOf(s, field + "[" + i + "]"));
      }
      return List.copyOf(out);
    }
  }

  public ClusterVolumeRequest {
    Objects.requireNonNull(kind, "kind");
    CsiIds.checkPlugin("pluginId", pluginId);
    CsiIds.checkVolume(switch (kind) {
      case CREATE, SNAPSHOT -> "name";
      case SNAPSHOT_DELETE -> "snapshotId";
      default -> "volumeId";
    }, name);
    Objects.requireNonNull(spec, "spec");
    if ((kind == Kind.CREATE || kind == Kind.REGISTER) && spec.accessModes().isEmpty()) {
      throw new IllegalArgumentException("accessModes must not be empty for a " + kind.segment() + " (CSI asks for at "
          + "least one volume capability)");
    }
    if (kind == Kind.SNAPSHOT && spec.source().map(f -> f.type() != VolumeSource.Type.VOLUME).orElse(true)) {
      throw new IllegalArgumentException("source must be the volume a snapshot is cut from, got " + spec.source());
    }
    if (kind == Kind.MODIFY && spec.mutableParameters().isEmpty()) {
      throw new IllegalArgumentException("mutableParameters must not be empty for a modify");
    }
    Objects.requireNonNull(secretsFile, "secretsFile");
    secretsFile.ifPresent(f -> {
      if (!f.isAbsolute()) {
        throw new IllegalArgumentException("secretsFile must be an absolute path (the controller agent reads it on "
            + "its own machine), got '" + f + "'");
      }
    });
    Objects.requireNonNull(state, "state");
    Objects.requireNonNull(volumeId, "volumeId");
    if (state == State.DONE || kind.namesAnId()) {
      CsiIds.checkVolume(kind == Kind.SNAPSHOT || kind == Kind.SNAPSHOT_DELETE ? "snapshotId" : "volumeId", volumeId);
    }
    Objects.requireNonNull(message, "message");
    if (attempts < 0) {
      throw new IllegalArgumentException("attempts must not be negative, got " + attempts);
    }
    Objects.requireNonNull(controllerNodeId, "controllerNodeId");
    if (!controllerNodeId.isEmpty()) {
      CatalogKeys.checkNodeId(controllerNodeId);
    }
    Objects.requireNonNull(attemptStarted, "attemptStarted");
    Objects.requireNonNull(nextAttempt, "nextAttempt");
    Objects.requireNonNull(requested, "requested");
  }

  /** A new create, not yet sent. */
  public static ClusterVolumeRequest create(String pluginId, String name, Spec spec, Optional<Path> secretsFile,
      Instant now) {
    return new ClusterVolumeRequest(Kind.CREATE, pluginId, name, spec, secretsFile, State.PENDING, "", "", 0, "",
        Optional.empty(), Optional.empty(), now, 0);
  }

  /** A new delete of a registered volume, not yet sent. */
  public static ClusterVolumeRequest delete(String pluginId, String volumeId, Optional<Path> secretsFile,
      Instant now) {
    return asked(Kind.DELETE, pluginId, volumeId, Spec.NONE, secretsFile, now);
  }

  /** A new snapshot named {@code name} of a registered volume, not yet sent. */
  public static ClusterVolumeRequest snapshot(String pluginId, String name, String sourceVolumeId,
      Map<String, String> parameters, Optional<Path> secretsFile, Instant now) {
    Spec spec = new Spec(0, 0, Set.of(), false, "", parameters, List.of(), List.of(),
        Optional.of(VolumeSource.volume(sourceVolumeId)), Map.of(), Map.of());
    return new ClusterVolumeRequest(Kind.SNAPSHOT, pluginId, name, spec, secretsFile, State.PENDING, "", "", 0, "",
        Optional.empty(), Optional.empty(), now, 0);
  }

  /** A new delete of a recorded snapshot, not yet sent. */
  public static ClusterVolumeRequest deleteSnapshot(String pluginId, String snapshotId, Optional<Path> secretsFile,
      Instant now) {
    return asked(Kind.SNAPSHOT_DELETE, pluginId, snapshotId, Spec.NONE, secretsFile, now);
  }

  /** A new modify of a registered volume's mutable parameters, not yet sent. */
  public static ClusterVolumeRequest modify(String pluginId, String volumeId, Map<String, String> mutableParameters,
      Optional<Path> secretsFile, Instant now) {
    return asked(Kind.MODIFY, pluginId, volumeId, Spec.NONE.withMutableParameters(mutableParameters), secretsFile, now);
  }

  /**
   * A new register of an existing disk, validated by the controller agent first: {@code volume}'s record with the
   * capabilities to validate (its access modes, with this access type).
   */
  public static ClusterVolumeRequest register(ClusterVolume volume, boolean block, String fsType,
      Optional<Path> secretsFile, Instant now) {
    Spec spec = new Spec(volume.capacityBytes(), 0, volume.accessModes(), block, fsType, volume.parameters(),
        volume.accessibleTopology(), List.of(), Optional.empty(), volume.mutableParameters(), volume.volumeContext());
    return asked(Kind.REGISTER, volume.pluginId(), volume.volumeId(), spec, secretsFile, now);
  }

  private static ClusterVolumeRequest asked(Kind kind, String pluginId, String id, Spec spec,
      Optional<Path> secretsFile, Instant now) {
    return new ClusterVolumeRequest(kind, pluginId, id, spec, secretsFile, State.PENDING, id, "", 0, "",
        Optional.empty(), Optional.empty(), now, 0);
  }

  /** The record a register writes once validated ({@code validated} false: not validated). */
  public ClusterVolume registered(boolean validated) {
    return new ClusterVolume(pluginId, name, spec.requiredBytes(), spec.accessModes(), spec.requisite(),
        spec.parameters(), spec.volumeContext(), Optional.empty(), spec.mutableParameters(), validated);
  }

  /** Whether {@code other} asks the same (kind, plugin, name, spec and secrets file), whatever its progress. */
  public boolean asksSameAs(ClusterVolumeRequest other) {
    return kind == other.kind && pluginId.equals(other.pluginId) && name.equals(other.name) && spec.equals(other.spec)
        && secretsFile.equals(other.secretsFile);
  }

  /** Sent now by {@code controller}: one more attempt, in flight. */
  public ClusterVolumeRequest sending(String controller, Instant now) {
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, State.PENDING, volumeId, message,
        attempts + 1, controller, Optional.of(now), Optional.empty(), requested, revision);
  }

  /** A retriable error: tried again at {@code next}. */
  public ClusterVolumeRequest retryAt(Instant next, String error) {
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, State.PENDING, volumeId, error, attempts,
        controllerNodeId, Optional.empty(), Optional.of(next), requested, revision);
  }

  /** A cancelled request whose undo could not finish: tried again at {@code next}, still cancelled. */
  public ClusterVolumeRequest undoRetryAt(Instant next, String error) {
    if (state != State.CANCELLED) {
      throw new IllegalStateException(describe() + " is " + state + ", not CANCELLED");
    }
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, State.CANCELLED, volumeId, error,
        attempts + 1, controllerNodeId, Optional.empty(), Optional.of(next), requested, revision);
  }

  /** Sent, and not done yet: a snapshot cut as {@code snapshotId}, not ready; sent again at {@code next}. */
  public ClusterVolumeRequest notReady(String snapshotId, Instant next, String said) {
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, State.PENDING, snapshotId, said,
        attempts, controllerNodeId, Optional.empty(), Optional.of(next), requested, revision);
  }

  /** Waiting, nothing sent (a create whose snapshot is not ready): says why. */
  public ClusterVolumeRequest waiting(String why) {
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, State.PENDING, volumeId, why, attempts,
        controllerNodeId, Optional.empty(), nextAttempt, requested, revision);
  }

  /** Withdrawn after it was sent ({@link State#CANCELLED}). */
  public ClusterVolumeRequest cancelled() {
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, State.CANCELLED, volumeId,
        "cancelled after it was sent: what it made is deleted", attempts, controllerNodeId, Optional.empty(),
        Optional.empty(), requested, revision);
  }

  /** Whether a call may have been sent: a withdraw then leaves it {@link State#CANCELLED} to be undone. */
  public boolean mayHaveMade() {
    return (kind == Kind.CREATE || kind == Kind.SNAPSHOT) && state == State.PENDING
        && (attempts > 0 || attemptStarted.isPresent());
  }

  /** A final error. */
  public ClusterVolumeRequest failed(String error) {
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, State.FAILED, volumeId, error, attempts,
        controllerNodeId, Optional.empty(), Optional.empty(), requested, revision);
  }

  /** Done: a create made {@code volume}. */
  public ClusterVolumeRequest done(String volume) {
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, State.DONE, volume, "", attempts,
        controllerNodeId, Optional.empty(), Optional.empty(), requested, revision);
  }

  /** The same, read at {@code rev}. */
  public ClusterVolumeRequest withRevision(long rev) {
    return new ClusterVolumeRequest(kind, pluginId, name, spec, secretsFile, state, volumeId, message, attempts,
        controllerNodeId, attemptStarted, nextAttempt, requested, rev);
  }

  /** "create of ebs/web-data", "delete of ebs/vol-1", "snapshot-delete of ebs/snap-1". */
  public String describe() {
    return kind.segment() + " of " + pluginId + "/" + name;
  }
}
