package dev.csisupervisor.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A scripted HTTP/2 server on a real unix socket, speaking raw bytes: for each connection, in turn, it runs the
 * script, which reads the client's frames and writes whatever bytes it likes, well-formed or not; then it ends its
 * side (shutdown of output) and reads until the client closes, so the client sees the script's bytes and then the
 * end of the connection, never a reset. For {@link GrpcCall}'s tests of the frames a broken agent may send.
 */
final class FakeHttp2Server implements AutoCloseable {
  /** What the server does on one connection; {@code n} counts the connections from 0. */
  interface Script {
    void run(Exchange ex, int n) throws IOException, InterruptedException;
  }

  /** A frame as the client wrote it. */
  record Frame(int type, int flags, int stream, byte[] payload) {}

  private final Path socket;
  private final ServerSocketChannel server;
  private final Thread thread;
  /** A permit each time a script has read a client's whole request. */
  private final Semaphore requestRead = new Semaphore(0);

  FakeHttp2Server(Path socket, Script script) throws IOException {
    this.socket = socket;
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
    thread = new Thread(() -> serve(script), "fake-http2-server");
    thread.setDaemon(true);
    thread.start();
  }

  Path socket() {
    return socket;
  }

  /** Waits until a script has read a client's whole request (then the client waits for the answer). */
  boolean awaitRequest(long timeout, TimeUnit unit) throws InterruptedException {
    return requestRead.tryAcquire(timeout, unit);
  }

  private void serve(Script script) {
    for (int n = 0; ; n++) {
      try (SocketChannel ch = server.accept()) {
        Exchange ex = new Exchange(ch);
        try {
          script.run(ex, n);
          ch.shutdownOutput();
          ex.drain();
        } catch (IOException e) {
          // the client went away first: the next connection
        }
      } catch (IOException e) {
        return; // closed
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  @Override
  public void close() throws Exception {
    server.close();
    thread.interrupt();
    thread.join(TimeUnit.SECONDS.toMillis(5));
    Files.deleteIfExists(socket);
  }

  /** One connection's two directions, for a script. */
  final class Exchange {
    private final SocketChannel ch;
    private final ByteBuffer in = ByteBuffer.allocate(1 << 20).flip();

    private Exchange(SocketChannel ch) {
      this.ch = ch;
    }

    /** Reads the client's preface and frames until its request ended (DATA with END_STREAM). */
    List<Frame> request() throws IOException {
      List<Frame> frames = readUntil(f -> f.type() == Http2Socket.DATA && (f.flags() & Http2Socket.END_STREAM) != 0);
      requestRead.release();
      return frames;
    }

    /** Reads the preface (once) and then frames, up to the first that {@code last} accepts. */
    List<Frame> readUntil(Predicate<Frame> last) throws IOException {
      List<Frame> frames = new java.util.ArrayList<>();
      if (!prefaceRead) {
        fill(24);
        in.position(in.position() + 24);
        prefaceRead = true;
      }
      while (true) {
        fill(9);
        int length = ((in.get() & 0xff) << 16) | ((in.get() & 0xff) << 8) | (in.get() & 0xff);
        int type = in.get() & 0xff;
        int flags = in.get() & 0xff;
        int stream = in.getInt() & 0x7fffffff;
        fill(length);
        byte[] payload = new byte[length];
        in.get(payload);
        Frame f = new Frame(type, flags, stream, payload);
        frames.add(f);
        if (last.test(f)) {
          return frames;
        }
      }
    }

    private boolean prefaceRead;

    private void fill(int n) throws IOException {
      if (in.remaining() >= n) {
        return;
      }
      in.compact();
      while (in.position() < n) {
        if (ch.read(in) < 0) {
          throw new IOException("the client closed the connection");
        }
      }
      in.flip();
    }

    /** Writes {@code bytes} as they are. */
    void write(byte[] bytes) throws IOException {
      ByteBuffer b = ByteBuffer.wrap(bytes);
      while (b.hasRemaining()) {
        ch.write(b);
      }
    }

    void frame(int type, int flags, int stream, byte[] payload) throws IOException {
      write(FakeHttp2Server.frame(type, flags, stream, payload, payload.length));
    }

    /** The answer's headers: HTTP 200, gRPC's content type. */
    void okHeaders() throws IOException {
      frame(Http2Socket.HEADERS, Http2Socket.END_HEADERS, 1, block(":status", "200",
          "content-type", "application/grpc"));
    }

    /** One gRPC message in one DATA frame. */
    void message(byte[] m) throws IOException {
      frame(Http2Socket.DATA, 0, 1, grpcMessage(m));
    }

    /** Trailers with {@code code} and, if not null, a message; they end the stream. */
    void trailers(int code, String message) throws IOException {
      byte[] block = message == null ? block("grpc-status", "" + code)
          : block("grpc-status", "" + code, "grpc-message", message);
      frame(Http2Socket.HEADERS, Http2Socket.END_HEADERS | Http2Socket.END_STREAM, 1, block);
    }

    /** Reads until the client closes the connection. */
    void drain() throws IOException {
      ByteBuffer b = ByteBuffer.allocate(64 * 1024);
      while (ch.read(b) >= 0) {
        b.clear();
      }
    }
  }

  /** A frame's bytes with {@code declared} as its length (which may differ from the payload's: a lie). */
  static byte[] frame(int type, int flags, int stream, byte[] payload, int declared) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(declared >>> 16);
    out.write(declared >>> 8);
    out.write(declared);
    out.write(type);
    out.write(flags);
    out.writeBytes(Http2Socket.int32(stream));
    out.writeBytes(payload);
    return out.toByteArray();
  }

  /** A header block of the names and values given in turn. */
  static byte[] block(String... namesAndValues) {
    List<Hpack.Field> fields = new java.util.ArrayList<>();
    for (int i = 0; i < namesAndValues.length; i += 2) {
      fields.add(new Hpack.Field(namesAndValues[i], namesAndValues[i + 1]));
    }
    return Hpack.encode(fields);
  }

  /** {@code m} with gRPC's prefix: not compressed, its length. */
  static byte[] grpcMessage(byte[] m) {
    byte[] b = new byte[5 + m.length];
    System.arraycopy(Http2Socket.int32(m.length), 0, b, 1, 4);
    System.arraycopy(m, 0, b, 5, m.length);
    return b;
  }
}
