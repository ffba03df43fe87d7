package dev.csisupervisor.cli;

import static dev.csisupervisor.cli.Http2Socket.CONTINUATION;
import static dev.csisupervisor.cli.Http2Socket.DATA;
import static dev.csisupervisor.cli.Http2Socket.END_HEADERS;
import static dev.csisupervisor.cli.Http2Socket.END_STREAM;
import static dev.csisupervisor.cli.Http2Socket.GOAWAY;
import static dev.csisupervisor.cli.Http2Socket.HEADERS;
import static dev.csisupervisor.cli.Http2Socket.PADDED;
import static dev.csisupervisor.cli.Http2Socket.PING;
import static dev.csisupervisor.cli.Http2Socket.PRIORITY;
import static dev.csisupervisor.cli.Http2Socket.PRIORITY_FLAG;
import static dev.csisupervisor.cli.Http2Socket.RST_STREAM;
import static dev.csisupervisor.cli.Http2Socket.SETTINGS;
import static dev.csisupervisor.cli.Http2Socket.WINDOW_UPDATE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.admin.v1.Snapshot;
import dev.csisupervisor.admin.v1.WatchEventsResponse;
import dev.csisupervisor.testing.ShortTempDir;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link GrpcCall} against a scripted server on a real unix socket ({@link FakeHttp2Server}) that sends what a
 * broken or wedged agent may: each malformed frame ends the call with a gRPC status that names what was wrong,
 * never with another exception and never with a hang; {@link GrpcCall#close} from another thread ends a waiting
 * call; a stream without {@code --follow} ends at its deadline.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class GrpcCallFramesTest {
  private static final String METHOD = "csisupervisor.admin.v1.AgentAdmin/GetAgentStatus";
  private static final byte[] ANSWER = "answer".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
  private final ShortTempDir dir = new ShortTempDir("grpc-frames");
  private FakeHttp2Server server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    dir.close();
  }

  private FakeHttp2Server serve(FakeHttp2Server.Script script) throws Exception {
    server = new FakeHttp2Server(dir.resolve("agent.sock"), script);
    return server;
  }

  /** What the scripted server writes once it has read the request. */
  interface Answer {
    void write(FakeHttp2Server.Exchange ex) throws Exception;
  }

  static Stream<Arguments> malformed() {
    return Stream.of(
        bad("a WINDOW_UPDATE of 3 bytes", Status.Code.INTERNAL, "FRAME_SIZE_ERROR: WINDOW_UPDATE of 3",
            ex -> ex.frame(WINDOW_UPDATE, 0, 0, new byte[3])),
        bad("a WINDOW_UPDATE of 0", Status.Code.INTERNAL, "WINDOW_UPDATE of 0",
            ex -> ex.frame(WINDOW_UPDATE, 0, 1, new byte[4])),
        bad("a window opened past 2^31-1", Status.Code.INTERNAL, "FLOW_CONTROL_ERROR",
            ex -> ex.frame(WINDOW_UPDATE, 0, 0, Http2Socket.int32(Integer.MAX_VALUE))),
        bad("a GOAWAY of 4 bytes", Status.Code.INTERNAL, "FRAME_SIZE_ERROR: GOAWAY of 4",
            ex -> ex.frame(GOAWAY, 0, 0, new byte[4])),
        bad("a GOAWAY on a stream", Status.Code.INTERNAL, "PROTOCOL_ERROR: GOAWAY on stream 1",
            ex -> ex.frame(GOAWAY, 0, 1, new byte[8])),
        bad("a GOAWAY before the call", Status.Code.UNAVAILABLE, "GOAWAY before the call",
            ex -> ex.frame(GOAWAY, 0, 0, new byte[8])),
        bad("a RST_STREAM of 2 bytes", Status.Code.INTERNAL, "FRAME_SIZE_ERROR: RST_STREAM of 2",
            ex -> ex.frame(RST_STREAM, 0, 1, new byte[2])),
        bad("a RST_STREAM on the connection", Status.Code.INTERNAL, "PROTOCOL_ERROR: RST_STREAM on stream 0",
            ex -> ex.frame(RST_STREAM, 0, 0, new byte[4])),
        bad("a RST_STREAM CANCEL", Status.Code.CANCELLED, "HTTP/2 error code: 8",
            ex -> ex.frame(RST_STREAM, 0, 1, Http2Socket.int32(8))),
        bad("a PRIORITY of 3 bytes", Status.Code.INTERNAL, "FRAME_SIZE_ERROR: PRIORITY of 3",
            ex -> ex.frame(PRIORITY, 0, 1, new byte[3])),
        bad("HEADERS flagged PRIORITY with 3 bytes", Status.Code.INTERNAL, "HEADERS with PRIORITY of 3",
            ex -> ex.frame(HEADERS, END_HEADERS | PRIORITY_FLAG, 1, new byte[3])),
        bad("an empty PADDED DATA", Status.Code.INTERNAL, "DATA with more padding than payload",
            ex -> {
              ex.okHeaders();
              ex.frame(DATA, PADDED, 1, new byte[0]);
            }),
        bad("an empty PADDED HEADERS", Status.Code.INTERNAL, "HEADERS with more padding than payload",
            ex -> ex.frame(HEADERS, END_HEADERS | PADDED, 1, new byte[0])),
        bad("PADDED HEADERS whose padding eats its priority", Status.Code.INTERNAL, "more padding than payload",
            ex -> ex.frame(HEADERS, END_HEADERS | PADDED | PRIORITY_FLAG, 1, new byte[] {3, 0, 0, 0, 0, 0})),
        bad("an HPACK integer past 2^31", Status.Code.INTERNAL, "COMPRESSION_ERROR: integer too large",
            ex -> ex.frame(HEADERS, END_HEADERS, 1, new byte[] {(byte) 0xff, (byte) 0x80, (byte) 0x80,
                (byte) 0x80, (byte) 0x80, 0x10})),
        bad("an HPACK index out of the table", Status.Code.INTERNAL, "COMPRESSION_ERROR: header index 70",
            ex -> ex.frame(HEADERS, END_HEADERS, 1, new byte[] {(byte) (0x80 | 70)})),
        bad("a CONTINUATION after no HEADERS", Status.Code.INTERNAL, "CONTINUATION frame after no HEADERS",
            ex -> ex.frame(CONTINUATION, END_HEADERS, 1, FakeHttp2Server.block(":status", "200"))),
        bad("a header block interrupted by DATA", Status.Code.INTERNAL, "header block not ended",
            ex -> {
              ex.frame(HEADERS, 0, 1, FakeHttp2Server.block(":status", "200"));
              ex.frame(DATA, 0, 1, FakeHttp2Server.grpcMessage(ANSWER));
            }),
        bad("CONTINUATIONs without end", Status.Code.RESOURCE_EXHAUSTED, "header block is over",
            ex -> {
              ex.frame(HEADERS, 0, 1, FakeHttp2Server.block(":status", "200"));
              for (int i = 0; i < 10; i++) {
                ex.frame(CONTINUATION, 0, 1, new byte[16_384]);
              }
            }),
        bad("a CONTINUATION on the connection", Status.Code.INTERNAL, "CONTINUATION on stream 0",
            ex -> ex.frame(CONTINUATION, 0, 0, new byte[0])),
        bad("a PING of 7 bytes", Status.Code.INTERNAL, "FRAME_SIZE_ERROR: PING of 7",
            ex -> ex.frame(PING, 0, 0, new byte[7])),
        bad("a SETTINGS of 5 bytes", Status.Code.INTERNAL, "FRAME_SIZE_ERROR: SETTINGS of 5",
            ex -> ex.frame(SETTINGS, 0, 0, new byte[5])),
        bad("a SETTINGS ACK with a payload", Status.Code.INTERNAL, "FRAME_SIZE_ERROR: SETTINGS of 6",
            ex -> ex.frame(SETTINGS, 1, 0, new byte[6])),
        bad("a MAX_FRAME_SIZE below 16384", Status.Code.INTERNAL, "SETTINGS_MAX_FRAME_SIZE of 100",
            ex -> ex.frame(SETTINGS, 0, 0, new byte[] {0, 5, 0, 0, 0, 100})),
        bad("an INITIAL_WINDOW_SIZE past 2^31-1", Status.Code.INTERNAL, "SETTINGS_INITIAL_WINDOW_SIZE of",
            ex -> ex.frame(SETTINGS, 0, 0, new byte[] {0, 4, (byte) 0x80, 0, 0, 0})),
        bad("a frame over 16384 bytes", Status.Code.INTERNAL, "a frame of 16385 bytes",
            ex -> ex.frame(DATA, 0, 1, new byte[16_385])),
        bad("DATA before the headers", Status.Code.INTERNAL, "DATA before the answer's headers",
            ex -> ex.frame(DATA, 0, 1, FakeHttp2Server.grpcMessage(ANSWER))),
        bad("DATA on a stream never opened", Status.Code.INTERNAL, "stream 3, never opened",
            ex -> ex.frame(DATA, 0, 3, new byte[0])),
        bad("a PUSH_PROMISE", Status.Code.INTERNAL, "PUSH_PROMISE",
            ex -> ex.frame(Http2Socket.PUSH_PROMISE, END_HEADERS, 1, new byte[4])),
        bad("a compressed message", Status.Code.INTERNAL, "compressed message",
            ex -> {
              ex.okHeaders();
              byte[] m = FakeHttp2Server.grpcMessage(ANSWER);
              m[0] = 1;
              ex.frame(DATA, 0, 1, m);
            }),
        bad("a message over 4 MiB", Status.Code.RESOURCE_EXHAUSTED, "over the 4194304 taken",
            ex -> {
              ex.okHeaders();
              ex.frame(DATA, 0, 1, new byte[] {0, 0, 0x40, 0, 1});
            }),
        bad("an answer ended inside a message", Status.Code.INTERNAL, "ended inside a message",
            ex -> {
              ex.okHeaders();
              ex.frame(DATA, 0, 1, Arrays.copyOf(FakeHttp2Server.grpcMessage(ANSWER), 7));
              ex.trailers(0, null);
            }),
        bad("DATA ending the stream without trailers", Status.Code.INTERNAL, "without trailers",
            ex -> {
              ex.okHeaders();
              ex.frame(DATA, END_STREAM, 1, new byte[0]);
            }),
        bad("an HTTP 503 without a gRPC status", Status.Code.UNAVAILABLE, "HTTP status code 503",
            ex -> ex.frame(HEADERS, END_HEADERS | END_STREAM, 1, FakeHttp2Server.block(":status", "503"))),
        bad("a connection that ends", Status.Code.UNAVAILABLE, "closed the connection", ex -> { }));
  }

  private static Arguments bad(String name, Status.Code code, String says, Answer answer) {
    return Arguments.of(name, code, says, answer);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("malformed")
  void aMalformedAnswer_endsAsAStatusNamingWhatWasWrong(String name, Status.Code code, String says, Answer answer)
      throws Exception {
    serve((ex, n) -> {
      ex.request();
      try {
        answer.write(ex);
      } catch (Exception e) {
        throw new java.io.IOException(e);
      }
    });
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
        () -> GrpcCall.unary(server.socket(), METHOD, new byte[0], Duration.ofSeconds(10)));
    assertEquals(code, e.getStatus().getCode(), e.getStatus().toString());
    assertTrue(String.valueOf(e.getStatus().getDescription()).contains(says), e.getStatus().toString());
  }

  @Test
  void aHeaderBlockInHeadersAndContinuations_andPaddedFrames_areRead() throws Exception {
    serve((ex, n) -> {
      ex.request();
      byte[] block = FakeHttp2Server.block(":status", "200", "content-type", "application/grpc");
      ex.frame(HEADERS, PADDED, 1, concat(new byte[] {2}, Arrays.copyOf(block, 3), new byte[2]));
      ex.frame(CONTINUATION, END_HEADERS, 1, Arrays.copyOfRange(block, 3, block.length));
      ex.frame(PRIORITY, 0, 1, new byte[5]);
      ex.frame(WINDOW_UPDATE, 0, 7, Http2Socket.int32(1)); // of a stream never opened: harmless
      ex.frame(0x42, 0xff, 1, new byte[9]); // an extension's frame: ignored
      ex.frame(DATA, PADDED, 1, concat(new byte[] {1}, FakeHttp2Server.grpcMessage(ANSWER), new byte[1]));
      ex.trailers(0, null);
    });
    assertArrayEquals(ANSWER, GrpcCall.unary(server.socket(), METHOD, new byte[0], Duration.ofSeconds(10)));
  }

  @Test
  void anAnswerOfFourMebibytesInManyFrames_arrivesWhole() throws Exception {
    byte[] big = new byte[GrpcCall.MAX_MESSAGE];
    new java.util.Random(7).nextBytes(big);
    serve((ex, n) -> {
      ex.request();
      ex.okHeaders();
      byte[] m = FakeHttp2Server.grpcMessage(big);
      for (int at = 0; at < m.length; at += 16_384) {
        ex.frame(DATA, 0, 1, Arrays.copyOfRange(m, at, Math.min(m.length, at + 16_384)));
      }
      ex.trailers(0, null);
    });
    assertArrayEquals(big, GrpcCall.unary(server.socket(), METHOD, new byte[0], Duration.ofSeconds(20)));
  }

  @Test
  void aWindowThatNeverOpens_isDeadlineExceeded_sayingTheRequestWasNotSent() throws Exception {
    serve((ex, n) -> {
      // 65 535 bytes of DATA fill the default windows; then no WINDOW_UPDATE ever comes.
      int[] data = {0};
      ex.readUntil(f -> (data[0] += f.type() == DATA ? f.payload().length : 0) >= 65_535);
      ex.drain();
    });
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
        () -> GrpcCall.unary(server.socket(), METHOD, new byte[100_000], Duration.ofSeconds(2)));
    assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode());
    assertTrue(e.getStatus().getDescription().contains("flow-control window stayed shut"), e.toString());
  }

  @Test
  void anAgentThatAcceptsNoConnection_isDeadlineExceeded_notAHangInConnect() throws Exception {
    java.nio.file.Path path = dir.resolve("full.sock");
    java.util.List<java.nio.channels.SocketChannel> waiting = new java.util.ArrayList<>();
    try (java.nio.channels.ServerSocketChannel listener =
        java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
      listener.bind(java.net.UnixDomainSocketAddress.of(path), 1); // never accepts: its backlog fills up
      boolean full = false;
      for (int i = 0; i < 64 && !full; i++) {
        java.nio.channels.SocketChannel c = java.nio.channels.SocketChannel.open(java.net.StandardProtocolFamily.UNIX);
        c.configureBlocking(false);
        try {
          c.connect(java.net.UnixDomainSocketAddress.of(path));
          waiting.add(c);
        } catch (java.io.IOException e) {
          c.close();
          full = true;
        }
      }
      assertTrue(full, "the backlog filled up");
      // A connect that waited for the server would never end (it never accepts): the class's timeout catches that.
      // That the call ended through its deadline, and in connect, is what the status and its words say.
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class,
          () -> GrpcCall.unary(path, METHOD, new byte[0], Duration.ofMillis(200)));
      assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode(), e + ", caused by " + e.getCause());
      assertEquals("the agent did not accept the connection before the deadline (its backlog is full)",
          e.getStatus().getDescription());
    } finally {
      for (java.nio.channels.SocketChannel c : waiting) {
        c.close();
      }
    }
  }

  @Test
  void closeFromAnotherThread_endsTheWaitingCallWithCancelled() throws Exception {
    serve((ex, n) -> {
      ex.request();
      ex.okHeaders();
      ex.drain(); // never answers more
    });
    for (int i = 0; i < 20; i++) {
      GrpcCall call = GrpcCall.start(server.socket(), METHOD, new byte[0], Duration.ofSeconds(20));
      CompletableFuture<Object> waiting = CompletableFuture.supplyAsync(() -> {
        try {
          return call.next();
        } catch (Throwable t) {
          return t;
        }
      });
      assertTrue(server.awaitRequest(10, TimeUnit.SECONDS));
      call.close();
      Object outcome = waiting.get(10, TimeUnit.SECONDS);
      assertTrue(outcome instanceof StatusRuntimeException, "round " + i + ": " + outcome);
      assertEquals(Status.Code.CANCELLED, ((StatusRuntimeException) outcome).getStatus().getCode());
      call.close(); // again: a no-op
      StatusRuntimeException again = assertThrows(StatusRuntimeException.class, call::next);
      assertEquals(Status.Code.CANCELLED, again.getStatus().getCode());
    }
  }

  @Test
  void eventsWithoutFollow_againstAnAgentThatSendsHalfItsSnapshots_endsAtTheDeadline() throws Exception {
    serve((ex, n) -> {
      ex.request();
      ex.okHeaders();
      ex.message(WatchEventsResponse.newBuilder().setSnapshot(Snapshot.newBuilder().setType(PluginType.CSI_NODE))
          .build().toByteArray());
      ex.drain(); // the controller snapshot never comes
    });
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    try (AdminClient client = AdminClient.connect(server.socket(), Duration.ofSeconds(2))) {
      EventsCommand events = new EventsCommand(file -> server.socket());
      new picocli.CommandLine(events.spec).parseArgs();
      int code = events.run(client, new PrintWriter(out, true), new PrintWriter(err, true));
      assertEquals(ExitCodes.FAILURE, code);
    }
    assertTrue(out.toString().contains("snapshot"), out.toString());
    assertTrue(err.toString().contains("did not answer in time"), err.toString());
  }

  @Test
  void aFollowedStream_mustStartWithinItsDeadline_thenMayWaitLonger() throws Exception {
    serve((ex, n) -> {
      ex.request();
      if (n == 0) {
        ex.drain(); // wedged: not even headers
        return;
      }
      ex.okHeaders();
      ex.message(ANSWER);
      // Real time is the point: the deadline is the real clock's. Longer than the first answer's deadline:
      new java.util.concurrent.CountDownLatch(1).await(2500, TimeUnit.MILLISECONDS);
      ex.message(ANSWER);
      ex.trailers(0, null);
    });
    try (GrpcCall wedged = GrpcCall.follow(server.socket(), METHOD, new byte[0], Duration.ofMillis(500))) {
      StatusRuntimeException e = assertThrows(StatusRuntimeException.class, wedged::next);
      assertEquals(Status.Code.DEADLINE_EXCEEDED, e.getStatus().getCode());
      assertTrue(e.getStatus().getDescription().contains("did not start answering"), e.toString());
    }
    // 2 s to start answering (a loaded machine), then 2.5 s of silence between two messages: no deadline then.
    try (GrpcCall stream = GrpcCall.follow(server.socket(), METHOD, new byte[0], Duration.ofSeconds(2))) {
      assertArrayEquals(ANSWER, stream.next());
      assertArrayEquals(ANSWER, stream.next());
      assertNull(stream.next());
    }
  }

  private static byte[] concat(byte[]... parts) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }
}
