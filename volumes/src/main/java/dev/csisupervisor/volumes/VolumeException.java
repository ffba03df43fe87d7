package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CsiException;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.client.StatusCode;
import java.util.Objects;
import java.util.Optional;

/**
 * A volume operation failed. {@link #reason()} says why, for callers that switch on it (admin API,
 * metrics); the message names the plugin, the volume and, for a CSI failure, the RPC, the code and
 * the plugin's message. Futures of {@link VolumeManager} fail with this (wrapped in a
 * {@code CompletionException} for dependent stages; {@link #find} unwraps).
 */
public final class VolumeException extends Exception {
  private static final long serialVersionUID = 1L;

  /** Why an operation failed. */
  public enum Reason {
    /** The cluster refused the claim (another node or allocation holds the volume) or cannot be asked now. */
    CLUSTER_REFUSED,
    /** The plugin is not registered (or not healthy) as a node or controller plugin in time. */
    PLUGIN_UNAVAILABLE,
    /** The plugin cannot do what was asked: a service, capability or access mode it lacks. */
    UNSUPPORTED,
    /** Another allocation holds the volume in a way the access mode does not share. */
    ACCESS_CONFLICT,
    /** The plugin's {@code max_volumes_per_node} is reached on this node. */
    LIMIT_REACHED,
    /** The volume is not mounted as named (stats, expand of a volume not here). */
    NOT_MOUNTED,
    /** The volume is in use on this node (delete of a mounted volume). */
    IN_USE,
    /** A CSI call failed: see {@link #rpc()}, {@link #code()} and {@link #csiCause()}. */
    CSI_ERROR,
    /** The state could not be committed (a full disk): nothing was done. */
    STATE_ERROR,
    /** A directory the CO must make (staging path, target's parent) could not be made. */
    LOCAL_IO,
    /** A path the plugin said it unmounted is still a mount point: the step is not done. */
    STILL_MOUNTED,
    /** The manager is closed. */
    CLOSED
  }

  private final Reason reason;
  private final String rpc;
  private final transient CsiException csiCause;

  VolumeException(Reason reason, String message) {
    this(reason, message, null, null, null);
  }

  VolumeException(Reason reason, String message, Throwable cause) {
    this(reason, message, null, null, cause);
  }

  private VolumeException(Reason reason, String message, String rpc, CsiException csiCause, Throwable cause) {
    super(message, cause);
    this.reason = Objects.requireNonNull(reason, "reason");
    this.rpc = rpc;
    this.csiCause = csiCause;
  }

  /** A CSI call's failure: the message names what was being done, the RPC and the plugin's answer. */
  static VolumeException csi(String what, String rpc, CsiException e) {
    return new VolumeException(Reason.CSI_ERROR, what + ": " + rpc + " failed: " + describe(e), rpc, e, e);
  }

  /** This CSI failure seen as {@code reason}, its message after {@code prefix}; the RPC and the code are kept. */
  VolumeException as(Reason reason, String prefix) {
    return new VolumeException(reason, prefix + getMessage(), rpc, csiCause, this);
  }

  /** {@code CODE: message} for a plugin status, else the client's own message. */
  static String describe(CsiException e) {
    if (e instanceof CsiStatusException s) {
      return s.code() + (s.description().isEmpty() ? "" : ": " + s.description());
    }
    return e.kind() + ": " + e.getMessage();
  }

  public Reason reason() {
    return reason;
  }

  /** The CSI RPC that failed ({@code NodeStageVolume}, ...), for {@link Reason#CSI_ERROR}. */
  public Optional<String> rpc() {
    return Optional.ofNullable(rpc);
  }

  /** The plugin's status code, when the plugin answered with one. */
  public Optional<StatusCode> code() {
    return csiCause instanceof CsiStatusException s ? Optional.of(s.code()) : Optional.empty();
  }

  /** The client's failure, for {@link Reason#CSI_ERROR}. */
  public Optional<CsiException> csiCause() {
    return Optional.ofNullable(csiCause);
  }

  /** The {@code VolumeException} in {@code failure} or its causes, if any. */
  public static Optional<VolumeException> find(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof VolumeException v) {
        return Optional.of(v);
      }
    }
    return Optional.empty();
  }
}
