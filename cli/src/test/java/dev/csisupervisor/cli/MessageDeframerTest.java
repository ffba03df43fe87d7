package dev.csisupervisor.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.util.List;
import org.junit.jupiter.api.Test;

/** gRPC's length-prefixed messages out of DATA cut anywhere: prefixes split, empty messages, the maximum. */
class MessageDeframerTest {
  private static final List<byte[]> MESSAGES = List.of(new byte[0], "a".getBytes(), new byte[0],
      "hello, world".getBytes(), new byte[300]);

  private static byte[] stream() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    MESSAGES.forEach(m -> out.writeBytes(FakeHttp2Server.grpcMessage(m)));
    return out.toByteArray();
  }

  @Test
  void messagesCutAtEveryPair_ofOffsets_comeOutWholeAndInOrder() {
    byte[] all = stream();
    for (int first = 0; first <= all.length; first++) {
      for (int second = first; second <= all.length; second += 7) {
        MessageDeframer d = new MessageDeframer(1024);
        d.write(all, 0, first);
        d.write(all, first, second);
        d.write(all, second, all.length);
        for (byte[] m : MESSAGES) {
          assertArrayEquals(m, d.poll(), "cut at " + first + " and " + second);
        }
        assertNull(d.poll());
        assertFalse(d.partial());
      }
    }
  }

  @Test
  void aMessageCutShort_isPartial() {
    MessageDeframer d = new MessageDeframer(1024);
    byte[] m = FakeHttp2Server.grpcMessage("abc".getBytes());
    d.write(m, 0, 3);
    assertTrue(d.partial(), "inside the prefix");
    d.write(m, 3, 6);
    assertTrue(d.partial(), "inside the message");
    assertFalse(d.hasMessage());
    d.write(m, 6, m.length);
    assertFalse(d.partial());
    assertArrayEquals("abc".getBytes(), d.poll());
  }

  @Test
  void aMessageOfTheMaximum_isTaken_oneByteMoreIsResourceExhausted_beforeItsBytesCome() {
    MessageDeframer d = new MessageDeframer(8);
    byte[] m = FakeHttp2Server.grpcMessage(new byte[8]);
    d.write(m, 0, m.length);
    assertEquals(8, d.poll().length);
    byte[] over = FakeHttp2Server.grpcMessage(new byte[9]);
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> d.write(over, 0, 5));
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, e.getStatus().getCode());
  }
}
