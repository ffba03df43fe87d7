package dev.csisupervisor.cli;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;

/**
 * HTTP/2 frames over one unix-socket connection, for {@link GrpcCall}: frames out through a buffer that
 * {@link #flush} sends, frames in one at a time with their size checked, every wait bounded by a deadline.
 *
 * <p>It fails only with a {@link StatusRuntimeException}: {@code UNAVAILABLE} (with the I/O error as its cause)
 * when the connection breaks or ends, {@code DEADLINE_EXCEEDED} when a wait outlasts its deadline (with the
 * {@code waiting} text the caller gave), {@code CANCELLED} once {@link #close} was called, {@code INTERNAL} for a
 * frame over the size allowed.
 *
 * <p>Used by one thread at a time, except {@link #close}, which any thread may call while another waits here: the
 * waiting thread then ends with {@code CANCELLED}.
 */
final class Http2Socket implements Closeable {
  /** Frame types (RFC 9113 section 6). */
  static final int DATA = 0;
  static final int HEADERS = 1;
  static final int PRIORITY = 2;
  static final int RST_STREAM = 3;
  static final int SETTINGS = 4;
  static final int PUSH_PROMISE = 5;
  static final int PING = 6;
  static final int GOAWAY = 7;
  static final int WINDOW_UPDATE = 8;
  static final int CONTINUATION = 9;
  /** What a client sends first, before its SETTINGS (RFC 9113 section 3.4). */
  private static final byte[] PREFACE =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  /** Our SETTINGS_MAX_FRAME_SIZE: HTTP/2's default, which this client never raises. */
  static final int MAX_FRAME = 16_384;

  static final int END_STREAM = 0x1;
  static final int ACK = 0x1;
  static final int END_HEADERS = 0x4;
  static final int PADDED = 0x8;
  static final int PRIORITY_FLAG = 0x20;

  /**
   * A frame as read, whose size and stream HTTP/2 allows for its type ({@link #check}): what it means to the
   * call is the call's to judge.
   */
  record Frame(int type, int flags, int stream, byte[] payload) {
    boolean has(int flag) {
      return (flags & flag) != 0;
    }

    /** The payload of a DATA or HEADERS frame without its padding (and a HEADERS frame's priority fields). */
    byte[] content() {
      int from = has(PADDED) ? 1 : 0;
      int to = payload.length - (has(PADDED) ? payload[0] & 0xff : 0);
      if (type == HEADERS && has(PRIORITY_FLAG)) {
        from += 5;
      }
      return java.util.Arrays.copyOfRange(payload, from, to);
    }
  }

  private final SocketChannel ch;
  private final Selector selector;
  private final SelectionKey key;
  private volatile boolean closed;
  private ByteBuffer in = ByteBuffer.allocate(32 * 1024).flip();
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();

  private Http2Socket(SocketChannel ch, Selector selector) throws IOException {
    this.ch = ch;
    this.selector = selector;
    this.key = ch.register(selector, SelectionKey.OP_READ);
    out.writeBytes(PREFACE);
  }

  /**
   * A connection to the server at {@code socket}, the client's preface queued, made by {@code end}
   * ({@link System#nanoTime}).
   *
   * @throws StatusRuntimeException {@code UNAVAILABLE} if it cannot be reached, {@code DEADLINE_EXCEEDED} if the
   *     server's backlog stayed full until {@code end} (an agent that accepts no connection)
   */
  static Http2Socket connect(Path socket, long end) {
    // A unix socket's connect completes at once while the server's backlog has room; when it is full a blocking
    // connect would wait for the server without a deadline, so a non-blocking one is tried again (EAGAIN: the JDK
    // closes a channel whose connect failed, so a new channel each time) until the deadline.
    long pause = 1_000_000L;
    while (true) {
      SocketChannel ch = null;
      Selector selector = null;
      try {
        ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.configureBlocking(false);
        if (connected(ch, socket)) {
          selector = Selector.open();
          return new Http2Socket(ch, selector);
        }
      } catch (IOException e) {
        closeQuietly(selector, ch);
        throw unavailable(e);
      } catch (RuntimeException e) {
        closeQuietly(selector, ch);
        throw e;
      }
      closeQuietly(ch);
      if (end - System.nanoTime() <= 0) {
        throw Status.DEADLINE_EXCEEDED.withDescription("the agent did not accept the connection before the"
            + " deadline (its backlog is full)").asRuntimeException();
      }
      java.util.concurrent.locks.LockSupport.parkNanos(Math.min(pause, Math.max(1, end - System.nanoTime())));
      pause = Math.min(2 * pause, 50_000_000L);
    }
  }

