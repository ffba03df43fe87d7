package dev.csisupervisor.cli;

import static dev.csisupervisor.cli.Http2Socket.ACK;
import static dev.csisupervisor.cli.Http2Socket.CONTINUATION;
import static dev.csisupervisor.cli.Http2Socket.DATA;
import static dev.csisupervisor.cli.Http2Socket.END_HEADERS;
import static dev.csisupervisor.cli.Http2Socket.END_STREAM;
import static dev.csisupervisor.cli.Http2Socket.GOAWAY;
import static dev.csisupervisor.cli.Http2Socket.HEADERS;
import static dev.csisupervisor.cli.Http2Socket.PING;
import static dev.csisupervisor.cli.Http2Socket.PUSH_PROMISE;
import static dev.csisupervisor.cli.Http2Socket.RST_STREAM;
import static dev.csisupervisor.cli.Http2Socket.SETTINGS;
import static dev.csisupervisor.cli.Http2Socket.WINDOW_UPDATE;
import static dev.csisupervisor.cli.Http2Socket.int32;
import static dev.csisupervisor.cli.Http2Socket.readInt;
import static java.util.Objects.requireNonNull;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One gRPC call over a unix socket, unary or server-streaming: a connection of its own, HTTP/2 with prior
 * knowledge (as a plaintext gRPC server expects), one stream, then closed. What a CLI command needs to ask the
 * agent one thing, in a few dozen classes of the JDK instead of a gRPC channel and Netty (some 1 500 classes
 * to load and initialise for one call, and a class-data archive twice the size: benchmarks/README.md section
 * 14). The frames are {@link Http2Socket}'s, the messages {@link MessageDeframer}'s, the headers {@link Hpack}'s.
 *
 * <p>Every call has a deadline: the whole call's ({@link #start}, {@link #unary}), or, for a stream that lasts as
 * long as the caller wants it ({@link #follow}), one until its first answer. It fails only as grpc-java's channel
 * does, with a {@link StatusRuntimeException}: the agent's status and message; {@code UNAVAILABLE} with the I/O
 * error as its cause when the socket cannot be reached or the connection ends; {@code DEADLINE_EXCEEDED} when no
 * answer came in time (the deadline is also sent as {@code grpc-timeout}, so the agent stops working on it);
 * {@code CANCELLED} once {@link #close} was called; {@code INTERNAL} when the answer breaks HTTP/2 or gRPC,
 * whatever bytes came ({@code GrpcCallFuzzTest}); {@code RESOURCE_EXHAUSTED} for an answer over
 * {@link #MAX_MESSAGE}. Once failed, a call fails the same way again.
 *
 * <p>A call is used by one thread at a time; {@link #close} may come from any thread, also while another waits
 * in {@link #next}.
 */
final class GrpcCall implements AutoCloseable {
  private static final int STREAM = 1;
  /** Our receive window, connection and stream: as large as HTTP/2 allows, so the agent never waits on us. */
  private static final int WINDOW = Integer.MAX_VALUE;
  private static final int DEFAULT_WINDOW = 65_535;
  /** The largest answer taken (grpc-java's default maximum inbound message size is 4 MiB). */
  static final int MAX_MESSAGE = 4 * 1024 * 1024;
  /** The largest header block taken, compressed (grpc-java takes 8 KiB of metadata by default). */
  static final int MAX_HEADER_BLOCK = 64 * 1024;

  private final Http2Socket socket;
  /** When the call's deadline passes ({@link System#nanoTime}); {@link Long#MAX_VALUE}: never. */
  private final long end;
  /** When the first answer must have come by, if sooner than {@link #end}. */
  private final long firstAnswerEnd;
  private boolean answered;
  private final Hpack hpack = new Hpack();
  private final MessageDeframer messages = new MessageDeframer(MAX_MESSAGE);
  /** The request's DATA payload not yet sent (flow control) and where it is. */
  private byte[] body;
  private int sent;
  private long connectionWindow = DEFAULT_WINDOW;
  private long streamWindow = DEFAULT_WINDOW;
  private int peerInitialWindow = DEFAULT_WINDOW;
  private int peerMaxFrame = Http2Socket.MAX_FRAME;
  /** DATA received since our windows were last topped up. */
  private long consumed;
  private List<Hpack.Field> headers;
  /** The header block being read (HEADERS without END_HEADERS, then CONTINUATIONs), or null. */
  private ByteArrayOutputStream headerBlock;
  private boolean headerBlockEndsStream;
  /** The call's status once its trailers came. */
  private Status status;
  /** How the call failed, once it did: thrown again by each later {@link #next}. */
  private StatusRuntimeException failure;

  private GrpcCall(Http2Socket socket, long end, long firstAnswerEnd) {
    this.socket = socket;
    this.end = end;
    this.firstAnswerEnd = firstAnswerEnd;
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
        throw GrpcStatuses.internal("No value received for unary call");
      }
      if (call.next() != null) {
        throw GrpcStatuses.internal("More than one value received for unary call");
      }
      return answer;
    }
  }

  /**
   * Starts a call of {@code method} with the serialized request, which ends by {@code deadline}: the answers
   * come from {@link #next}.
   *
   * @throws StatusRuntimeException if the socket cannot be reached
   */
  static GrpcCall start(Path socket, String method, byte[] request, Duration deadline) {
    requireNonNull(deadline, "deadline");
    long end = System.nanoTime() + deadline.toNanos();
    return open(socket, method, request, deadline, end, end);
  }

  /**
   * Starts a stream of {@code method} that lasts as long as the caller wants it (no {@code grpc-timeout}) once it
   * has answered; its first answer (or its end) must come within {@code firstAnswer}.
   */
  static GrpcCall follow(Path socket, String method, byte[] request, Duration firstAnswer) {
    requireNonNull(firstAnswer, "firstAnswer");
    return open(socket, method, request, null, Long.MAX_VALUE, System.nanoTime() + firstAnswer.toNanos());
  }

  private static GrpcCall open(Path path, String method, byte[] request, Duration deadline, long end,
      long firstAnswerEnd) {
    requireNonNull(method, "method");
    requireNonNull(request, "request");
    Http2Socket socket = Http2Socket.connect(path, Math.min(end, firstAnswerEnd));
    try {
      GrpcCall call = new GrpcCall(socket, end, firstAnswerEnd);
      call.send(method, request, deadline);
      return call;
    } catch (RuntimeException e) {
      socket.close();
      throw e;
    }
  }

  /**
   * The next answer of the call, or null once the call ended with OK.
   *
   * @throws StatusRuntimeException the call's status once it ended with another, or its failure
   */
  byte[] next() {
    if (failure != null) {
      throw failure;
    }
    try {
      return answer();
    } catch (StatusRuntimeException e) {
      failure = e;
      throw e;
    }
  }

  private byte[] answer() {
    while (!messages.hasMessage() && status == null) {
      sendBody();
      socket.flush(deadline(), waiting());
      handle(socket.read(deadline(), waiting()));
    }
    answered = true;
    if (messages.hasMessage()) {
      return messages.poll();
    }
    if (!status.isOk()) {
      throw status.asRuntimeException();
    }
    if (messages.partial()) {
      throw GrpcStatuses.internal("the answer ended inside a message");
    }
    return null;
  }

  private long deadline() {
    return answered ? end : Math.min(end, firstAnswerEnd);
  }

  /** What a DEADLINE_EXCEEDED says the call was waiting for. */
  private String waiting() {
    if (body != null) {
      return "the agent's flow-control window stayed shut: the request was not sent before the deadline";
    }
    return answered ? "the agent did not answer before the deadline"
        : "the agent did not start answering before the deadline";
  }

  /** Closes the connection (which cancels the call if it is still going). Idempotent; from any thread. */
  @Override
  public void close() {
    socket.close();
  }

  /** The preface, our settings, the request's headers and as much of its body as the agent takes now. */
  private void send(String method, byte[] request, Duration deadline) {
    // SETTINGS: no server push (2 = 0), our stream window as large as allowed (4); then the connection's.
    socket.frame(SETTINGS, 0, 0, new byte[] {0, 2, 0, 0, 0, 0, 0, 4, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff});
    socket.frame(WINDOW_UPDATE, 0, 0, int32(WINDOW - DEFAULT_WINDOW));
    List<Hpack.Field> fields = new ArrayList<>();
    fields.add(new Hpack.Field(":method", "POST"));
    fields.add(new Hpack.Field(":scheme", "http"));
    fields.add(new Hpack.Field(":path", "/" + method));
    fields.add(new Hpack.Field(":authority", "localhost"));
    fields.add(new Hpack.Field("content-type", "application/grpc"));
    fields.add(new Hpack.Field("te", "trailers"));
    if (deadline != null) {
      fields.add(new Hpack.Field("grpc-timeout", GrpcStatuses.timeout(deadline)));
    }
    fields.add(new Hpack.Field("user-agent", "csi-agent-cli"));
    byte[] block = Hpack.encode(fields);
    if (block.length > peerMaxFrame) {
      throw GrpcStatuses.internal("request headers of " + block.length + " bytes do not fit one frame");
    }
    socket.frame(HEADERS, END_HEADERS, STREAM, block);
    body = new byte[5 + request.length];
    System.arraycopy(int32(request.length), 0, body, 1, 4);
    System.arraycopy(request, 0, body, 5, request.length);
    sendBody();
    socket.flush(deadline(), waiting());
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
      socket.frame(DATA, last ? END_STREAM : 0, STREAM, Arrays.copyOfRange(body, sent, sent + n));
      sent += n;
      connectionWindow -= n;
      streamWindow -= n;
      if (last) {
        body = null;
      }
    }
  }

  /** Handles one frame (its size and stream already checked by {@link Http2Socket#check}). */
  private void handle(Http2Socket.Frame f) {
    if (headerBlock != null && f.type() != CONTINUATION) {
      throw GrpcStatuses.protocol("PROTOCOL_ERROR: a header block not ended before another frame");
    }
    if (f.stream() > STREAM) {
      // Only stream 1 was ever opened. PRIORITY, WINDOW_UPDATE and RST_STREAM of another are harmless, and
      // unknown types are ignored; anything else about a stream that cannot exist breaks the protocol.
      if (f.type() == DATA || f.type() == HEADERS || f.type() == PUSH_PROMISE || f.type() == CONTINUATION) {
        throw GrpcStatuses.protocol("PROTOCOL_ERROR: a frame on stream " + f.stream() + ", never opened");
      }
      return;
    }
    switch (f.type()) {
      case SETTINGS -> settings(f);
      case PING -> {
        if (!f.has(ACK)) {
          socket.frame(PING, ACK, 0, f.payload());
        }
      }
      case WINDOW_UPDATE -> windowUpdate(f);
      case GOAWAY -> {
        if ((readInt(f.payload(), 0) & 0x7fffffff) < STREAM) { // never processed: as grpc-java, try again
          throw Status.UNAVAILABLE.withDescription("the agent is going away (GOAWAY before the call)")
              .asRuntimeException();
        }
      }
      case RST_STREAM -> throw GrpcStatuses.reset(readInt(f.payload(), 0));
      case DATA -> data(f);
      case HEADERS -> {
        headerBlock = new ByteArrayOutputStream();
        headerBlockEndsStream = f.has(END_STREAM);
        headerFragment(f.content(), f.has(END_HEADERS));
      }
      case CONTINUATION -> {
        if (headerBlock == null) {
          throw GrpcStatuses.protocol("PROTOCOL_ERROR: a CONTINUATION frame after no HEADERS");
        }
        headerFragment(f.payload(), f.has(END_HEADERS));
      }
      case PUSH_PROMISE -> throw GrpcStatuses.protocol("PROTOCOL_ERROR: a PUSH_PROMISE, which was disabled");
      default -> { } // PRIORITY and unknown types are ignored, as HTTP/2 says
    }
  }

  private void windowUpdate(Http2Socket.Frame f) {
    long increment = readInt(f.payload(), 0) & 0x7fffffffL;
    if (f.stream() == 0) {
      connectionWindow = grown(connectionWindow, increment);
    } else {
      streamWindow = grown(streamWindow, increment);
    }
  }

  private static long grown(long window, long increment) {
    if (window + increment > Integer.MAX_VALUE) {
      throw GrpcStatuses.protocol("FLOW_CONTROL_ERROR: a window opened past 2^31-1");
    }
    return window + increment;
  }

  private void data(Http2Socket.Frame f) {
    if (headers == null) {
      throw GrpcStatuses.protocol("PROTOCOL_ERROR: DATA before the answer's headers");
    }
    byte[] bytes = f.content();
    messages.write(bytes, 0, bytes.length);
    if (f.has(END_STREAM)) {
      status = Status.INTERNAL.withDescription("the agent ended the call without trailers");
    }
    // A stream that lasts (events --follow): top our windows up before the agent runs out of them.
    consumed += f.payload().length;
    if (consumed > WINDOW / 2) {
      socket.frame(WINDOW_UPDATE, 0, 0, int32((int) consumed));
      socket.frame(WINDOW_UPDATE, 0, STREAM, int32((int) consumed));
      consumed = 0;
    }
  }

  private void headerFragment(byte[] fragment, boolean last) {
    if (headerBlock.size() + fragment.length > MAX_HEADER_BLOCK) {
      throw Status.RESOURCE_EXHAUSTED.withDescription("the agent's header block is over the "
          + MAX_HEADER_BLOCK + " bytes taken").asRuntimeException();
    }
    headerBlock.write(fragment, 0, fragment.length);
    if (last) {
      headerBlock();
    }
  }

  /** A complete header block: the answer's headers, or its trailers (the status). */
  private void headerBlock() {
    List<Hpack.Field> fields;
    try {
      fields = hpack.decode(headerBlock.toByteArray());
    } catch (Hpack.HpackException e) {
      throw GrpcStatuses.protocol("COMPRESSION_ERROR: " + e.getMessage());
    }
    headerBlock = null;
    if (headers == null && !headerBlockEndsStream) {
      headers = fields;
      String http = value(fields, ":status");
      if (!"200".equals(http)) {
        throw GrpcStatuses.httpStatus(http);
      }
      return;
    }
    if (!headerBlockEndsStream) {
      throw GrpcStatuses.internal("the agent sent a third header block without ending the stream");
    }
    String code = value(fields, "grpc-status");
    if (code == null) {
      if (headers == null) { // trailers-only answer without a gRPC status: an HTTP error
        throw GrpcStatuses.httpStatus(value(fields, ":status"));
      }
      status = Status.INTERNAL.withDescription("the agent ended the call without grpc-status");
      return;
    }
    status = GrpcStatuses.trailers(code, value(fields, "grpc-message"));
  }

  private void settings(Http2Socket.Frame f) {
    if (f.has(ACK)) {
      return;
    }
    byte[] payload = f.payload();
    for (int i = 0; i + 6 <= payload.length; i += 6) {
      int id = ((payload[i] & 0xff) << 8) | (payload[i + 1] & 0xff);
      long value = Integer.toUnsignedLong(readInt(payload, i + 2));
      if (id == 0x2 && value > 1) {
        throw GrpcStatuses.protocol("PROTOCOL_ERROR: SETTINGS_ENABLE_PUSH of " + value);
      } else if (id == 0x4) { // INITIAL_WINDOW_SIZE: applies to open streams by the difference
        if (value > Integer.MAX_VALUE) {
          throw GrpcStatuses.protocol("FLOW_CONTROL_ERROR: SETTINGS_INITIAL_WINDOW_SIZE of " + value);
        }
        streamWindow = grown(streamWindow - peerInitialWindow, value);
        peerInitialWindow = (int) value;
      } else if (id == 0x5) { // MAX_FRAME_SIZE
        if (value < Http2Socket.MAX_FRAME || value > 0xffffff) {
          throw GrpcStatuses.protocol("PROTOCOL_ERROR: SETTINGS_MAX_FRAME_SIZE of " + value);
        }
        peerMaxFrame = (int) value;
      }
    }
    socket.frame(SETTINGS, ACK, 0, new byte[0]);
  }

  private static String value(List<Hpack.Field> fields, String name) {
    for (Hpack.Field f : fields) {
      if (f.name().equals(name)) {
        return f.value();
      }
    }
    return null;
  }
}
