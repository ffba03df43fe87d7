package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.testing.WithoutPermissionOverride;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Each failure kind over real unix sockets, with the exact message a user sees. The messages are
 * asserted in full on purpose: they are part of the contract (operators read them).
 */
class CsiClientErrorsTest extends PluginSocketTest {
  private static final Duration SHORT = Duration.ofMillis(300);
  /** A deadline no test waits for ... */
  private static final Duration AN_HOUR = Duration.ofHours(1);
  /** ... and a bound that only waiting for it could exceed. */
  private static final Duration NOT_AN_HOUR = Duration.ofMinutes(2);

  private CsiClient client(CsiClientOptions options) throws SocketPathTooLongException {
    client = CsiClient.create(socket, options);
    return client;
  }

  private CsiClient client() throws SocketPathTooLongException {
    return client(CsiClientOptions.defaults());
  }

  private MockCsiPlugin.Builder mock(MockMode mode) {
    return MockCsiPlugin.builder().socket(socket).mode(mode).name("p.example.com");
  }

  private MockCsiPlugin startPlugin(MockMode mode) throws Exception {
    return startPlugin(mock(mode));
  }

  private MockCsiPlugin startPlugin(MockCsiPlugin.Builder builder) throws Exception {
    plugin = builder.start();
    return plugin;
  }

  /** {@code call} fails as an invalid response whose message names the method, the socket and the problem. */
  private InvalidResponseException assertInvalidResponse(String method, String problem, Executable call) {
    InvalidResponseException e = assertThrows(InvalidResponseException.class, call);
    assertEquals(method + " on " + socket + " returned an invalid response: " + problem, e.getMessage());
    return e;
  }

  // ---- the socket path --------------------------------------------------------------------------

  @Test
  void missingSocket_isSocketNotFound() throws Exception {
    SocketNotFoundException e = assertThrows(SocketNotFoundException.class, client()::probe);
    assertEquals("CSI plugin socket " + socket + " does not exist", e.getMessage());
    assertEquals(socket, e.getSocket());
    assertEquals(CsiErrorKind.SOCKET_NOT_FOUND, e.kind());
  }

  @Test
  void missingParentDirectory_isSocketNotFound() throws Exception {
    socket = dir.resolve("no-such-dir/csi.sock");
    SocketNotFoundException e = assertThrows(SocketNotFoundException.class, client()::probe);
    assertEquals("CSI plugin socket " + socket + " does not exist", e.getMessage());
  }

  @Test
  void parentIsAFile_isSocketNotFound_sayingWhy() throws Exception {
    Files.writeString(dir.resolve("file"), "x");
    socket = dir.resolve("file/csi.sock");
    SocketNotFoundException e = assertThrows(SocketNotFoundException.class, client()::probe);
    assertEquals("CSI plugin socket " + socket + " does not exist (Not a directory)", e.getMessage());
  }

  @Test
  void regularFileAtPath_isNotASocket() throws Exception {
    Files.writeString(socket, "not a socket");
    NotASocketException e = assertThrows(NotASocketException.class, client()::probe);
    assertEquals("CSI plugin socket path " + socket + " is a regular file, not a unix domain socket", e.getMessage());
    assertEquals("a regular file", e.fileType());
    assertEquals(CsiErrorKind.NOT_A_SOCKET, e.kind());
  }

  @Test
  void directoryAtPath_isNotASocket() throws Exception {
    Files.createDirectory(socket);
    NotASocketException e = assertThrows(NotASocketException.class, client()::probe);
    assertEquals("CSI plugin socket path " + socket + " is a directory, not a unix domain socket", e.getMessage());
  }

  @Test
  void symlinkToLiveSocket_works() throws Exception {
    startPlugin(MockMode.NODE);
    Path link = dir.resolve("link.sock");
    Files.createSymbolicLink(link, socket);
    try (CsiClient viaLink = CsiClient.create(link)) {
      assertTrue(viaLink.probe().ready());
    }
  }

  @Test
  void pathOver107Bytes_isRejectedAtCreate() throws Exception {
    Path tooLong = dir.resolve("a".repeat(108 - dir.path().toString().length() - 1));
    assertEquals(108, tooLong.toString().length());
    SocketPathTooLongException e = assertThrows(SocketPathTooLongException.class, () -> CsiClient.create(tooLong));
    assertEquals("CSI plugin socket path " + tooLong + " is 108 bytes, over the unix socket limit of 107 bytes",
        e.getMessage());
    assertEquals(108, e.lengthBytes());
    assertEquals(CsiErrorKind.SOCKET_PATH_TOO_LONG, e.kind());
  }

  @Test
  void pathOfExactly107Bytes_connects() throws Exception {
    socket = dir.resolve("s".repeat(107 - dir.path().toString().length() - 1));
    assertEquals(107, socket.toString().length());
    startPlugin(MockMode.NODE);
    assertTrue(client().probe().ready());
  }

