package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Error;
import io.grpc.netty.shaded.io.netty.handler.codec.http2.Http2Exception;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The gRPC-status-to-exception rules, fed with the statuses and transport exceptions gRPC/Netty
 * produce (messages copied from real runs), including the ones tests cannot provoke as root.
 */
class StatusTranslatorTest {
  private static final Path SOCKET = Path.of("/run/csi/node/p/csi.sock");
  private static final String PROBE = "csi.v1.Identity/Probe";
  private static final String CONTROLLER_CAPS = "csi.v1.Controller/ControllerGetCapabilities";

  private final AtomicInteger rechecks = new AtomicInteger();
  private Optional<CsiException> recheckAnswer = Optional.empty();
  private byte[] prefaceAnswer;
  private final StatusTranslator translator = new StatusTranslator(SOCKET,
      CsiClientOptions.defaults().withCallTimeout(Duration.ofSeconds(2)).withMaxInboundMessageBytes(1024),
      (socket, method) -> {
        rechecks.incrementAndGet();
        return recheckAnswer;
      },
      socket -> Optional.ofNullable(prefaceAnswer));

  /** The call failed before the connection was up: the request was never sent. */
  private CsiException whileConnecting(String method, Status status) {
    return translator.translate(method, status, false);
  }

  /** The call failed after the connection was up and the request sent. */
  private CsiException afterConnecting(String method, Status status) {
    return translator.translate(method, status, true);
  }

  private static Status io(Throwable cause) {
    return Status.UNAVAILABLE.withDescription("io exception").withCause(cause);
  }

  @Test
  void connectPermissionDenied_isSocketPermission() {
    // Netty's native exception text for EACCES
    CsiException e =
        whileConnecting(PROBE, io(new IOException("connect(..) failed with error(-13): Permission denied")));
    assertInstanceOf(SocketPermissionException.class, e);
    assertEquals("permission denied on CSI plugin socket " + SOCKET + " (connect: Permission denied)", e.getMessage());
  }

  @Test
  void connectRefused_isConnectionRefused() {
    CsiException e = whileConnecting(PROBE, io(new IOException("annotated",
        new ConnectException("connect(..) failed with error(-111): Connection refused"))));
    assertInstanceOf(ConnectionRefusedException.class, e);
  }

  @Test
  void connectNoSuchFile_isSocketNotFound() {
    // Netty reports ENOENT as a FileNotFoundException without a message
    CsiException e = whileConnecting(PROBE, io(new FileNotFoundException()));
    assertInstanceOf(SocketNotFoundException.class, e);
  }

  @Test
  void connectToDatagramSocket_isNotCsiServer() {
    CsiException e = whileConnecting(PROBE,
        io(new IOException("connect(..) failed with error(-91): Protocol wrong type for socket")));
    assertInstanceOf(NotCsiServerException.class, e);
    assertEquals("the server on " + SOCKET + " is not a CSI plugin: it is not a stream socket"
        + " (connect: Protocol wrong type for socket)", e.getMessage());
  }

