package dev.csisupervisor.tests;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Something that is not a CSI plugin, listening on a plugin's socket path: it accepts every connection, answers
 * {@code HTTP/1.1 400 Bad Request} at once and closes it (what an HTTP/1 server says to gRPC's HTTP/2 preface).
 * One daemon thread blocked in accept; {@link #close()} closes the channel, waits for that thread and removes the
 * socket file, so the path is free again when it returns.
 */
final class NonCsiServer implements AutoCloseable {
  private static final byte[] RESPONSE = "HTTP/1.1 400 Bad Request\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

  private final Path socket;
  private final ServerSocketChannel channel;
  private final Thread acceptor;
  private final AtomicLong connections = new AtomicLong();

  private NonCsiServer(Path socket) throws IOException {
    this.socket = socket;
    this.channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    channel.bind(UnixDomainSocketAddress.of(socket));
    this.acceptor = new Thread(this::acceptLoop, "non-csi-" + socket.getFileName());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** Binds {@code socket} (which must not exist: remove a stale socket first) and starts answering. */
  static NonCsiServer start(Path socket) throws IOException {
    return new NonCsiServer(socket);
  }

  private void acceptLoop() {
    while (true) {
      try (SocketChannel c = channel.accept()) {
        connections.incrementAndGet();
        c.write(ByteBuffer.wrap(RESPONSE));
      } catch (ClosedChannelException closed) {
        return; // close() was called
      } catch (IOException e) {
        // The client went away first: nothing to answer.
        if (!channel.isOpen()) {
          return;
        }
      }
    }
  }

  /** Connections accepted so far. */
  long connections() {
    return connections.get();
  }

  Path socket() {
    return socket;
  }

  @Override
  public void close() throws IOException {
    channel.close();
    try {
      acceptor.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    Files.deleteIfExists(socket); // the JDK leaves the file of a closed unix server socket behind
  }
}