  /**
   * Connects {@code ch} (waiting for a pending connect, which a unix socket does not make); false if the server's
   * backlog is full now (EAGAIN, told by its message: where the JDK words it otherwise, the call fails UNAVAILABLE
   * at once instead of trying again).
   */
  private static boolean connected(SocketChannel ch, Path socket) throws IOException {
    try {
      if (ch.connect(UnixDomainSocketAddress.of(socket))) {
        return true;
      }
    } catch (IOException e) {
      if ("Resource temporarily unavailable".equals(e.getMessage())) {
        return false;
      }
      throw e;
    }
    ch.configureBlocking(true); // pending: not seen on Linux for unix sockets; finish it as a blocking connect would
    ch.finishConnect();
    ch.configureBlocking(false);
    return true;
  }

  /** Appends a frame to what {@link #flush} sends. */
  void frame(int type, int flags, int stream, byte[] payload) {
    out.write(payload.length >>> 16);
    out.write(payload.length >>> 8);
    out.write(payload.length);
    out.write(type);
    out.write(flags);
    out.writeBytes(int32(stream));
    out.writeBytes(payload);
  }

  /** Sends the frames appended so far, by {@code end} ({@link System#nanoTime}; {@link Long#MAX_VALUE}: never). */
  void flush(long end, String waiting) {
    if (out.size() == 0) {
      return;
    }
    ByteBuffer b = ByteBuffer.wrap(out.toByteArray());
    out.reset();
    try {
      while (b.hasRemaining()) {
        if (ch.write(b) == 0) {
          await(SelectionKey.OP_WRITE, end, waiting);
        }
      }
    } catch (IOException | ClosedSelectorException | CancelledKeyException e) {
      throw failed(e);
    }
  }

  /** The next frame, read by {@code end}. */
  Frame read(long end, String waiting) {
    try {
      fill(9, end, waiting);
      int length = ((in.get() & 0xff) << 16) | ((in.get() & 0xff) << 8) | (in.get() & 0xff);
      int type = in.get() & 0xff;
      int flags = in.get() & 0xff;
      int stream = in.getInt() & 0x7fffffff;
      if (length > MAX_FRAME) {
        throw GrpcStatuses.protocol("FRAME_SIZE_ERROR: a frame of " + length + " bytes, over the " + MAX_FRAME
            + " allowed");
      }
      fill(length, end, waiting);
      byte[] payload = new byte[length];
      in.get(payload);
      return check(new Frame(type, flags, stream, payload));
    } catch (IOException | ClosedSelectorException | CancelledKeyException e) {
      throw failed(e);
    }
  }

