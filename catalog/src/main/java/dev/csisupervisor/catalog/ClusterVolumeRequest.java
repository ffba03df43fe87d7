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
 * A create or delete of a cluster volume, as desired state in etcd (the external-provisioner's way): {@code
 * <prefix>/requests/<plugin>/create/<name>} or {@code .../delete/<volume id>}. Written by whoever asks (the CLI),
 * acted on by the plugin id's controller agent, which writes its progress and outcome into it. A done create stays
 * (it says which volume the name made, and a create asked again of the same name answers it); a done delete goes
 * with its volume. Never secrets: at most the path of a secrets file that the controller agent reads on its own
 * machine. Immutable.
 *
 * @param kind create or delete
 * @param pluginId the plugin id
 * @param name for a create, the volume's name (CSI's idempotency key); for a delete, the volume id
 * @param spec what a create asks for (for a delete: {@link Spec#NONE})
 * @param secretsFile an absolute path the controller agent reads its secrets from, if any
 * @param state where it is
 * @param volumeId the volume a create made (set when {@link State#DONE}); for a delete, the volume id
 * @param message the last error: why it is retried, or why it failed; else ""
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
    /** CreateVolume by name, then the volume written under {@code volumes/}. */
    CREATE,
    /** DeleteVolume of a registered volume with no claim and no attachment, then its key removed. */
    DELETE
  }

  /** Where a request is. */
  public enum State {
    /** Not answered yet: waiting for the controller agent, in flight there, or to be retried after an error. */
    PENDING,
    /** Done: a create's volume is registered ({@link #volumeId()}). A done delete is removed with its volume. */
    DONE,
    /** A final error ({@link #message()}): not tried again until asked again. */
    FAILED
  }

  /**
   * What a create asks of CreateVolume.
   *
   * @param requiredBytes capacity_range.required_bytes, 0: not set
   * @param limitBytes capacity_range.limit_bytes, 0: not set
   * @param accessModes the volume capabilities' access modes (at least one for a create)
   * @param block a raw block volume instead of a file system mount
   * @param fsType the file system type for a mount, "" for the plugin's default
   * @param parameters CreateVolume's parameters (never secrets)
   * @param requisite accessibility_requirements.requisite
   * @param preferred accessibility_requirements.preferred
   */
  public record Spec(long requiredBytes, long limitBytes, Set<VolumeAccessMode> accessModes, boolean block,
      String fsType, Map<String, String> parameters, List<Map<String, String>> requisite,
      List<Map<String, String>> preferred) {
    /** A delete's: nothing. */
    public static final Spec NONE = new Spec(0, 0, Set.of(), false, "", Map.of(), List.of(), List.of());

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
    CsiIds.checkVolume(kind == Kind.CREATE ? "name" : "volumeId", name);
    Objects.requireNonNull(spec, "spec");
    if (kind == Kind.CREATE && spec.accessModes().isEmpty()) {
      throw new IllegalArgumentException("accessModes must not be empty for a create (CSI asks for at least one "
          + "volume capability)");
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
    if (state == State.DONE || kind == Kind.DELETE) {
      CsiIds.checkVolume("volumeId", volumeId);
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
    return new ClusterVolumeRequest(Kind.DELETE, pluginId, volumeId, Spec.NONE, secretsFile, State.PENDING, volumeId,
        "", 0, "", Optional.empty(), Optional.empty(), now, 0);
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

  /** "create of ebs/web-data", "delete of ebs/vol-1". */
  public String describe() {
    return kind.name().toLowerCase(java.util.Locale.ROOT) + " of " + pluginId + "/" + name;
  }
}
