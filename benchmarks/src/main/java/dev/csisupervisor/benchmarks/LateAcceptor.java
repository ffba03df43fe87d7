package dev.csisupervisor.benchmarks;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A plugin socket that exists and listens before anything accepts on it — what a plugin that
 * calls {@code listen()} early and starts serving later looks like: clients connect (the kernel
 * queues them in the backlog) and their first call waits. {@link #startAccepting()} then accepts
 * and relays each connection, byte for byte, to the real (mock) plugin at {@code target}. Used by
 * {@link TimeToRegister}; the relay adds one local hop (tens of microseconds). Threads: one
 * acceptor plus two pumps per connection, all daemon, all ended by {@link #close()}.
 */
final class LateAcceptor implements AutoCloseable {
  private final ServerSocketChannel server;
  private final Path target;
  private final List<SocketChannel> open = new CopyOnWriteArrayList<>();
  private volatile boolean closed;

  private LateAcceptor(ServerSocketChannel server, Path target) {
    this.server = server;
    this.target = target;
  }

  /** Binds and listens on {@code socket} (the file appears now); accepts nothing yet. */
  static LateAcceptor bind(Path socket, Path target) throws IOException {
    ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    s.bind(UnixDomainSocketAddress.of(socket), 64);
    return new LateAcceptor(s, target);
  }

  /** From now on, accept and relay every queued and new connection. */
  void startAccepting() {
    Thread t = new Thread(this::acceptLoop, "bench-late-acceptor");
    t.setDaemon(true);
    t.start();
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        SocketChannel client = server.accept();
        SocketChannel upstream = SocketChannel.open(UnixDomainSocketAddress.of(target));
        open.add(client);
        open.add(upstream);
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void pump(SocketChannel from, SocketChannel to) {
    Thread t = new Thread(() -> {
      ByteBuffer buf = ByteBuffer.allocateDirect(16 * 1024);
      try {
        while (from.read(buf) >= 0) {
          buf.flip();
          while (buf.hasRemaining()) {
            to.write(buf);
          }
          buf.clear();
        }
      } catch (IOException e) {
        // the other side went away: close both below
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "bench-late-pump");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() {
    closed = true;
    closeQuietly(server);
    open.forEach(LateAcceptor::closeQuietly);
  }

  private static void closeQuietly(java.io.Closeable c) {
    try {
      c.close();
    } catch (IOException e) {
      // nothing to do
    }
  }
}
