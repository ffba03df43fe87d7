package dev.csisupervisor.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.admin.v1.AgentAdminGrpc;
import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.CreateVolumeResponse;
import dev.csisupervisor.admin.v1.GetAgentStatusRequest;
import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.admin.v1.GetPluginRequest;
import dev.csisupervisor.admin.v1.GetPluginResponse;
import dev.csisupervisor.admin.v1.ListPluginsRequest;
import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.admin.v1.Snapshot;
import dev.csisupervisor.admin.v1.VolumeAdminGrpc;
import dev.csisupervisor.admin.v1.WatchEventsRequest;
import dev.csisupervisor.admin.v1.WatchEventsResponse;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.StreamObserver;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The CLI's own gRPC client against grpc-java's server on a unix socket (Netty epoll, as the agent serves its admin
 * API): answers of any size, the server's status and message, deadlines, a server that is not there, streams, and
 * a request larger than the server's flow-control window.
 */
class GrpcCallTest {
  private static final String ADMIN = AgentAdminGrpc.SERVICE_NAME + "/";
  private Path dir;
  private Path socket;
  private EventLoopGroup group;
  private Server server;
  private final CountDownLatch never = new CountDownLatch(1);

  /** What the server answers: plugins by the hundred, errors with messages that need escaping, a hang, a stream. */
  private final class Admin extends AgentAdminGrpc.AgentAdminImplBase {
    @Override
    public void listPlugins(ListPluginsRequest request, StreamObserver<ListPluginsResponse> out) {
      out.onNext(plugins(request.getType() == PluginType.CSI_NODE ? 5_000 : 1));
      out.onCompleted();
    }

    @Override
    public void getPlugin(GetPluginRequest request, StreamObserver<GetPluginResponse> out) {
      out.onError(Status.NOT_FOUND.withDescription("no plugin named \"" + request.getName() + "\": 100% sure, é ✓")
          .asRuntimeException());
    }

    @Override
    public void getAgentStatus(GetAgentStatusRequest request, StreamObserver<GetAgentStatusResponse> out) {
      try {
        never.await(); // answers nothing until the test ends
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      out.onError(Status.CANCELLED.asRuntimeException());
    }

    @Override
    public void watchEvents(WatchEventsRequest request, StreamObserver<WatchEventsResponse> out) {
      for (int i = 0; i < 3; i++) {
        out.onNext(WatchEventsResponse.newBuilder().setSnapshot(Snapshot.newBuilder().setSequence(i)).build());
      }
      out.onCompleted();
    }
  }

  /** Creates a volume named after the size of its request's parameters. */
  private static final class Volumes extends VolumeAdminGrpc.VolumeAdminImplBase {
    @Override
    public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> out) {
      out.onNext(CreateVolumeResponse.newBuilder().setVolumeId(request.getName() + "-"
          + request.getParametersMap().values().stream().mapToInt(String::length).sum()).build());
      out.onCompleted();
    }
  }

  static ListPluginsResponse plugins(int n) {
    ListPluginsResponse.Builder b = ListPluginsResponse.newBuilder();
    for (int i = 0; i < n; i++) {
      b.addPlugins(Plugin.newBuilder().setName("plugin-" + i).setType(PluginType.CSI_NODE).setVersion("1.0." + i)
          .setSocketPath("/run/csi/node/plugin-" + i + "/csi.sock").putOptions("k" + i, "v".repeat(i % 50)));
    }
    return b.build();
  }