  /** Netty's failure for a first frame that is not SETTINGS; its text is never read. */
  private static Status http2ProtocolError() {
    return Status.INTERNAL.withDescription("http2 exception").withCause(new IOException("wrapped",
        Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR, "any text at all")));
  }

  @Test
  void nonHttp2Peer_reportsWhatItAnswersToThePreface() {
    prefaceAnswer = "HTTP/".getBytes(StandardCharsets.US_ASCII);
    CsiException e = whileConnecting(PROBE, http2ProtocolError());
    assertEquals("the server on " + SOCKET + " is not a CSI plugin: it does not speak HTTP/2;"
        + " its first bytes were \"HTTP/\"", e.getMessage());
    assertEquals(0, rechecks.get());
  }

  @Test
  void nonHttp2Peer_thatAnswersNothingTheSecondTime_isStillNotCsiServer() {
    CsiException e = whileConnecting(PROBE, http2ProtocolError());
    assertInstanceOf(NotCsiServerException.class, e);
    assertEquals("the server on " + SOCKET + " is not a CSI plugin: it does not speak HTTP/2", e.getMessage());
  }

  @Test
  void nonHttp2Peer_binaryBytes_areEscaped() {
    assertEquals("\\x00\\x01ab\\x22", StatusTranslator.printable(new byte[] {0, 1, 'a', 'b', '"'}));
  }

  @Test
  void anotherHttp2Error_isNotTakenForANonHttp2Peer() {
    assertFalse(StatusTranslator.isHttp2ProtocolError(
        Http2Exception.connectionError(Http2Error.FLOW_CONTROL_ERROR, "First received frame was not SETTINGS")));
    assertFalse(StatusTranslator.isHttp2ProtocolError(
        new IOException("First received frame was not SETTINGS. Hex dump for first 5 bytes: 485454502f")));
  }

  @Test
  void closedDuringHandshake_whileSomethingStillListens_isNotCsiServer() {
    Status status = Status.UNAVAILABLE.withDescription(
        "Connection closing while performing protocol negotiation for [NettyClientHandler#0]");
    CsiException e = whileConnecting(PROBE, status);
    assertEquals("the server on " + SOCKET + " is not a CSI plugin: it closed the connection before completing"
        + " the HTTP/2 handshake (UNAVAILABLE: Connection closing while performing protocol negotiation for"
        + " [NettyClientHandler#0])", e.getMessage());
    assertEquals(1, rechecks.get());
  }

  @Test
  void closedDuringHandshake_byADyingPlugin_isWhatTheSocketSaysNow() {
    recheckAnswer = Optional.of(new ConnectionRefusedException(SOCKET));
    CsiException e = whileConnecting(PROBE, io(new IOException("Connection reset by peer")));
    assertInstanceOf(ConnectionRefusedException.class, e);
  }

  @Test
  void deadline_connectedOrNot() {
    Status status = Status.DEADLINE_EXCEEDED.withDescription("CallOptions deadline exceeded after 1.9s");
    CsiDeadlineExceededException connected =
        assertInstanceOf(CsiDeadlineExceededException.class, afterConnecting(PROBE, status));
    assertTrue(connected.connected());
    assertEquals(Duration.ofSeconds(2), connected.timeout());
    assertEquals("csi.v1.Identity/Probe on " + SOCKET + " got no answer within 2s (deadline exceeded)",
        connected.getMessage());
    CsiDeadlineExceededException connecting =
        assertInstanceOf(CsiDeadlineExceededException.class, whileConnecting(PROBE, status));
    assertFalse(connecting.connected());
  }

  @Test
  void inboundLimit_isResponseTooLarge_butPluginsResourceExhausted_isAPluginError() {
    CsiException tooLarge = afterConnecting(PROBE,
        Status.RESOURCE_EXHAUSTED.withDescription("gRPC message exceeds maximum size 1024: 5012"));
    assertEquals("the csi.v1.Identity/Probe response from " + SOCKET + " is larger than the limit of 1024 bytes"
        + " (gRPC message exceeds maximum size 1024: 5012)", tooLarge.getMessage());
    CsiStatusException quota = assertInstanceOf(CsiStatusException.class,
        afterConnecting(PROBE, Status.RESOURCE_EXHAUSTED.withDescription("volume quota reached")));
    assertEquals(StatusCode.RESOURCE_EXHAUSTED, quota.code());
  }

  @Test
  void unimplemented_onIdentity_isNotCsi_onController_isAPluginError() {
    Status status = Status.UNIMPLEMENTED.withDescription("Method not found");
    assertInstanceOf(NotCsiServerException.class, afterConnecting(PROBE, status));
    CsiStatusException e = assertInstanceOf(CsiStatusException.class, afterConnecting(CONTROLLER_CAPS, status));
    assertEquals(StatusCode.UNIMPLEMENTED, e.code());
  }

  @Test
  void plainHttp2Answer_isNotCsiServer() {
    Status status = Status.UNIMPLEMENTED.withDescription("HTTP status code 404\ninvalid content-type: text/html");
    CsiException e = afterConnecting(CONTROLLER_CAPS, status);
    assertEquals("the server on " + SOCKET + " is not a CSI plugin: it answered in plain HTTP/2, not gRPC"
        + " (HTTP status code 404; invalid content-type: text/html)", e.getMessage());
  }

  @Test
  void brokenConnectionAfterRequest_isConnectionLost() {
    CsiException e = afterConnecting(PROBE, Status.UNAVAILABLE.withDescription("Network closed for unknown reason"));
    assertEquals("the connection to CSI plugin socket " + SOCKET + " broke during csi.v1.Identity/Probe"
        + " (UNAVAILABLE: Network closed for unknown reason)", e.getMessage());
    assertInstanceOf(ConnectionLostException.class, afterConnecting(PROBE,
        Status.CANCELLED.withDescription("RST_STREAM closed stream. HTTP/2 error code: CANCEL")));
    assertInstanceOf(ConnectionLostException.class,
        afterConnecting(PROBE, io(new IOException("Connection reset by peer"))));
  }

  @Test
  void statusSentByPlugin_isAPluginError_withCodeAndMessage() {
    for (StatusCode code : StatusCode.values()) {
      if (code == StatusCode.OK || code == StatusCode.DEADLINE_EXCEEDED) {
        continue;
      }
      Status status = Status.fromCodeValue(code.value()).withDescription("plugin says " + code);
      CsiException e = afterConnecting(CONTROLLER_CAPS, status);
      CsiStatusException s = assertInstanceOf(CsiStatusException.class, e, code.name());
      assertEquals(code, s.code());
      assertEquals("plugin says " + code, s.description());
    }
  }

  @Test
  void statusWithoutDescription_hasNoTrailingColon() {
    CsiStatusException e = assertInstanceOf(CsiStatusException.class,
        afterConnecting(PROBE, Status.INTERNAL));
    assertEquals("csi.v1.Identity/Probe on " + SOCKET + " failed: INTERNAL", e.getMessage());
    assertEquals("", e.description());
  }

  @Test
  void noTranslatedExceptionCarriesAGrpcCause() {
    CsiException e = afterConnecting(PROBE, io(new IOException("Connection reset by peer")));
    assertNull(e.getCause());
  }
}
