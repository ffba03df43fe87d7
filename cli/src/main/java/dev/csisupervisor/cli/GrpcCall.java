package dev.csisupervisor.cli;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One gRPC call over a unix socket, unary or server-streaming: a connection of its own, HTTP/2 with prior
 * knowledge (as a plaintext gRPC server expects), one stream, then closed. What a CLI command needs to ask the
 * agent one thing, in a few dozen classes of the JDK instead of a gRPC channel and Netty (some 1 500 classes
 * to load and initialise for one call, and a class-data archive twice the size: benchmarks/README.md section
 * 14).
 *
 * <p>It fails as grpc-java's channel does, with a {@link StatusRuntimeException}: the agent's status and
 * message; {@code UNAVAILABLE} with the I/O error as its cause when the socket cannot be reached or the
 * connection ends; {@code DEADLINE_EXCEEDED} when no answer came in time (the deadline is also sent as
 * {@code grpc-timeout}, so the agent stops working on it); {@code INTERNAL} when the answer breaks the protocol.
 *
 * <p>A call is used by one thread at a time; {@link #close} may come from any thread.
 */
final class GrpcCall implements AutoCloseable {
  private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
  private static final int DATA = 0;
  private static final int HEADERS = 1;
  private static final int RST_STREAM = 3;
  private static final int SETTINGS = 4;
  private static final int PUSH_PROMISE = 5;
  private static final int PING = 6;
  private static final int GOAWAY = 7;
  private static final int WINDOW_UPDATE = 8;
  private static final int CONTINUATION = 9;
  private static final int END_STREAM = 0x1;
  private static final int ACK = 0x1;
  private static final int END_HEADERS = 0x4;
  private static final int PADDED = 0x8;
  private static final int PRIORITY = 0x20;
  private static final int STREAM = 1;
  /** Our receive window, connection and stream: as large as HTTP/2 allows, so the agent never waits on us. */
  private static final int WINDOW = Integer.MAX_VALUE;
  private static final int DEFAULT_WINDOW = 65_535;
  /** The largest answer taken (grpc-java's default maximum inbound message size is 4 MiB). */
  static final int MAX_MESSAGE = 4 * 1024 * 1024;

  private final SocketChannel ch;
  private final Selector selector;
  /** When the call's deadline passes ({@link System#nanoTime}); {@link Long#MAX_VALUE}: never. */
  private final long end;
  private final Hpack hpack = new Hpack();
  private ByteBuffer in = ByteBuffer.allocate(32 * 1024).flip();
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  /** The request's DATA payload not yet sent (flow control) and where it is. */
  private byte[] body;
  private int sent;
  private long connectionWindow = DEFAULT_WINDOW;
  private long streamWindow = DEFAULT_WINDOW;
  private int peerInitialWindow = DEFAULT_WINDOW;
  private int peerMaxFrame = 16_384;
  /** DATA received since our windows were last topped up. */
  private long consumed;
  /** DATA not yet cut into messages. */
  private final ByteArrayOutputStream data = new ByteArrayOutputStream();
  private final java.util.ArrayDeque<byte[]> messages = new java.util.ArrayDeque<>();
  private List<Hpack.Field> headers;
  private ByteArrayOutputStream headerBlock;
  private boolean headerBlockEndsStream;
  /** The call's status once its trailers came. */
  private Status status;

  private GrpcCall(SocketChannel ch, Selector selector, long end) throws IOException {
    this.ch = ch;
    this.selector = selector;
    this.end = end;
    ch.register(selector, SelectionKey.OP_READ);
  }

  /**
   * Calls the unary {@code method} ({@code package.Service/Method}) of the server at {@code socket} with the
   * serialized request; returns the serialized answer.
   *
   * @throws StatusRuntimeException as described in the class comment
   */
  static byte[] unary(Path socket, String method, byte[] request, Duration deadline) {
    try (GrpcCall call = start(socket, method, request, deadline)) {
      byte[] answer = call.next();
      if (answer == null) {
        throw internal("No value received for unary call");
      }
      if (call.next() != null) {
        throw internal("More than one value received for unary call");
      }
      return answer;
    }
  }

  /**
   * Starts a call of {@code method} with the serialized request: the answers come from {@link #next}. Without a
   * deadline ({@code null}) for a stream that lasts as long as the caller wants it.
   *
   * @throws StatusRuntimeException if the socket cannot be reached
   */
  static GrpcCall start(Path socket, String method, byte[] request, Duration deadline) {
    long end = deadline == null ? Long.MAX_VALUE : System.nanoTime() + deadline.toNanos();
    SocketChannel ch = null;
    Selector selector = null;
    try {
      ch = SocketChannel.open(StandardProtocolFamily.UNIX);
      ch.connect(UnixDomainSocketAddress.of(socket));
      ch.configureBlocking(false);
      selector = Selector.open();
      GrpcCall call = new GrpcCall(ch, selector, end);
      call.send(method, request, deadline);
      return call;
    } catch (IOException e) {
      closeQuietly(ch, selector);
      throw unavailable(e);
    } catch (RuntimeException e) {
      closeQuietly(ch, selector);
      throw e;
    }
  }

  /**
   * The next answer of the call, or null once the call ended with OK.
   *
   * @throws StatusRuntimeException the call's status once it ended with another, or its failure
   */
  byte[] next() {
    try {
      while (messages.isEmpty() && status == null) {
        sendBody();
        flush();
        readFrame();
      }
    } catch (IOException e) {
      throw unavailable(e);
    }
    if (!messages.isEmpty()) {
      return messages.poll();
    }
    if (!status.isOk()) {
      throw status.asRuntimeException();
    }
    if (data.size() > 0) {
      throw internal("the answer ended inside a message");
    }
    return null;
  }

  /** Closes the connection (which cancels the call if it is still going). Idempotent. */
  @Override
  public void close() {
    closeQuietly(ch, selector);
  }

  private static void closeQuietly(SocketChannel ch, Selector selector) {
    for (java.io.Closeable c : new java.io.Closeable[] {selector, ch}) {
      if (c != null) {
        try {
          c.close();
        } catch (IOException e) {
          // nothing to do: it is closed either way
        }
      }
    }
  }

  private static StatusRuntimeException unavailable(IOException e) {
    return Status.UNAVAILABLE.withDescription("io exception").withCause(e).asRuntimeException();
  }

  private static StatusRuntimeException internal(String message) {
    return Status.INTERNAL.withDescription(message).asRuntimeException();
  }

  /** The preface, our settings, the request's headers and as much of its body as the agent takes now. */
  private void send(String method, byte[] request, Duration deadline) throws IOException {
    out.write(PREFACE);
    // SETTINGS: no server push (2 = 0), our stream window as large as allowed (4); then the connection's.
    frame(SETTINGS, 0, 0, new byte[] {0, 2, 0, 0, 0, 0, 0, 4, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff});
    frame(WINDOW_UPDATE, 0, 0, int32(WINDOW - DEFAULT_WINDOW));
    List<Hpack.Field> fields = new ArrayList<>();
    fields.add(new Hpack.Field(":method", "POST"));
    fields.add(new Hpack.Field(":scheme", "http"));
    fields.add(new Hpack.Field(":path", "/" + method));
    fields.add(new Hpack.Field(":authority", "localhost"));
    fields.add(new Hpack.Field("content-type", "application/grpc"));
    fields.add(new Hpack.Field("te", "trailers"));
    if (deadline != null) {
      fields.add(new Hpack.Field("grpc-timeout", timeout(deadline)));
    }
    fields.add(new Hpack.Field("user-agent", "csi-agent-cli"));
    byte[] block = Hpack.encode(fields);
    if (block.length > peerMaxFrame) {
      throw internal("request headers of " + block.length + " bytes do not fit one frame");
    }
    frame(HEADERS, END_HEADERS, STREAM, block);
    body = new byte[5 + request.length];
    body[1] = (byte) (request.length >>> 24);
    body[2] = (byte) (request.length >>> 16);
    body[3] = (byte) (request.length >>> 8);
    body[4] = (byte) request.length;
    System.arraycopy(request, 0, body, 5, request.length);
    sendBody();
    flush();
  }

  /** Whole messages out of {@link #data}: a compression flag (never set here), a length, the bytes. */
  private void cutMessages() {
    byte[] d = data.toByteArray();
    int at = 0;
    while (d.length - at >= 5) {
      if (d[at] != 0) {
        throw internal("the agent sent a compressed message, which was not asked for");
      }
      long length = ((d[at + 1] & 0xffL) << 24) | ((d[at + 2] & 0xff) << 16) | ((d[at + 3] & 0xff) << 8)
          | (d[at + 4] & 0xff);
      if (length > MAX_MESSAGE) {
        throw Status.RESOURCE_EXHAUSTED.withDescription("an answer of " + length + " bytes, over the "
            + MAX_MESSAGE + " taken").asRuntimeException();
      }
      if (d.length - at - 5 < length) {
        break;
      }
      messages.add(java.util.Arrays.copyOfRange(d, at + 5, at + 5 + (int) length));
      at += 5 + (int) length;
    }
    data.reset();
    data.write(d, at, d.length - at);
  }

  /** As much of the request as the agent's windows take, in frames it accepts. */
  private void sendBody() {
    while (body != null) {
      // A window may be below 0: the agent's SETTINGS made it smaller after we sent at the default's.
      int n = (int) Math.max(0, Math.min(Math.min(body.length - sent, peerMaxFrame),
          Math.min(connectionWindow, streamWindow)));
      boolean last = sent + n == body.length;
      if (n == 0 && !last) {
        return; // wait for a WINDOW_UPDATE
      }
      frame(DATA, last ? END_STREAM : 0, STREAM, java.util.Arrays.copyOfRange(body, sent, sent + n));
      sent += n;
      connectionWindow -= n;
      streamWindow -= n;
      if (last) {
        body = null;
      }
    }
  }

  /** Reads and handles one frame. */
  private void readFrame() throws IOException {
    fill(9);
    int length = ((in.get() & 0xff) << 16) | ((in.get() & 0xff) << 8) | (in.get() & 0xff);
    int type = in.get() & 0xff;
    int flags = in.get() & 0xff;
    int stream = in.getInt() & 0x7fffffff;
    if (length > 16_384) { // our SETTINGS_MAX_FRAME_SIZE: the default
      throw internal("the agent sent a frame of " + length + " bytes, over the 16384 allowed");
    }
    fill(length);
    byte[] payload = new byte[length];
    in.get(payload);
    switch (type) {
      case SETTINGS -> settings(flags, payload);
      case PING -> {
        if ((flags & ACK) == 0) {
          frame(PING, ACK, 0, payload);
        }
      }
      case WINDOW_UPDATE -> {
        long increment = readInt(payload, 0) & 0x7fffffffL;
        if (stream == 0) {
          connectionWindow += increment;
        } else if (stream == STREAM) {
          streamWindow += increment;
        }
      }
      case GOAWAY -> {
        int last = readInt(payload, 0) & 0x7fffffff;
        if (last < STREAM) { // our stream was never processed: as grpc-java, try-again-able
          throw Status.UNAVAILABLE.withDescription("the agent is going away (GOAWAY before the call)")
              .asRuntimeException();
        }
      }
      case RST_STREAM -> {
        if (stream == STREAM) {
          throw reset(readInt(payload, 0));
        }
      }
      case DATA -> {
        if (stream == STREAM) {
          byte[] bytes = unpad(flags, payload);
          data.write(bytes, 0, bytes.length);
          cutMessages();
          if ((flags & END_STREAM) != 0) {
            status = endedWithout("trailers");
          }
        }
        // A stream that lasts (events --follow): top our windows up before the agent runs out of them.
        consumed += length;
        if (consumed > WINDOW / 2) {
          frame(WINDOW_UPDATE, 0, 0, int32((int) consumed));
          frame(WINDOW_UPDATE, 0, STREAM, int32((int) consumed));
          consumed = 0;
        }
      }
      case HEADERS -> {
        if (stream == STREAM) {
          byte[] fragment = unpad(flags, payload);
          int skip = (flags & PRIORITY) != 0 ? 5 : 0;
          headerBlock = new ByteArrayOutputStream();
          headerBlock.write(fragment, skip, fragment.length - skip);
          headerBlockEndsStream = (flags & END_STREAM) != 0;
          if ((flags & END_HEADERS) != 0) {
            headerBlock();
          }
        } else {
          throw internal("the agent sent headers on stream " + stream);
        }
      }
      case CONTINUATION -> {
        if (headerBlock == null || stream != STREAM) {
          throw internal("the agent sent a CONTINUATION frame out of place");
        }
        headerBlock.write(payload, 0, payload.length);
        if ((flags & END_HEADERS) != 0) {
          headerBlock();
        }
      }
      case PUSH_PROMISE -> throw internal("the agent sent a PUSH_PROMISE, which was disabled");
      default -> { } // PRIORITY and unknown types are ignored, as HTTP/2 says
    }
  }

  /** A complete header block: the answer's headers, or its trailers (the status). */
  private void headerBlock() {
    List<Hpack.Field> fields;
    try {
      fields = hpack.decode(headerBlock.toByteArray());
    } catch (Hpack.HpackException e) {
      throw internal(e.getMessage());
    }
    headerBlock = null;
    if (headers == null && !headerBlockEndsStream) {
      headers = fields;
      String http = value(fields, ":status");
      if (!"200".equals(http)) {
        throw httpStatus(http);
      }
      return;
    }
    if (!headerBlockEndsStream) {
      throw internal("the agent sent a third header block without ending the stream");
    }
    String code = value(fields, "grpc-status");
    if (code == null) {
      if (headers == null) { // trailers-only answer without a gRPC status: an HTTP error
        throw httpStatus(value(fields, ":status"));
      }
      status = endedWithout("grpc-status");
      return;
    }
    try {
      status = Status.fromCodeValue(Integer.parseInt(code));
    } catch (NumberFormatException e) {
      status = Status.UNKNOWN.withDescription("invalid grpc-status: " + code);
      return;
    }
    String description = value(fields, "grpc-message");
    if (description != null) {
      status = status.withDescription(percentDecode(description));
    }
  }

  private static Status endedWithout(String what) {
    return Status.INTERNAL.withDescription("the agent ended the call without " + what);
  }

  /** As grpc-java maps an HTTP status that is not 200 without a gRPC status. */
  private static StatusRuntimeException httpStatus(String http) {
    Status.Code code = switch (http == null ? "" : http) {
      case "400" -> Status.Code.INTERNAL;
      case "401" -> Status.Code.UNAUTHENTICATED;
      case "403" -> Status.Code.PERMISSION_DENIED;
      case "404" -> Status.Code.UNIMPLEMENTED;
      case "429", "502", "503", "504" -> Status.Code.UNAVAILABLE;
      default -> Status.Code.UNKNOWN;
    };
    return Status.fromCode(code).withDescription("HTTP status code " + http).asRuntimeException();
  }

  /** As grpc-java maps RST_STREAM error codes. */
  private static StatusRuntimeException reset(int error) {
    Status status = switch (error) {
      case 0x7 -> Status.UNAVAILABLE; // REFUSED_STREAM
      case 0x8 -> Status.CANCELLED;
      case 0xb -> Status.RESOURCE_EXHAUSTED; // ENHANCE_YOUR_CALM
      case 0xc -> Status.PERMISSION_DENIED; // INADEQUATE_SECURITY
      default -> Status.INTERNAL;
    };
    return status.withDescription("RST_STREAM closed stream. HTTP/2 error code: " + error).asRuntimeException();
  }

  private void settings(int flags, byte[] payload) {
    if ((flags & ACK) != 0) {
      return;
    }
    for (int i = 0; i + 6 <= payload.length; i += 6) {
      int id = ((payload[i] & 0xff) << 8) | (payload[i + 1] & 0xff);
      int value = readInt(payload, i + 2);
      if (id == 0x4) { // INITIAL_WINDOW_SIZE: applies to open streams by the difference
        streamWindow += (long) value - peerInitialWindow;
        peerInitialWindow = value;
      } else if (id == 0x5) { // MAX_FRAME_SIZE
        peerMaxFrame = value;
      }
    }
    frame(SETTINGS, ACK, 0, new byte[0]);
  }

  private static byte[] unpad(int flags, byte[] payload) {
    if ((flags & PADDED) == 0) {
      return payload;
    }
    int pad = payload.length == 0 ? 0 : payload[0] & 0xff;
    if (1 + pad > payload.length) {
      throw internal("the agent sent a frame with more padding than payload");
    }
    return java.util.Arrays.copyOfRange(payload, 1, payload.length - pad);
  }

  private void frame(int type, int flags, int stream, byte[] payload) {
    out.write(payload.length >>> 16);
    out.write(payload.length >>> 8);
    out.write(payload.length);
    out.write(type);
    out.write(flags);
    out.writeBytes(int32(stream));
    out.writeBytes(payload);
  }

  private void flush() throws IOException {
    if (out.size() == 0) {
      return;
    }
    ByteBuffer b = ByteBuffer.wrap(out.toByteArray());
    out.reset();
    while (b.hasRemaining()) {
      if (ch.write(b) == 0) {
        await(SelectionKey.OP_WRITE);
      }
    }
  }

  /** Until {@code n} bytes are buffered. */
  private void fill(int n) throws IOException {
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
        await(SelectionKey.OP_READ);
      }
    }
    in.flip();
  }

  private void await(int op) throws IOException {
    ch.keyFor(selector).interestOps(op);
    if (end == Long.MAX_VALUE) { // no deadline: a stream for as long as the caller wants it
      selector.select();
    } else {
      long left = end - System.nanoTime();
      if (left <= 0 || selector.select(Math.max(1, left / 1_000_000)) == 0 && end - System.nanoTime() <= 0) {
        throw deadlineExceeded();
      }
    }
    selector.selectedKeys().clear();
  }

  private static StatusRuntimeException deadlineExceeded() {
    return Status.DEADLINE_EXCEEDED.withDescription("the agent did not answer before the deadline")
        .asRuntimeException();
  }

  /** gRPC's {@code grpc-timeout}: at most 8 digits and a unit. */
  static String timeout(Duration d) {
    long ms = Math.max(1, d.toMillis());
    return ms < 100_000_000L ? ms + "m" : Math.min(99_999_999L, d.toSeconds()) + "S";
  }

  private static String value(List<Hpack.Field> fields, String name) {
    for (Hpack.Field f : fields) {
      if (f.name().equals(name)) {
        return f.value();
      }
    }
    return null;
  }

  /** gRPC's percent-encoding of {@code grpc-message}: {@code %XX} for bytes outside printable ASCII and '%'. */
  static String percentDecode(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    byte[] raw = s.getBytes(StandardCharsets.US_ASCII);
    ByteArrayOutputStream b = new ByteArrayOutputStream(raw.length);
    for (int i = 0; i < raw.length; i++) {
      if (raw[i] == '%' && i + 2 < raw.length && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
        b.write(hex(raw[i + 1]) << 4 | hex(raw[i + 2]));
        i += 2;
      } else {
        b.write(raw[i]);
      }
    }
    return b.toString(StandardCharsets.UTF_8);
  }

  private static int hex(byte c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  }

  private static int readInt(byte[] b, int at) {
    return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
  }

  private static byte[] int32(int v) {
    return new byte[] {(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
  }
}
