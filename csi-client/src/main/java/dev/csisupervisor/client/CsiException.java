package dev.csisupervisor.client;

import dev.csisupervisor.common.Printable;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * A CSI call failed. Every subtype names the plugin's socket path in its message and says which
 * of the failure kinds in {@link CsiErrorKind} happened; {@link #kind()} gives the same as a
 * constant. No gRPC type ever appears here, not even as a cause: the gRPC detail is in the
 * message text.
 *
 * <p>Async methods of {@link CsiClient} complete their future exceptionally with the
 * {@code CsiException} itself; stages derived from it (and {@code join()}) see it wrapped in a
 * {@link CompletionException}, {@code get()} in an {@link ExecutionException}. {@link #find} unwraps.
 */
public abstract sealed class CsiException extends Exception
    permits SocketNotFoundException,
        NotASocketException,
        SocketPermissionException,
        SocketPathTooLongException,
        ConnectionRefusedException,
        NotCsiServerException,
        CsiDeadlineExceededException,
        CsiStatusException,
        ResponseTooLargeException,
        InvalidResponseException,
        ConnectionLostException,
        CallCancelledException {

  private static final long serialVersionUID = 1L;

  private final CsiErrorKind kind;
  private final transient Path socket;
  private final String method;

  /**
   * @param method the full gRPC name of the call, or null when no call was attempted
   * @param message the whole message, naming the socket (see {@link #callOn} and {@link #withDetail})
   */
  CsiException(CsiErrorKind kind, Path socket, String method, String message) {
    // A null cause, not none: initCause cannot attach one (a gRPC type) later either.
    super(Printable.escape(message), null);
    this.kind = Objects.requireNonNull(kind, "kind");
    this.socket = Objects.requireNonNull(socket, "socket");
    this.method = method;
  }

  /** The plugin socket the failed call was for. */
  public Path getSocket() {
    return socket;
  }

  /**
   * The full gRPC name of the call that failed, e.g. {@code "csi.v1.Identity/Probe"}; empty when
   * the failure is about the socket itself and no call was attempted.
   */
  public Optional<String> getMethod() {
    return Optional.ofNullable(method);
  }

  /** Which kind of failure this is; one constant per subtype. */
  public final CsiErrorKind kind() {
    return kind;
  }

  /**
   * The {@code CsiException} in {@code failure} or its causes (e.g. inside the
   * {@link CompletionException} a dependent stage receives), or empty if there is none.
   */
  public static Optional<CsiException> find(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof CsiException csi) {
        return Optional.of(csi);
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return Optional.empty();
  }

  /** How a message names a call: {@code "csi.v1.Identity/Probe on /run/csi/node/ebs/csi.sock"}. */
  static String callOn(String method, Path socket) {
    return Objects.requireNonNull(method, "method") + " on " + socket;
  }

  /** {@code message}, then {@code (detail)} if there is a detail. */
  static String withDetail(String message, String detail) {
    return detail == null || detail.isBlank() ? message : message + " (" + detail + ")";
  }
}
