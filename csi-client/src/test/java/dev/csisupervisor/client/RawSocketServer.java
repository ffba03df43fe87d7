package dev.csisupervisor.client;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A unix socket server that is not a gRPC server, for the "wrong peer" cases: it answers HTTP/1,
 * closes every connection at once, or accepts and stays silent. Also makes stale sockets.
 */
final class RawSocketServer implements AutoCloseable {
  enum Behaviour { HTTP1_BAD_REQUEST, CLOSE_IMMEDIATELY, SILENT }

  private final ServerSocketChannel server;
  private final List<SocketChannel> open = new CopyOnWriteArrayList<>();

  private RawSocketServer(Path socket, Behaviour behaviour) throws IOException {
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
    daemon(() -> acceptLoop(behaviour), "raw-socket-server");
  }

  static RawSocketServer start(Path socket, Behaviour behaviour) throws IOException {
    return new RawSocketServer(socket, behaviour);
  }

  /** Binds a socket at {@code socket} and closes it without unlinking: a stale socket file. */
  static void makeStaleSocket(Path socket) throws IOException {
    try (ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      channel.bind(UnixDomainSocketAddress.of(socket));
    }
  }

  private static void daemon(Runnable task, String name) {
    Thread thread = new Thread(task, name);
    thread.setDaemon(true);
    thread.start();
  }

  private void acceptLoop(Behaviour behaviour) {
    while (server.isOpen()) {
      SocketChannel client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      open.add(client);
      switch (behaviour) {
        case HTTP1_BAD_REQUEST -> daemon(() -> answerHttp1(client), "raw-socket-http1");
        case CLOSE_IMMEDIATELY -> closeQuietly(client);
        case SILENT -> { }
      }
    }
  }

  /**
   * What an HTTP/1 server (Go's net/http, say) does with the HTTP/2 preface: reads the request,
   * answers 400, half-closes and drains until the client hangs up. Closing with unread input
   * would reset the connection and could destroy the answer before the client reads it.
   */
  private static void answerHttp1(SocketChannel client) {
    try {
      client.read(ByteBuffer.allocate(1024));
      client.write(ByteBuffer.wrap(
          "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
              .getBytes(StandardCharsets.US_ASCII)));
      client.shutdownOutput();
      ByteBuffer drain = ByteBuffer.allocate(4096);
      while (client.read(drain.clear()) >= 0) {
        // discard
      }
    } catch (IOException e) {
      // the client hung up first
    } finally {
      closeQuietly(client);
    }
  }

  private static void closeQuietly(SocketChannel channel) {
    try {
      channel.close();
    } catch (IOException e) {
      // already closed
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    open.forEach(RawSocketServer::closeQuietly);
  }
}
