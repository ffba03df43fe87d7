package dev.csisupervisor.client;

import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Error;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Turns a failed call's gRPC {@link Status} into the {@link CsiException} that says what
 * happened. The one place that reads gRPC's descriptions and transport exceptions.
 *
 * <p>{@code connected} is the key input: whether the call got a stream on an established HTTP/2
 * connection. If it did, a failure is the plugin's answer (or a broken connection); if not, the
 * connection attempt itself failed, and the socket (refused, missing, ...) or the peer (not HTTP/2)
 * is to blame.
 */
final class StatusTranslator {
  /** As many bytes of a non-HTTP/2 peer's answer as a message shows ("HTTP/"). */
  static final int FIRST_BYTES = 5;

  private final Path socket;
  private final CsiClientOptions options;
  private final BiFunction<Path, String, Optional<CsiException>> recheck;
  private final Function<Path, Optional<byte[]>> answerToPreface;

  /**
   * @param recheck looks at the socket again after a failed handshake (see
   *     {@link SocketInspector#tryConnect}); empty if something still accepts connections
   * @param answerToPreface after the peer broke the HTTP/2 protocol in the handshake: what it answers
   *     to a client preface, asked again (see {@link SocketInspector#answerToHttp2Preface})
   */
  StatusTranslator(Path socket, CsiClientOptions options, BiFunction<Path, String, Optional<CsiException>> recheck,
      Function<Path, Optional<byte[]>> answerToPreface) {
    this.socket = Objects.requireNonNull(socket, "socket");
    this.options = Objects.requireNonNull(options, "options");
    this.recheck = Objects.requireNonNull(recheck, "recheck");
    this.answerToPreface = Objects.requireNonNull(answerToPreface, "answerToPreface");
  }

  CsiException translate(String method, Status status, boolean connected) {
    return translate(method, status, connected, options.callTimeout());
  }

  /** @param timeout the deadline the call had, for the message of a deadline exceeded */
  CsiException translate(String method, Status status, boolean connected, java.time.Duration timeout) {
    Status.Code code = status.getCode();
    String description = status.getDescription();
    if (code == Status.Code.DEADLINE_EXCEEDED) {
      return new CsiDeadlineExceededException(socket, method, timeout, connected);
    }
    if (!connected) {
      return connectFailure(method, status);
    }
    if (code == Status.Code.RESOURCE_EXHAUSTED && status.getCause() == null
        && description != null && description.contains("exceeds maximum size")) {
      // gRPC's own inbound limit ("gRPC message exceeds maximum size 1024: 5012"), not the plugin's answer.
      return new ResponseTooLargeException(socket, method, options.maxInboundMessageBytes(), description);
    }
    if (description != null && description.startsWith("HTTP status code")) {
      // gRPC servers always answer HTTP 200; gRPC reports any other HTTP answer this way.
      return new NotCsiServerException(socket, method,
          "it answered in plain HTTP/2, not gRPC (" + oneLine(description) + ")");
    }
    if (code == Status.Code.UNIMPLEMENTED && CsiMethods.isIdentity(method)) {
      // Every CSI plugin MUST implement Identity; a gRPC server without it is something else.
      return new NotCsiServerException(socket, method,
          "it is a gRPC server without the CSI Identity service (" + describe(status) + ")");
    }
    if (isTransportFailure(status)) {
      return new ConnectionLostException(socket, method, describe(status));
    }
    return new CsiStatusException(socket, method, StatusCode.of(code.value()), description);
  }

  private CsiException connectFailure(String method, Status status) {
    Optional<CsiException> socketProblem =
        SocketInspector.classifyConnectError(socket, method, status.getCause());
    if (socketProblem.isPresent()) {
      return socketProblem.get();
    }
    if (isHttp2ProtocolError(status.getCause())) {
      // Netty's error says which bytes broke the handshake only in its message text: ask the peer again.
      return new NotCsiServerException(socket, method, "it does not speak HTTP/2"
          + answerToPreface.apply(socket).map(b -> "; its first bytes were \"" + printable(b) + "\"").orElse(""));
    }
    // Closed or reset during the handshake. A plugin dying at that moment looks the same, so
    // look at the socket once more: if nothing listens any more, say that instead.
    Optional<CsiException> now = recheck.apply(socket, method);
    if (now.isPresent()) {
      return now.get();
    }
    return new NotCsiServerException(socket, method,
        "it closed the connection before completing the HTTP/2 handshake (" + describe(status) + ")");
  }

  /**
   * Failures gRPC makes up on this side when the connection breaks under a call (they carry the
   * I/O exception, or one of these descriptions); a status the plugin sent has neither.
   */
  static boolean isTransportFailure(Status status) {
    if (status.getCause() != null) {
      return true;
    }
    String d = status.getDescription();
    return d != null
        && (d.startsWith("Network closed")
            || d.startsWith("Connection closed")
            || d.startsWith("Connection closing")
            || d.contains("GOAWAY")
            || d.contains("RST_STREAM")
            || d.startsWith("Stream closed before write could take place")
            || d.startsWith("Received unexpected EOS")
            || d.startsWith("Keepalive failed"));
  }

  /**
   * Whether the handshake failed because the peer broke the HTTP/2 protocol (Netty's
   * {@link Http2Exception} with PROTOCOL_ERROR, e.g. its first frame was not SETTINGS: an HTTP/1
   * server's "HTTP/1.1 400 Bad Request").
   */
  static boolean isHttp2ProtocolError(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof Http2Exception h && h.error() == Http2Error.PROTOCOL_ERROR) {
        return true;
      }
    }
    return false;
  }

  static String printable(byte[] bytes) {
    StringBuilder s = new StringBuilder();
    for (byte b : bytes) {
      if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') {
        s.append((char) b);
      } else {
        s.append(String.format("\\x%02x", b & 0xff));
      }
    }
    return s.toString();
  }

  /** "UNAVAILABLE: io exception: recvAddress(..) failed with error(-104): Connection reset by peer". */
  static String describe(Status status) {
    StringBuilder s = new StringBuilder(status.getCode().name());
    if (status.getDescription() != null && !status.getDescription().isEmpty()) {
      s.append(": ").append(oneLine(status.getDescription()));
    }
    Throwable cause = status.getCause();
    if (cause != null) {
      String message = cause.getMessage();
      s.append(": ").append(message == null || message.isEmpty() ? cause.getClass().getSimpleName() : oneLine(message));
    }
    return s.toString();
  }

  private static String oneLine(String text) {
    return text.strip().replace("\r", "").replace("\n", "; ");
  }
}
