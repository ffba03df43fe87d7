package dev.csisupervisor.client;

import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gRPC channel of one {@link GrpcCsiClient}: one live channel to the plugin socket (Netty epoll on the
 * shared event loop), replaced only after a failed connection attempt, and the watch on its connectivity
 * that tells listeners when an established connection is lost.
 *
 * <p>Thread-safe. The current channel is read without a lock; it is replaced, and replaced channels are
 * tracked, under {@code lock}. Connectivity callbacks, and so the connection-lost listeners, run on whichever
 * thread gRPC changes the channel's state on (the channel has a direct executor): they must not block.
 */
final class PluginChannel {
  private static final Logger log = LoggerFactory.getLogger(PluginChannel.class);

  /** How long close() lets calls in flight finish before cancelling them. */
  private static final long CLOSE_GRACE_MILLIS = 200;
  private static final long CLOSE_FORCED_MILLIS = 1000;

  private enum State { RUNNING, CLOSED }

  private final Path socket;
  private final int maxInboundMessageBytes;
  private final AtomicReference<State> state = new AtomicReference<>(State.RUNNING);

  private final Object lock = new Object();
  /** The channel new calls use. Read without the lock; replaced under it. */
  private volatile ManagedChannel channel;
  /** Replaced channels that may still have calls running out their deadline; guarded by lock. */
  private final List<ManagedChannel> retired = new ArrayList<>();

  /** Told when an established connection is lost; see {@link #onConnectionLost}. */
  private final List<Runnable> lostListeners = new CopyOnWriteArrayList<>();

  PluginChannel(Path socket, int maxInboundMessageBytes) {
    this.socket = socket;
    this.maxInboundMessageBytes = maxInboundMessageBytes;
    this.channel = newChannel();
  }

  private ManagedChannel newChannel() {
    ManagedChannel ch = buildChannel();
    watchConnectivity(ch, ConnectivityState.IDLE);
    return ch;
  }

  /**
   * Follows {@code ch}'s connectivity for its whole life: leaving READY for anything but SHUTDOWN (ours) means
   * the connection was lost. With no idle timeout set, gRPC's 30-minute default keeps a probed channel READY,
   * so leaving READY never means "idle".
   */
  private void watchConnectivity(ManagedChannel ch, ConnectivityState seen) {
    ConnectivityState now = ch.getState(false);
    if (now == ConnectivityState.SHUTDOWN) {
      return;
    }
    if (seen == ConnectivityState.READY && now != ConnectivityState.READY && ch == channel
        && state.get() == State.RUNNING) {
      for (Runnable listener : lostListeners) {
        try {
          listener.run();
        } catch (RuntimeException e) {
          log.warn("a connection-lost listener of {} threw", socket, e);
        }
      }
    }
    ch.notifyWhenStateChanged(now, () -> watchConnectivity(ch, now));
  }

  /** See {@link CsiClient#onConnectionLost}. */
  void onConnectionLost(Runnable listener) {
    lostListeners.add(Objects.requireNonNull(listener, "listener"));
  }

  private ManagedChannel buildChannel() {
    return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollDomainSocketChannel.class)
        .eventLoopGroup(SharedEventLoop.group())
        .usePlaintext()
        // The default authority would be the socket path; plugins expect a host name.
        .overrideAuthority("localhost")
        .maxInboundMessageSize(maxInboundMessageBytes)
        // gRPC sets SO_KEEPALIVE, which unix sockets do not have (Netty warns on every connect).
        .withOption(ChannelOption.SO_KEEPALIVE, null)
        // A probe that fails is the caller's to retry, on its own schedule.
        .disableRetry()
        // Callbacks run on the shared I/O threads: completing a future is all they do, and
        // gRPC's default cached pool would otherwise grow a thread per concurrent call
        // (1000 supervised plugins probing at once means hundreds of threads).
        .directExecutor()
        .build();
  }

  /**
   * The channel for a new call. While connected, just the current channel. Otherwise, Step 1:
   * stat the path, so a missing path, a non-socket or a permission problem is reported precisely
   * without connecting; Step 2: if the channel's last connection attempt failed, replace it.
   */
  ManagedChannel forCall(String method) throws CsiException {
    ManagedChannel ch = channel;
    if (state.get() == State.CLOSED) {
      throw new CallCancelledException(socket, method, "the client is closed");
    }
    ConnectivityState connectivity = ch.getState(false);
    if (connectivity == ConnectivityState.READY) {
      return ch;
    }
    SocketInspector.inspect(socket);
    if (connectivity == ConnectivityState.TRANSIENT_FAILURE || connectivity == ConnectivityState.SHUTDOWN) {
      ch = retire(ch);
    }
    return ch;
  }

  /**
   * Replaces {@code failed} with a fresh channel unless that already happened; returns the channel
   * to use now. The old one is shut down gracefully: calls still waiting on it run out their
   * own deadlines, nothing new starts on it.
   */
  ManagedChannel retire(ManagedChannel failed) {
    synchronized (lock) {
      if (channel != failed || state.get() == State.CLOSED) {
        return channel;
      }
      ManagedChannel fresh = newChannel();
      channel = fresh;
      failed.shutdown();
      retired.removeIf(ManagedChannel::isTerminated);
      if (!failed.isTerminated()) {
        retired.add(failed);
      }
      log.debug("replaced the channel to {} after a failed connection attempt", socket);
      return fresh;
    }
  }

  boolean isClosed() {
    return state.get() == State.CLOSED;
  }

  /**
   * Shuts every channel down like {@link ManagedChannel}: {@code shutdown}, a short grace for calls in
   * flight, then {@code shutdownNow}. Idempotent.
   *
   * @return false if it was already closed
   */
  boolean close() {
    if (!state.compareAndSet(State.RUNNING, State.CLOSED)) {
      return false;
    }
    List<ManagedChannel> channels;
    synchronized (lock) {
      channels = new ArrayList<>(retired);
      channels.add(channel);
      retired.clear();
    }
    channels.forEach(ManagedChannel::shutdown);
    try {
      if (!awaitTermination(channels, CLOSE_GRACE_MILLIS)) {
        channels.forEach(ManagedChannel::shutdownNow);
        if (!awaitTermination(channels, CLOSE_FORCED_MILLIS)) {
          log.warn("channel to {} did not terminate within {} ms of shutdownNow", socket, CLOSE_FORCED_MILLIS);
        }
      }
    } catch (InterruptedException e) {
      channels.forEach(ManagedChannel::shutdownNow);
      Thread.currentThread().interrupt();
    }
    return true;
  }

  private static boolean awaitTermination(List<ManagedChannel> channels, long millis)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    for (ManagedChannel ch : channels) {
      long left = deadline - System.nanoTime();
      if (!ch.awaitTermination(Math.max(0, left), TimeUnit.NANOSECONDS)) {
        return false;
      }
    }
    return true;
  }

  /** The channel new calls use now. */
  ManagedChannel current() {
    return channel;
  }
}