  @Test
  void permissionDenied_isSocketPermission() throws Exception {
    startPlugin(MockMode.NODE);
    Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("---------"));
    // Root ignores file permissions: the probe runs where they apply.
    WithoutPermissionOverride.Result r = WithoutPermissionOverride.run(ProbeAndPrint.class, socket.toString());
    assertEquals(SocketPermissionException.class.getSimpleName() + ": permission denied on CSI plugin socket "
        + socket + " (connect: Permission denied)", r.output(), r.toString());
  }

  /** Probes the plugin on the socket named by its argument and prints the exception (or "ready"). */
  static final class ProbeAndPrint {
    public static void main(String[] args) throws Exception {
      try (CsiClient c = CsiClient.create(Path.of(args[0]))) {
        System.out.println(c.probe().ready() ? "ready" : "not ready");
      } catch (CsiException e) {
        System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
      }
    }
  }

  // ---- what is (not) listening ------------------------------------------------------------------

  @Test
  void staleSocket_isConnectionRefused_fast() throws Exception {
    RawSocketServer.makeStaleSocket(socket);
    // A refusal must not wait for the deadline: an hour here, so waiting cannot pass for slowness.
    CsiClient c = client(CsiClientOptions.defaults().withCallTimeout(AN_HOUR));
    ConnectionRefusedException e = assertTimeoutPreemptively(NOT_AN_HOUR,
        () -> assertThrows(ConnectionRefusedException.class, c::probe));
    assertEquals("nothing is accepting connections on CSI plugin socket " + socket
        + " (connection refused): the socket file is stale or the plugin is not listening yet", e.getMessage());
    assertEquals(CsiErrorKind.CONNECTION_REFUSED, e.kind());
    // and again: no cached state turns it into something else
    assertThrows(ConnectionRefusedException.class, client::probe);
  }

  @Test
  void pluginStartingRightAfterRefusedProbe_isReachableOnTheVeryNextProbe() throws Exception {
    RawSocketServer.makeStaleSocket(socket);
    assertThrows(ConnectionRefusedException.class, client()::probe);
    assertThrows(ConnectionRefusedException.class, client::probe);

    startPlugin(MockMode.NODE); // removes the stale socket file and binds
    // gRPC alone would fail this probe with the cached "connection refused" for ~1 s of backoff:
    // READY (not a refusal) is the proof, whatever the machine's speed.
    assertEquals(ProbeResult.READY, client.probe());
  }

  @Test
  void pluginStartingAfterMissingSocket_isReachableOnTheVeryNextProbe() throws Exception {
    assertThrows(SocketNotFoundException.class, client()::probe);
    startPlugin(MockMode.NODE);
    assertEquals(ProbeResult.READY, client.probe());
  }

  @Test
  void crashedPluginRestarted_isReachableAgain() throws Exception {
    startPlugin(MockMode.MONOLITH);
    assertTrue(client().probe().ready());
    plugin.crash(); // stale socket left behind
    // The first call may still go out on the connection the client has not yet seen close.
    CsiException first = assertThrows(CsiException.class, client::probe);
    assertTrue(first instanceof ConnectionRefusedException || first instanceof ConnectionLostException,
        first.toString());
    assertThrows(ConnectionRefusedException.class, client::probe);
    startPlugin(mock(MockMode.MONOLITH).vendorVersion("2.0.0"));
    assertEquals("2.0.0", client.pluginInfo().vendorVersion());
  }

  @Test
  void crashDuringCall_isConnectionLost_thenRefused() throws Exception {
    startPlugin(MockMode.NODE);
    assertTrue(client().probe().ready());
    plugin.hangProbes(true);
    CompletableFuture<ProbeResult> probe = client.probeAsync();
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungProbeCount() == 1);
    plugin.crash();
    ExecutionException e = assertThrows(ExecutionException.class, probe::get);
    ConnectionLostException lost = assertInstanceOf(ConnectionLostException.class, e.getCause());
    assertTrue(lost.getMessage().startsWith(
        "the connection to CSI plugin socket " + socket + " broke during csi.v1.Identity/Probe ("),
        lost.getMessage());
    assertThrows(ConnectionRefusedException.class, client::probe);
  }

  @Test
  void gracefullyStoppedPlugin_isSocketNotFound() throws Exception {
    startPlugin(MockMode.NODE);
    assertTrue(client().probe().ready());
    plugin.stop();
    assertThrows(SocketNotFoundException.class, client::probe);
  }

  @Test
  void http1Server_isNotCsiServer() throws Exception {
    startRawServer(RawSocketServer.Behaviour.HTTP1_BAD_REQUEST);
    NotCsiServerException e = assertThrows(NotCsiServerException.class, client()::probe);
    assertEquals("the server on " + socket + " is not a CSI plugin: it does not speak HTTP/2;"
        + " its first bytes were \"HTTP/\"", e.getMessage());
    assertEquals(CsiErrorKind.NOT_CSI_SERVER, e.kind());
    // the next probe asks again rather than replaying a cached failure
    assertThrows(NotCsiServerException.class, client::probe);
  }

  @Test
  void serverClosingEveryConnection_isNotCsiServer() throws Exception {
    startRawServer(RawSocketServer.Behaviour.CLOSE_IMMEDIATELY);
    NotCsiServerException e = assertThrows(NotCsiServerException.class, client()::probe);
    assertTrue(e.getMessage().startsWith("the server on " + socket + " is not a CSI plugin: it closed the"
        + " connection before completing the HTTP/2 handshake (UNAVAILABLE"), e.getMessage());
  }

  @Test
  void silentServer_isDeadlineExceeded_notConnected() throws Exception {
    startRawServer(RawSocketServer.Behaviour.SILENT);
    CsiDeadlineExceededException e = assertThrows(CsiDeadlineExceededException.class,
        client(CsiClientOptions.defaults().withCallTimeout(SHORT))::probe);
    assertFalse(e.connected());
    assertEquals("csi.v1.Identity/Probe on " + socket + " got no answer within 300ms (deadline exceeded)"
        + " while still connecting: the server did not complete the HTTP/2 handshake in time", e.getMessage());
  }

  @Test
  void grpcServerWithoutIdentity_isNotCsiServer() throws Exception {
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    Server server = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollServerDomainSocketChannel.class)
        .bossEventLoopGroup(group)
        .workerEventLoopGroup(group)
        .withChildOption(ChannelOption.SO_KEEPALIVE, null)
        .addService(new ControllerGrpc.ControllerImplBase() {})
        .build()
        .start();
    try {
      NotCsiServerException e = assertThrows(NotCsiServerException.class, client()::probe);
      assertEquals("the server on " + socket + " is not a CSI plugin: it is a gRPC server without the CSI"
          + " Identity service (UNIMPLEMENTED: Method not found: csi.v1.Identity/Probe)", e.getMessage());
    } finally {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    }
  }

  // ---- the plugin's answers ---------------------------------------------------------------------

  @Test
  void hungPlugin_isDeadlineExceeded_connected_andRecovers() throws Exception {
    startPlugin(MockMode.NODE);
    client(CsiClientOptions.defaults().withCallTimeout(SHORT));
    // Connect first (a cold JVM may need longer than SHORT for its very first connection).
    Awaitility.await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> client.probe().ready());
    plugin.hangProbes(true);
    CsiDeadlineExceededException e = assertThrows(CsiDeadlineExceededException.class, client::probe);
    assertTrue(e.connected());
    assertEquals(SHORT, e.timeout());
    assertEquals("csi.v1.Identity/Probe on " + socket + " got no answer within 300ms (deadline exceeded)",
        e.getMessage());
    assertEquals(CsiErrorKind.DEADLINE_EXCEEDED, e.kind());
    plugin.hangProbes(false);
    // Answered again (within its 300 ms: tried until one is, a loaded machine may miss a deadline that short).
    Awaitility.await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> client.probe().ready());
  }

  @Test
  void slowPlugin_withinDeadline_succeeds() throws Exception {
    startPlugin(MockMode.NODE).setLatency(Duration.ofMillis(50));
    assertTrue(client(CsiClientOptions.defaults().withCallTimeout(Duration.ofSeconds(5))).probe().ready());
  }

  @Test
  void pluginErrorStatus_keepsCodeAndMessage() throws Exception {
    startPlugin(MockMode.NODE).failProbes(Status.Code.FAILED_PRECONDITION, "disk /dev/xvdf missing");
    CsiStatusException e = assertThrows(CsiStatusException.class, client()::probe);
    assertEquals(StatusCode.FAILED_PRECONDITION, e.code());
    assertEquals("disk /dev/xvdf missing", e.description());
    assertEquals("csi.v1.Identity/Probe on " + socket + " failed: FAILED_PRECONDITION: disk /dev/xvdf missing",
        e.getMessage());
    assertEquals(CsiErrorKind.PLUGIN_ERROR, e.kind());
    plugin.clearProbeFailure();
    assertTrue(client.probe().ready());
  }

  @Test
  void pluginSendingUnavailable_isAPluginError_notALostConnection() throws Exception {
    startPlugin(MockMode.NODE).failProbes(Status.Code.UNAVAILABLE, "warming up");
    CsiStatusException e = assertThrows(CsiStatusException.class, client()::probe);
    assertEquals(StatusCode.UNAVAILABLE, e.code());
  }

  @Test
  void responseOverLimit_isResponseTooLarge() throws Exception {
    startPlugin(mock(MockMode.NODE).manifest(Map.of("blob", "x".repeat(4096))));
    ResponseTooLargeException e = assertThrows(ResponseTooLargeException.class,
        client(CsiClientOptions.defaults().withMaxInboundMessageBytes(1024))::pluginInfo);
    assertEquals(1024, e.limitBytes());
    assertTrue(e.getMessage().startsWith("the csi.v1.Identity/GetPluginInfo response from " + socket
        + " is larger than the limit of 1024 bytes (gRPC message exceeds maximum size 1024: "), e.getMessage());
    assertEquals(CsiErrorKind.RESPONSE_TOO_LARGE, e.kind());
    // small answers on the same client still work
    assertTrue(client.probe().ready());
  }

  @Test
  void emptyPluginName_isInvalidResponse() throws Exception {
    startPlugin(mock(MockMode.NODE).name(""));
    InvalidResponseException e = assertInvalidResponse("csi.v1.Identity/GetPluginInfo",
        "name is empty, but CSI requires it", client()::pluginInfo);
    assertEquals(CsiErrorKind.INVALID_RESPONSE, e.kind());
    assertThrows(InvalidResponseException.class, () -> client.fingerprint(PluginKind.NODE));
  }

  @Test
  void emptyNodeIdOrNegativeMaxVolumes_isInvalidResponse() throws Exception {
    startPlugin(mock(MockMode.NODE).nodeId(""));
    assertInvalidResponse("csi.v1.Node/NodeGetInfo", "node_id is empty, but CSI requires it", client()::nodeInfo);
    plugin.setNodeInfo("n1", -1, Map.of());
    assertInvalidResponse("csi.v1.Node/NodeGetInfo", "max_volumes_per_node is -1, but CSI forbids negative values",
        client::nodeInfo);
  }

  // ---- async failures, cancellation, close --------------------------------------------------------

  @Test
  void asyncFailure_holdsTheCsiExceptionItself() throws Exception {
    CompletableFuture<ProbeResult> probe = client().probeAsync();
    Throwable failure = probe.handle((value, t) -> t).get();
    assertInstanceOf(SocketNotFoundException.class, failure);
    // dependent stages see it wrapped, as CompletableFuture does; find() unwraps
    CompletionException wrapped = assertThrows(CompletionException.class, () -> probe.thenApply(r -> r).join());
    assertSame(failure, CsiException.find(wrapped).orElseThrow());
  }

  @Test
  void fingerprintFailure_reportsPluginInfoFirst() throws Exception {
    RawSocketServer.makeStaleSocket(socket);
    CompletableFuture<PluginFingerprint> fp = client().fingerprintAsync(PluginKind.MONOLITH);
    CsiException e = (CsiException) fp.handle((value, t) -> t).get();
    assertInstanceOf(ConnectionRefusedException.class, e);
  }

  @Test
  void cancellingAsyncCall_cancelsItAtThePlugin() throws Exception {
    startPlugin(MockMode.NODE).hangProbes(true);
    CompletableFuture<ProbeResult> probe = client().probeAsync();
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungProbeCount() == 1);
    assertTrue(probe.cancel(true));
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungProbeCount() == 0);
  }

  @Test
  void interruptedBlockingCall_isCancelled_andKeepsInterruptFlag() throws Exception {
    startPlugin(MockMode.NODE).hangProbes(true);
    client();
    Thread.currentThread().interrupt();
    try {
      CallCancelledException e = assertThrows(CallCancelledException.class, client::probe);
      assertEquals("csi.v1.Identity/Probe on " + socket + " was cancelled: the calling thread was interrupted",
          e.getMessage());
      assertTrue(Thread.currentThread().isInterrupted());
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void callAfterClose_isCancelled() throws Exception {
    startPlugin(MockMode.NODE);
    client().close();
    CallCancelledException e = assertThrows(CallCancelledException.class, client::probe);
    assertEquals("csi.v1.Identity/Probe on " + socket + " was cancelled: the client is closed", e.getMessage());
    assertEquals(CsiErrorKind.CANCELLED, e.kind());
    client.close(); // idempotent
  }

  @Test
  void closeDuringHungCall_cancelsIt() throws Exception {
    startPlugin(MockMode.NODE).hangProbes(true);
    // The hung call's deadline is an hour away: close() returning at all shows it did not wait for it.
    CompletableFuture<ProbeResult> probe = client(CsiClientOptions.defaults().withCallTimeout(AN_HOUR)).probeAsync();
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungProbeCount() == 1);
    assertTimeoutPreemptively(NOT_AN_HOUR, client::close);
    ExecutionException e = assertThrows(ExecutionException.class, probe::get);
    assertInstanceOf(CallCancelledException.class, e.getCause());
  }
}
