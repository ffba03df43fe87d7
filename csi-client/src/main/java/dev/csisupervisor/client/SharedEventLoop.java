package dev.csisupervisor.client;

import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;

/**
 * The Netty epoll event loop all clients share, so that a thousand plugins cost two I/O threads,
 * not a thousand. Created on first use, daemon threads, never shut down (it lives as long as the
 * JVM; idle epoll threads cost nothing).
 */
final class SharedEventLoop {
  private SharedEventLoop() {}

  /** I/O only (framing a few hundred bytes per probe): two threads carry thousands of plugins. */
  static final int THREADS = Math.max(1, Math.min(2, Runtime.getRuntime().availableProcessors()));

  /**
   * The shared group.
   *
   * @throws IllegalStateException if epoll is not available on this platform
   */
  static EventLoopGroup group() {
    if (!Epoll.isAvailable()) {
      throw new IllegalStateException(
          "CSI client needs Netty's native epoll transport (Linux) for unix domain sockets, but it is"
              + " unavailable: " + Epoll.unavailabilityCause());
    }
    return Holder.GROUP;
  }

  private static final class Holder {
    static final EventLoopGroup GROUP =
        new MultiThreadIoEventLoopGroup(
            THREADS, new DefaultThreadFactory("csi-client-io", true), EpollIoHandler.newFactory());
  }
}
