package dev.csisupervisor.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import dev.csisupervisor.testing.ShortTempDir;
import dev.csisupervisor.testing.TestSeed;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Whatever bytes the agent sends, {@link GrpcCall} gives answers or a gRPC status: never another exception, never
 * a hang. Each round a scripted server ({@link FakeHttp2Server}) on a real unix socket answers the request with
 * bytes drawn from the run's seed ({@link TestSeed}): noise, frames of every type with random flags, streams and
 * (sometimes lying) lengths, or a well-formed answer with a few bytes changed, cut or added; then it ends the
 * connection.
 */
@ExtendWith(TestSeed.OnFailure.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GrpcCallFuzzTest {
  private static final int ROUNDS = 600;
  private static final String METHOD = "csisupervisor.admin.v1.AgentAdmin/ListPlugins";

  @Test
  void anyBytesIn_giveAnswersOrAStatus_only() throws Exception {
    Random random = new Random(TestSeed.value());
    List<byte[]> answers = new ArrayList<>();
    for (int i = 0; i < ROUNDS; i++) {
      answers.add(answer(random));
    }
    try (ShortTempDir dir = new ShortTempDir("grpc-fuzz");
        FakeHttp2Server server = new FakeHttp2Server(dir.resolve("agent.sock"), (ex, n) -> {
          ex.request();
          ex.write(answers.get(n));
        })) {
      for (int round = 0; round < ROUNDS; round++) {
        try (GrpcCall call = GrpcCall.start(server.socket(), METHOD, new byte[0], Duration.ofSeconds(10))) {
          for (int m = 0; m < 1_000 && call.next() != null; m++) {
            // answers: taken and dropped
          }
        } catch (StatusRuntimeException e) {
          // The server always ends the connection: an end or a status, never a wait for our deadline (the
          // server's trailers may carry DEADLINE_EXCEEDED as any other code).
          assertFalse(e.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED
              && String.valueOf(e.getStatus().getDescription()).contains("before the deadline"), "round " + round);
        } catch (RuntimeException | Error e) {
          fail("round " + round + " ended with " + e + " for the bytes " + hex(answers.get(round)), e);
        }
      }
    }
  }

  /** One round's bytes. */
  private static byte[] answer(Random random) {
    return switch (random.nextInt(4)) {
      case 0 -> noise(random, random.nextInt(64));
      case 1 -> frames(random);
      default -> mutated(wellFormed(random), random);
    };
  }

  private static byte[] noise(Random random, int n) {
    byte[] b = new byte[n];
    random.nextBytes(b);
    return b;
  }

  /** Frames of any type, flags and stream; payloads of any bytes; lengths that are sometimes lies. */
  private static byte[] frames(Random random) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (random.nextBoolean()) {
      out.writeBytes(okHeaders());
    }
    for (int i = random.nextInt(6); i >= 0; i--) {
      int type = random.nextInt(12);
      int flags = random.nextInt(4) == 0 ? random.nextInt(256) : new int[] {0, 1, 4, 5, 8, 0x20}[random.nextInt(6)];
      int stream = new int[] {0, 1, 1, 1, 2, 3, 0x7fffffff}[random.nextInt(7)];
      byte[] payload = type == Http2Socket.HEADERS || type == Http2Socket.CONTINUATION ? hpackish(random)
          : noise(random, new int[] {0, 1, 3, 4, 5, 6, 8, 12, 40}[random.nextInt(9)]);
      int declared = random.nextInt(8) == 0 ? random.nextInt(1 << 24) : payload.length;
      out.writeBytes(FakeHttp2Server.frame(type, flags, stream, payload, declared));
    }
    return out.toByteArray();
  }

  /** Header-block-like bytes: indexes, literals and integers with long continuations, or noise. */
  private static byte[] hpackish(Random random) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int i = random.nextInt(5); i >= 0; i--) {
      switch (random.nextInt(4)) {
        case 0 -> out.write(0x80 | random.nextInt(128));
        case 1 -> out.writeBytes(FakeHttp2Server.block("grpc-status", "" + random.nextInt(20)));
        case 2 -> {
          out.write(0xff);
          for (int k = random.nextInt(7); k > 0; k--) {
            out.write(0x80 | random.nextInt(128));
          }
          out.write(random.nextInt(128));
        }
        default -> out.writeBytes(noise(random, random.nextInt(10)));
      }
    }
    return out.toByteArray();
  }

  private static byte[] okHeaders() {
    byte[] block = FakeHttp2Server.block(":status", "200", "content-type", "application/grpc");
    return FakeHttp2Server.frame(Http2Socket.HEADERS, Http2Socket.END_HEADERS, 1, block, block.length);
  }

  /** SETTINGS, headers, a few messages, trailers: what a good agent sends. */
  private static byte[] wellFormed(Random random) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] settings = {0, 4, 0, 1, 0, 0, 0, 5, 0, 0, 0x40, 0};
    out.writeBytes(FakeHttp2Server.frame(Http2Socket.SETTINGS, 0, 0, settings, settings.length));
    out.writeBytes(okHeaders());
    for (int i = random.nextInt(4); i > 0; i--) {
      byte[] m = FakeHttp2Server.grpcMessage(noise(random, random.nextInt(30)));
      out.writeBytes(FakeHttp2Server.frame(Http2Socket.DATA, 0, 1, m, m.length));
    }
    byte[] trailers = FakeHttp2Server.block("grpc-status", "" + random.nextInt(17), "grpc-message", "a%20b");
    out.writeBytes(FakeHttp2Server.frame(Http2Socket.HEADERS, Http2Socket.END_HEADERS | Http2Socket.END_STREAM, 1,
        trailers, trailers.length));
    return out.toByteArray();
  }

  /** {@code b} with a few bytes changed, a piece cut out, or noise put in. */
  private static byte[] mutated(byte[] b, Random random) {
    byte[] m = b.clone();
    for (int i = 1 + random.nextInt(3); i > 0; i--) {
      switch (random.nextInt(3)) {
        case 0 -> m[random.nextInt(m.length)] = (byte) random.nextInt(256);
        case 1 -> {
          int at = random.nextInt(m.length);
          int n = random.nextInt(Math.min(8, m.length - at) + 1);
          byte[] cut = new byte[m.length - n];
          System.arraycopy(m, 0, cut, 0, at);
          System.arraycopy(m, at + n, cut, at, m.length - at - n);
          m = cut.length == 0 ? m : cut;
        }
        default -> {
          int at = random.nextInt(m.length + 1);
          byte[] extra = noise(random, 1 + random.nextInt(4));
          byte[] grown = new byte[m.length + extra.length];
          System.arraycopy(m, 0, grown, 0, at);
          System.arraycopy(extra, 0, grown, at, extra.length);
          System.arraycopy(m, at, grown, at + extra.length, m.length - at);
          m = grown;
        }
      }
    }
    return m;
  }

  private static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) {
      s.append(String.format("%02x", x));
    }
    return s.toString();
  }
}
