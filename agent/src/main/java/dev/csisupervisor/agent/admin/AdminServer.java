package dev.csisupervisor.agent.admin;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.cli.AdminClient;
import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API's gRPC server on a unix socket (epoll), mode 0600: only the agent's user may talk
 * to it. A socket file left behind by a dead agent is replaced; a live one (another agent answers
 * there) is an error.
 *
 * <p>Thread-safe; {@link #close()} is idempotent.
 */
public final class AdminServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(AdminServer.class);

  private final Path socket;
  private final Server server;
  private final EventLoopGroup group;
  private final AtomicBoolean closed = new AtomicBoolean();

  private AdminServer(Path socket, Server server, EventLoopGroup group) {
    this.socket = socket;
    this.server = server;
    this.group = group;
  }

  /**
   * Binds {@code socket} and serves {@code services}.
   *
   * @throws IOException naming the socket: another agent answers there, a non-socket file is in
   *     the way, or binding failed
   */
  public static AdminServer start(Path socket, BindableService... services) throws IOException {
    requireNonNull(socket, "socket");
    requireNonNull(services, "services");
    if (!Epoll.isAvailable()) {
      throw new IOException("epoll transport is unavailable, cannot serve unix socket " + socket,
          Epoll.unavailabilityCause());
    }
    prepare(socket);
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("csi-agent-admin", true), EpollIoHandler.newFactory());
    Server server;
    try {
      NettyServerBuilder builder = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
          .channelType(EpollServerDomainSocketChannel.class)
          .bossEventLoopGroup(group)
          .workerEventLoopGroup(group)
          // Unix sockets have no SO_KEEPALIVE; Netty would warn on every connection.
          .withChildOption(ChannelOption.SO_KEEPALIVE, null);
      for (BindableService service : services) {
        builder.addService(requireNonNull(service, "service"));
      }
      server = builder.build().start();
    } catch (IOException | RuntimeException e) {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      throw new IOException("cannot serve the admin API on " + socket + ": " + e.getMessage(), e);
    }
    try {
      Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
    } catch (IOException e) {
      server.shutdownNow();
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      throw new IOException("cannot restrict the admin socket " + socket + " to mode 0600: "
          + e.getMessage(), e);
    }
    log.info("admin API listening on {}", socket);
    return new AdminServer(socket, server, group);
  }

  private static void prepare(Path socket) throws IOException {
    Files.createDirectories(socket.toAbsolutePath().getParent());
    if (!Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    if (Files.isDirectory(socket, LinkOption.NOFOLLOW_LINKS)
        || Files.isRegularFile(socket, LinkOption.NOFOLLOW_LINKS)
        || Files.isSymbolicLink(socket)) {
      throw new IOException("cannot serve the admin API on " + socket
          + ": a file that is not a socket is in the way");
    }
    if (AdminClient.answers(socket)) {
      throw new IOException("another csi-agent is already serving the admin API on " + socket);
    }
    Files.delete(socket);
    log.info("removed stale admin socket {} (nobody was listening)", socket);
  }

  public Path socket() {
    return socket;
  }

  /** Stops accepting calls, cancels the open ones after a short grace, removes the socket. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return; // closed already, or being closed by another thread
    }
    server.shutdown();
    try {
      if (!server.awaitTermination(1, TimeUnit.SECONDS)) {
        server.shutdownNow();
        server.awaitTermination(2, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    try {
      Files.deleteIfExists(socket);
    } catch (IOException e) {
      log.warn("cannot remove admin socket {}: {}", socket, e.toString());
    }
  }
}
