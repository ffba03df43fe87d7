package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.util.concurrent.ListenableFuture;
import dev.csisupervisor.csi.v1.GetPluginInfoRequest;
import dev.csisupervisor.csi.v1.ProbeRequest;
import dev.csisupervisor.csi.v1.ProbeResponse;
import io.grpc.ConnectivityState;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class MockCsiPluginLifecycleTest {

  @TempDir
  Path dir;

  private static void makeStaleSocket(Path path) throws IOException {
    try (ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      channel.bind(UnixDomainSocketAddress.of(path));
    }
  }

  private static void assertRefusesConnections(Path socket) throws IOException {
    try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      assertThrows(ConnectException.class, () -> channel.connect(UnixDomainSocketAddress.of(socket)));
    }
  }

  @Test
  void start_bindsTheSocket_andStopRemovesIt() throws Exception {
    Path socket = dir.resolve("csi.sock");
    MockCsiPlugin plugin = MockCsiPlugin.builder().socket(socket).build();
    assertFalse(plugin.isRunning());
    assertSame(plugin, plugin.start());
    assertTrue(plugin.isRunning());
    assertTrue(SocketFiles.isSocket(socket));
    assertEquals("unix://" + socket, plugin.target());
    try (Csi csi = new Csi(socket)) {
      assertTrue(csi.ready());
    }
    plugin.stop();
    assertFalse(plugin.isRunning());
    assertFalse(Files.exists(socket), "graceful stop removes the socket file");
    assertTrue(plugin.awaitStopped(Duration.ZERO));
  }

  @Test
  void close_isIdempotent_andStartAfterStopIsRefused() throws Exception {
    MockCsiPlugin plugin = MockCsiPlugin.builder().socket(dir.resolve("csi.sock")).start();
    plugin.close();
    plugin.close();
    plugin.stop();
    IllegalStateException e = assertThrows(IllegalStateException.class, plugin::start);
    assertTrue(e.getMessage().contains("STOPPED"), e.getMessage());
  }

  @Test
  void start_twice_isRefused() throws Exception {
    try (MockCsiPlugin plugin = MockCsiPlugin.builder().socket(dir.resolve("csi.sock")).start()) {
      assertThrows(IllegalStateException.class, plugin::start);
      assertTrue(plugin.isRunning());
    }
  }

  @Test
  void stopBeforeStart_marksItStopped() throws Exception {
    MockCsiPlugin plugin = MockCsiPlugin.builder().socket(dir.resolve("csi.sock")).build();
    plugin.stop();
    assertTrue(plugin.awaitStopped(Duration.ZERO));
    assertThrows(IllegalStateException.class, plugin::start);
    assertFalse(Files.exists(dir.resolve("csi.sock")));
  }

  @Test
  void crash_leavesAStaleSocketFile_thatRefusesConnections() throws Exception {
    Path socket = dir.resolve("csi.sock");
    MockCsiPlugin plugin = MockCsiPlugin.builder().socket(socket).start();
    try (Csi csi = new Csi(socket)) {
      assertTrue(csi.ready());
      plugin.crash();
      assertFalse(plugin.isRunning());
      assertTrue(SocketFiles.isSocket(socket), "crash leaves the socket file behind");
      assertRefusesConnections(socket);
      // The open connection was dropped. (A call racing the client's own discovery of that
      // can fail UNKNOWN / ClosedChannelException inside grpc-java, as with any dead peer;
      // so wait until the client has seen it.)
      await().atMost(Duration.ofSeconds(20))
          .until(() -> csi.channel.getState(false) != ConnectivityState.READY);
      assertEquals(Status.Code.UNAVAILABLE,
          codeOf(() -> csi.identity().probe(ProbeRequest.getDefaultInstance())));
    }
    try (Csi fresh = new Csi(socket)) {
      assertEquals(Status.Code.UNAVAILABLE,
          codeOf(() -> fresh.identity().probe(ProbeRequest.getDefaultInstance())));
    }
    plugin.close();
    plugin.crash(); // no-op now
    assertTrue(SocketFiles.isSocket(socket), "close after a crash leaves the stale socket alone");
  }

  @Test
  void crash_dropsOpenCalls_likeADeadProcess() throws Exception {
    Path socket = dir.resolve("csi.sock");
    MockCsiPlugin plugin = MockCsiPlugin.builder().socket(socket).start();
    try (plugin; Csi csi = new Csi(socket)) {
      plugin.hangProbes(true);
      ListenableFuture<ProbeResponse> waiting = csi.identityFuture().probe(ProbeRequest.getDefaultInstance());
      await().atMost(Duration.ofSeconds(20)).until(() -> plugin.hungProbeCount() == 1);
      plugin.crash();
      ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(20, TimeUnit.SECONDS));
      assertEquals(Status.Code.UNAVAILABLE, ((StatusRuntimeException) e.getCause()).getStatus().getCode());
    }
  }

  @Test
  void crash_onASharedGroup_dropsDelayedCalls_andLeavesTheGroupRunning() throws Exception {
    Path socket = dir.resolve("csi.sock");
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    try (MockCsiPlugin plugin = MockCsiPlugin.builder().socket(socket).eventLoopGroup(group)
            .latency(Duration.ofSeconds(60)).start(); // in flight until the crash, whatever the machine's load
        Csi csi = new Csi(socket)) {
      ListenableFuture<ProbeResponse> delayed = csi.identityFuture().probe(ProbeRequest.getDefaultInstance());
      await().atMost(Duration.ofSeconds(20)).until(() -> plugin.probeCount() == 1);
      plugin.crash();
      ExecutionException e = assertThrows(ExecutionException.class, () -> delayed.get(20, TimeUnit.SECONDS));
      assertEquals(Status.Code.UNAVAILABLE, ((StatusRuntimeException) e.getCause()).getStatus().getCode());
      assertFalse(group.isShuttingDown());
      assertTrue(SocketFiles.isSocket(socket));
      assertRefusesConnections(socket);
    } finally {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void crashBeforeStart_isRefused() {
    MockCsiPlugin plugin = MockCsiPlugin.builder().socket(dir.resolve("csi.sock")).build();
    assertThrows(IllegalStateException.class, plugin::crash);
  }

  @Test
  void start_replacesAStaleSocketFile() throws Exception {
    Path socket = dir.resolve("csi.sock");
    makeStaleSocket(socket);
    assertTrue(SocketFiles.isSocket(socket));
    try (MockCsiPlugin plugin = MockCsiPlugin.builder().socket(socket).start(); Csi csi = new Csi(socket)) {
      assertTrue(plugin.isRunning());
      assertTrue(csi.ready());
    }
  }

  @Test
  void restartAfterCrash_onTheSamePath_serves() throws Exception {
    Path socket = dir.resolve("csi.sock");
    MockCsiPlugin.Builder builder = MockCsiPlugin.builder().socket(socket);
    builder.start().crash();
    try (MockCsiPlugin second = builder.vendorVersion("2.0.0").start(); Csi csi = new Csi(socket)) {
      assertEquals("2.0.0", csi.identity()
          .getPluginInfo(GetPluginInfoRequest.getDefaultInstance())
          .getVendorVersion());
      assertTrue(second.isRunning());
    }
  }

  @Test
  void start_refusesARegularFileAtThePath_andLeavesItAlone() throws Exception {
    Path socket = dir.resolve("csi.sock");
    Files.writeString(socket, "keep me");
    MockCsiPlugin plugin = MockCsiPlugin.builder().socket(socket).build();
    IOException e = assertThrows(IOException.class, plugin::start);
    assertTrue(e.getMessage().contains(socket.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("regular file"), e.getMessage());
    assertEquals("keep me", Files.readString(socket));
    assertFalse(plugin.isRunning());

    // A failed start leaves the plugin NEW: fix the path and start again.
    Files.delete(socket);
    try (plugin; Csi csi = new Csi(plugin.start().socket())) {
      assertTrue(csi.ready());
    }
  }

  @Test
  void start_refusesADirectoryAtThePath() throws Exception {
    Path socket = Files.createDirectory(dir.resolve("csi.sock"));
    IOException e = assertThrows(IOException.class, () -> MockCsiPlugin.builder().socket(socket).start());
    assertTrue(e.getMessage().contains(socket.toString()) && e.getMessage().contains("directory"), e.getMessage());
    assertTrue(Files.isDirectory(socket));
  }

  @Test
  void start_refusesASymbolicLinkAtThePath() throws Exception {
    Path target = dir.resolve("target.sock");
    makeStaleSocket(target);
    Path socket = Files.createSymbolicLink(dir.resolve("csi.sock"), target);
    IOException e = assertThrows(IOException.class, () -> MockCsiPlugin.builder().socket(socket).start());
    assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
    assertTrue(Files.isSymbolicLink(socket));
  }

  @Test
  void start_refusesASocketThatIsInUse_andTheOwnerKeepsServing() throws Exception {
    Path socket = dir.resolve("csi.sock");
    try (MockCsiPlugin owner = MockCsiPlugin.builder().socket(socket).name("owner").start();
        Csi csi = new Csi(socket)) {
      MockCsiPlugin intruder = MockCsiPlugin.builder().socket(socket).name("intruder").build();
      IOException e = assertThrows(IOException.class, intruder::start);
      assertTrue(e.getMessage().contains("in use") && e.getMessage().contains(socket.toString()), e.getMessage());
      assertEquals("owner", csi.identity()
          .getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
      assertTrue(owner.isRunning());
    }
  }

  @Test
  void start_withMissingParent_failsNamingIt_unlessToldToCreateIt() throws Exception {
    Path parent = dir.resolve("plugins/ebs");
    Path socket = parent.resolve("csi.sock");
    IOException e = assertThrows(IOException.class, () -> MockCsiPlugin.builder().socket(socket).start());
    assertTrue(e.getMessage().contains(parent.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
    assertFalse(Files.exists(dir.resolve("plugins")), "nothing created unless asked");

    try (MockCsiPlugin plugin = MockCsiPlugin.builder().socket(socket).createParentDirs(true).start();
        Csi csi = new Csi(socket)) {
      assertTrue(Files.isDirectory(parent));
      assertEquals(socket, plugin.socket());
      assertTrue(csi.ready());
    }
  }

  @Test
  void start_whenParentIsAFile_failsNamingIt() throws Exception {
    Path parent = Files.writeString(dir.resolve("notadir"), "x");
    Path socket = parent.resolve("csi.sock");
    IOException e = assertThrows(IOException.class,
        () -> MockCsiPlugin.builder().socket(socket).createParentDirs(true).start());
    assertTrue(e.getMessage().contains(parent.toString()) && e.getMessage().contains("not a directory"),
        e.getMessage());
  }

  @Test
  void builder_rejectsBadInput_namingTheField() {
    IllegalStateException noSocket = assertThrows(IllegalStateException.class,
        () -> MockCsiPlugin.builder().build());
    assertTrue(noSocket.getMessage().contains("socket"), noSocket.getMessage());

    Path tooLong = Path.of("/tmp/" + "x".repeat(103));
    IllegalArgumentException longPath = assertThrows(IllegalArgumentException.class,
        () -> MockCsiPlugin.builder().socket(tooLong));
    assertTrue(longPath.getMessage().contains("108 bytes") && longPath.getMessage().contains(tooLong.toString()),
        longPath.getMessage());
    MockCsiPlugin.builder().socket(Path.of("/tmp/" + "x".repeat(102))); // exactly 107 bytes is fine

    IllegalArgumentException readyAfter = assertThrows(IllegalArgumentException.class,
        () -> MockCsiPlugin.builder().readyAfter(Duration.ofMillis(-5)));
    assertTrue(readyAfter.getMessage().contains("readyAfter") && readyAfter.getMessage().contains("-0.005"),
        readyAfter.getMessage());
    IllegalArgumentException latency = assertThrows(IllegalArgumentException.class,
        () -> MockCsiPlugin.builder().latency(Duration.ofSeconds(-1)));
    assertTrue(latency.getMessage().contains("latency"), latency.getMessage());
    assertThrows(NullPointerException.class, () -> MockCsiPlugin.builder().name(null));
    assertThrows(IllegalArgumentException.class, () -> MockCsiPlugin.builder().socket(Path.of("/")));
    for (String badPrefix : new String[] {"", "a\0b", "x".repeat(128)}) {
      IllegalArgumentException prefix = assertThrows(IllegalArgumentException.class,
          () -> MockCsiPlugin.builder().volumeIdPrefix(badPrefix));
      assertTrue(prefix.getMessage().startsWith("volumeIdPrefix"), prefix.getMessage());
    }
    MockCsiPlugin.builder().volumeIdPrefix("x".repeat(127)); // ids of 128 bytes: CSI's limit
  }

  @Test
  void relativeSocketPath_isMadeAbsolute() {
    MockCsiPlugin plugin = MockCsiPlugin.builder().socket(Path.of("rel.sock")).build();
    assertTrue(plugin.socket().isAbsolute());
    assertEquals(Path.of("rel.sock").toAbsolutePath(), plugin.socket());
  }
}