  @BeforeEach
  void start() throws Exception {
    dir = Files.createTempDirectory(Path.of("/tmp"), "grpc-call");
    socket = dir.resolve("agent.sock");
    group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    server = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollServerDomainSocketChannel.class).bossEventLoopGroup(group).workerEventLoopGroup(group)
        .flowControlWindow(16 * 1024) // smaller than the large request below: the client must wait for window
        .addService(new Admin()).addService(new Volumes()).build().start();
  }

  @AfterEach
  void stop() throws Exception {
    never.countDown();
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    Files.deleteIfExists(socket);
    Files.deleteIfExists(dir);
  }

  @Test
  void aLargeAnswer_arrivesWhole() throws Exception {
    ListPluginsResponse expected = plugins(5_000);
    assertTrue(expected.getSerializedSize() > 300_000, "many frames, and more than a default window");
    byte[] answer = GrpcCall.unary(socket, ADMIN + "ListPlugins",
        ListPluginsRequest.newBuilder().setType(PluginType.CSI_NODE).build().toByteArray(), Duration.ofSeconds(10));
    assertArrayEquals(expected.toByteArray(), answer);
    try (AdminClient client = AdminClient.connect(socket)) {
      assertEquals(plugins(1).getPluginsList(), client.listPlugins(PluginType.CSI_CONTROLLER));
    }
  }

  @Test
  void aRequestLargerThanTheServersWindow_isSentWhole() throws Exception {
    CreateVolumeRequest.Builder b = CreateVolumeRequest.newBuilder().setName("big");
    for (int i = 0; i < 20; i++) {
      b.putParameters("p" + i, "x".repeat(10_000));
    }
    try (AdminClient client = AdminClient.connect(socket)) {
      assertEquals("big-200000", client.createVolume(b.build()).getVolumeId());
    }
  }

  @Test
  void theServersStatusAndMessage_comeThroughAsTheyWereSent() throws Exception {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> GrpcCall.unary(socket,
        ADMIN + "GetPlugin", GetPluginRequest.newBuilder().setName("x").build().toByteArray(), Duration.ofSeconds(5)));
    assertEquals(Status.Code.NOT_FOUND, e.getStatus().getCode());
    assertEquals("no plugin named \"x\": 100% sure, é ✓", e.getStatus().getDescription());
    try (AdminClient client = AdminClient.connect(socket)) {
      assertFalse(client.getPlugin(PluginType.CSI_NODE, "x").isPresent());
    }
  }

  @Test
  void anUnknownMethod_isUnimplemented() {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> GrpcCall.unary(socket,
        ADMIN + "NoSuchMethod", new byte[0], Duration.ofSeconds(5)));
    assertEquals(Status.Code.UNIMPLEMENTED, e.getStatus().getCode());
  }

  @Test
  void noAnswerInTime_isDeadlineExceeded_andSaysSo() throws Exception {
    long t0 = System.nanoTime();
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> GrpcCall.unary(socket,
        ADMIN + "GetAgentStatus", new byte[0], Duration.ofMillis(300)));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode());
    assertTrue(System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(300), "not before the deadline");
    try (AdminClient client = AdminClient.connect(socket)) {
      assertEquals("the agent at " + socket + " did not answer in time",
          client.translate(e).getMessage());
    }
  }

  @Test
  void aStream_givesEveryMessageInOrder_thenEnds() throws Exception {
    try (AdminClient client = AdminClient.connect(socket)) {
      Iterator<WatchEventsResponse> it = client.watch(PluginType.CSI_NODE);
      List<Long> seen = new ArrayList<>();
      it.forEachRemaining(m -> seen.add(m.getSnapshot().getSequence()));
      assertEquals(List.of(0L, 1L, 2L), seen);
    }
  }

  @Test
  void aSocketNobodyListensOn_isNoAgent_connectionRefused() throws Exception {
    Path stale = dir.resolve("stale.sock");
    try (ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      s.bind(UnixDomainSocketAddress.of(stale)); // closed without unlinking: the file of an agent that died
    }
    try (AdminClient client = AdminClient.connect(stale)) {
      AdminClient.AdminException e = assertThrows(AdminClient.AdminException.class, client::status);
      assertEquals("no agent is running at " + stale + " (connection refused)", e.getMessage());
      assertTrue(e.noAgent());
    } finally {
      Files.deleteIfExists(stale);
    }
    assertFalse(AdminClient.answers(stale));
  }

  @Test
  void percentDecoding_isGrpcs() {
    assertEquals("100% sure", GrpcStatuses.percentDecode("100%25 sure"));
    assertEquals("é", GrpcStatuses.percentDecode("%C3%A9"));
    assertEquals("50%", GrpcStatuses.percentDecode("50%")); // not an escape: kept
  }

  @Test
  void timeouts_fitGrpcsEightDigits() {
    assertEquals("1500m", GrpcStatuses.timeout(Duration.ofMillis(1500)));
    assertEquals("600000m", GrpcStatuses.timeout(Duration.ofMinutes(10)));
    assertEquals("99999999S", GrpcStatuses.timeout(Duration.ofDays(5000)));
  }
}