  /**
   * {@code f} if HTTP/2 allows its size and stream for its type (RFC 9113 section 6), else the connection error
   * it is, as a status.
   */
  static Frame check(Frame f) {
    int length = f.payload().length;
    boolean onConnection = f.stream() == 0;
    String name = switch (f.type()) {
      case DATA -> "DATA";
      case HEADERS -> "HEADERS";
      case PRIORITY -> "PRIORITY";
      case RST_STREAM -> "RST_STREAM";
      case SETTINGS -> "SETTINGS";
      case PUSH_PROMISE -> "PUSH_PROMISE";
      case PING -> "PING";
      case GOAWAY -> "GOAWAY";
      case WINDOW_UPDATE -> "WINDOW_UPDATE";
      case CONTINUATION -> "CONTINUATION";
      default -> null; // an extension's type: ignored, whatever it holds
    };
    if (name == null) {
      return f;
    }
    boolean streamFrame = f.type() != SETTINGS && f.type() != PING && f.type() != GOAWAY
        && f.type() != WINDOW_UPDATE;
    if (streamFrame && onConnection || !streamFrame && f.type() != WINDOW_UPDATE && !onConnection) {
      throw GrpcStatuses.protocol("PROTOCOL_ERROR: " + name + " on stream " + f.stream());
    }
    int expected = switch (f.type()) {
      case PRIORITY -> 5;
      case RST_STREAM, WINDOW_UPDATE -> 4;
      case PING -> 8;
      default -> -1;
    };
    if (expected >= 0 && length != expected || f.type() == GOAWAY && length < 8
        || f.type() == SETTINGS && (f.has(ACK) ? length != 0 : length % 6 != 0)) {
      throw GrpcStatuses.protocol("FRAME_SIZE_ERROR: " + name + " of " + length + " bytes");
    }
    if ((f.type() == DATA || f.type() == HEADERS) && f.has(PADDED)) {
      int before = f.type() == HEADERS && f.has(PRIORITY_FLAG) ? 5 : 0;
      if (length < 1 || 1 + before + (f.payload()[0] & 0xff) > length) {
        throw GrpcStatuses.protocol("PROTOCOL_ERROR: " + name + " with more padding than payload");
      }
    } else if (f.type() == HEADERS && f.has(PRIORITY_FLAG) && length < 5) {
      throw GrpcStatuses.protocol("FRAME_SIZE_ERROR: HEADERS with PRIORITY of " + length + " bytes");
    }
    if (f.type() == WINDOW_UPDATE && (readInt(f.payload(), 0) & 0x7fffffff) == 0) {
      throw GrpcStatuses.protocol("PROTOCOL_ERROR: WINDOW_UPDATE of 0");
    }
    return f;
  }

  /** Closes the connection; a thread waiting in {@link #read} or {@link #flush} ends with CANCELLED. Idempotent. */
  @Override
  public void close() {
    closed = true;
    closeQuietly(selector, ch); // closing the selector wakes a thread in select() first
  }

  /** An I/O failure as a status: CANCELLED if it came from {@link #close}. */
  private StatusRuntimeException failed(Exception e) {
    if (closed) {
      return Status.CANCELLED.withDescription("the call was closed").asRuntimeException();
    }
    if (e instanceof IOException io) {
      return unavailable(io);
    }
    // The selector or its key closed under us with no close() of ours: cannot happen, but still a status.
    return Status.INTERNAL.withDescription("the connection's selector failed").withCause(e).asRuntimeException();
  }

  /** Until {@code n} bytes are buffered. */
  private void fill(int n, long end, String waiting) throws IOException {
    if (in.remaining() >= n) {
      return;
    }
    in.compact();
    if (in.capacity() < n) {
      ByteBuffer bigger = ByteBuffer.allocate(Math.max(n, 2 * in.capacity()));
      in.flip();
      bigger.put(in);
      in = bigger;
    }
    while (in.position() < n) {
      int r = ch.read(in);
      if (r < 0) {
        in.flip();
        throw Status.UNAVAILABLE.withDescription("the agent closed the connection before answering")
            .asRuntimeException();
      }
      if (r == 0) {
        await(SelectionKey.OP_READ, end, waiting);
      }
    }
    in.flip();
  }

  private void await(int op, long end, String waiting) throws IOException {
    if (closed) {
      throw new java.nio.channels.AsynchronousCloseException();
    }
    key.interestOps(op);
    if (end == Long.MAX_VALUE) {
      selector.select();
    } else {
      long left = end - System.nanoTime();
      if (left <= 0 || selector.select(Math.max(1, left / 1_000_000)) == 0 && end - System.nanoTime() <= 0) {
        throw Status.DEADLINE_EXCEEDED.withDescription(waiting).asRuntimeException();
      }
    }
    selector.selectedKeys().clear();
  }

  private static void closeQuietly(Closeable... all) {
    for (Closeable c : all) {
      if (c != null) {
        try {
          c.close();
        } catch (IOException e) {
          // nothing to do: it is closed either way
        }
      }
    }
  }

  static StatusRuntimeException unavailable(IOException e) {
    return Status.UNAVAILABLE.withDescription("io exception").withCause(e).asRuntimeException();
  }

  static int readInt(byte[] b, int at) {
    return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
  }

  static byte[] int32(int v) {
    return new byte[] {(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
  }
}
