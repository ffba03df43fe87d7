package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.NodeGrpc;
import io.grpc.Server;
import io.grpc.ServerInterceptor;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gRPC server of one started {@link MockCsiPlugin}: bound on its unix socket, serving Identity
 * and the services its {@link MockMode} asks for from a {@link ServiceTable}, on an epoll event
 * loop group it may own; and the two ways it ends: a graceful {@link #stop()} that removes the
 * socket file, or a {@link #crash()} that cuts every connection and leaves the socket file behind.
 *
 * <p>Not thread-safe: the plugin calls it under its lifecycle lock, and each way of ending at most
 * once. A group the server does not own (one shared by many plugins) is never shut down.
 */
final class PluginServer {

  private static final Logger log = LoggerFactory.getLogger(PluginServer.class);

  /** How long a graceful stop waits for in-flight calls before cutting them off. */
  private static final Duration STOP_GRACE = Duration.ofSeconds(5);

  private final Path socket;
  private final Server server;
  private final EventLoopGroup ownedGroup; // null: the group is shared
  private final ConnectionKiller connections;

  private PluginServer(Path socket, Server server, EventLoopGroup ownedGroup, ConnectionKiller connections) {
    this.socket = socket;
    this.server = server;
    this.ownedGroup = ownedGroup;
    this.connections = connections;
  }

  /**
   * A one-thread epoll event loop group of the plugin's own, named after its socket. Daemon
   * threads: a test that forgets to close a plugin must not keep its JVM alive.
   */
  static EventLoopGroup newOwnedGroup(Path socket) {
    return new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("mock-csi-" + socket.getFileName(), true),
        EpollIoHandler.newFactory());
  }

  /**
   * Binds {@code socket} (prepared: nothing is there) and serves {@code services} on {@code group}:
   * Identity always, Controller and Node as {@code mode} says; every call meets {@code callers} first.
   *
   * @param ownsGroup whether the server shuts {@code group} down when it ends (and when binding fails)
   * @throws IOException naming the socket if binding failed
   */
  static PluginServer start(Path socket, MockMode mode, ServiceTable services, ServerInterceptor callers,
      EventLoopGroup group, boolean ownsGroup) throws IOException {
    ConnectionKiller killer = new ConnectionKiller();
    NettyServerBuilder builder = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelFactory(killer)
        .bossEventLoopGroup(group)
        .workerEventLoopGroup(group)
        // gRPC sets SO_KEEPALIVE on accepted channels; unix sockets have no such option
        // and Netty would warn on every connection.
        .withChildOption(ChannelOption.SO_KEEPALIVE, null)
        .directExecutor()
        .intercept(callers)
        .addService(services.service(IdentityGrpc.getServiceDescriptor()));
    if (mode.servesController()) {
      builder.addService(services.service(ControllerGrpc.getServiceDescriptor()));
    }
    if (mode.servesNode()) {
      builder.addService(services.service(NodeGrpc.getServiceDescriptor()));
    }
    try {
      Server server = builder.build().start();
      return new PluginServer(socket, server, ownsGroup ? group : null, killer);
    } catch (IOException | RuntimeException e) {
      if (ownsGroup) {
        shutdownGroup(group);
      }
      throw new IOException("mock CSI plugin cannot bind unix socket " + socket + ": " + e.getMessage(), e);
    }
  }

  /**
   * Graceful: lets in-flight calls finish (up to 5 s, then cuts them off), shuts the owned group
   * down and removes the socket file. Hung calls should be answered first, or they hold the
   * shutdown for the whole grace period.
   */
  void stop() {
    server.shutdown();
    try {
      if (!server.awaitTermination(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
        log.warn("mock CSI plugin on {}: calls still running after {}, cutting them off", socket, STOP_GRACE);
        server.shutdownNow();
        server.awaitTermination(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
    shutdownGroup(ownedGroup);
    try {
      SocketFiles.removeSocket(socket);
    } catch (IOException e) {
      log.warn("mock CSI plugin could not remove its socket {}: {}", socket, e.toString());
    }
  }

  /**
   * Abrupt, as if the process were killed: every connection closes with no HTTP/2 goodbye, the
   * server is shut down at once, and the socket file stays with nobody accepting on it.
   */
  void crash() {
    // Like a killed process: connections vanish without an HTTP/2 goodbye, so clients see
    // UNAVAILABLE whatever they were doing. Only then is the server object shut down.
    connections.killAll(STOP_GRACE);
    server.shutdownNow();
    try {
      server.awaitTermination(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    shutdownGroup(ownedGroup);
    try {
      SocketFiles.leaveStale(socket);
    } catch (IOException e) {
      log.warn("mock CSI plugin could not leave a stale socket at {}: {}", socket, e.toString());
    }
  }

  private static void shutdownGroup(EventLoopGroup group) {
    if (group != null) {
      group.shutdownGracefully(0, 0, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }
}
