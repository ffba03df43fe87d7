package dev.csisupervisor.mockplugin;

import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelFactory;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Makes the plugin's listening channel and remembers every connection it accepts, so that a crash
 * can drop them the way a dying process does.
 *
 * <p>Why: {@code Server.shutdownNow()} says goodbye in HTTP/2 (RST_STREAM, GOAWAY) before closing,
 * and whether a client then sees {@code CANCELLED} or {@code UNAVAILABLE} depends on which frame
 * it reads first. A killed process sends nothing: its sockets just close. Closing each connection
 * through {@code unsafe().close()} skips the pipeline's outbound handlers (so no HTTP/2 frame is
 * written) and gives clients exactly that: end of stream, {@code UNAVAILABLE}, every time.
 *
 * <p>Thread-safe. The tracking handler runs on the listening channel's event loop.
 */
final class ConnectionKiller implements ChannelFactory<ServerChannel> {

  private final Set<Channel> connections = ConcurrentHashMap.newKeySet();
  private volatile Channel listener;

  @Override
  public ServerChannel newChannel() {
    EpollServerDomainSocketChannel channel = new EpollServerDomainSocketChannel();
    // Added before the bootstrap's own handlers, so it sees each accepted child channel (the
    // message a server channel reads) before the acceptor hands it to gRPC.
    channel.pipeline().addLast("mock-csi-connection-tracker", new ChannelInboundHandlerAdapter() {
      @Override
      public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof Channel child) {
          connections.add(child);
          child.closeFuture().addListener(f -> connections.remove(child));
        }
        ctx.fireChannelRead(msg);
      }
    });
    listener = channel;
    return channel;
  }

  /** Open connections right now. */
  int connectionCount() {
    return connections.size();
  }

  /**
   * Stops accepting, then closes every open connection at the socket level with no HTTP/2
   * goodbye, waiting up to {@code timeout} for them to close.
   */
  void killAll(Duration timeout) {
    Channel server = listener;
    if (server != null && server.isOpen()) {
      // Until gRPC closes the listener, pending connects stay unaccepted in the backlog.
      server.eventLoop().submit(() -> server.config().setAutoRead(false)).awaitUninterruptibly(timeout.toMillis());
    }
    List<Channel> open = List.copyOf(connections);
    for (Channel connection : open) {
      connection.eventLoop().execute(() -> connection.unsafe().close(connection.unsafe().voidPromise()));
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    for (Channel connection : open) {
      long left = Math.max(0, deadline - System.nanoTime());
      connection.closeFuture().awaitUninterruptibly(Duration.ofNanos(left).toMillis());
    }
  }
}
