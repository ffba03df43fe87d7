package dev.csisupervisor.cli;

import io.grpc.Status;
import java.util.ArrayDeque;

/**
 * gRPC's length-prefixed messages (a compression flag, a 4-byte length, the bytes) out of a call's DATA, as it
 * comes: each byte is copied once, into the array of its message, whose length is known from its prefix, so an
 * answer costs memory and time linear in its size. Not thread-safe (one call's).
 */
final class MessageDeframer {
  private final int maxMessage;
  private final byte[] prefix = new byte[5];
  private int prefixRead;
  /** The message being filled, or null between messages. */
  private byte[] message;
  private int messageRead;
  private final ArrayDeque<byte[]> messages = new ArrayDeque<>();

  /** A deframer that refuses a message over {@code maxMessage} bytes. */
  MessageDeframer(int maxMessage) {
    this.maxMessage = maxMessage;
  }

  /**
   * Takes DATA bytes.
   *
   * @throws io.grpc.StatusRuntimeException {@code RESOURCE_EXHAUSTED} for a message over the maximum,
   *     {@code INTERNAL} for a compressed one (never asked for)
   */
  void write(byte[] b, int from, int to) {
    int at = from;
    while (at < to) {
      if (message == null) {
        int n = Math.min(prefix.length - prefixRead, to - at);
        System.arraycopy(b, at, prefix, prefixRead, n);
        prefixRead += n;
        at += n;
        if (prefixRead < prefix.length) {
          return;
        }
        startMessage();
        if (message == null) {
          continue; // an empty message: whole already
        }
      }
      int n = Math.min(message.length - messageRead, to - at);
      System.arraycopy(b, at, message, messageRead, n);
      messageRead += n;
      at += n;
      if (messageRead == message.length) {
        messages.add(message);
        message = null;
      }
    }
  }

  private void startMessage() {
    prefixRead = 0;
    if (prefix[0] != 0) {
      throw GrpcStatuses.internal("the agent sent a compressed message, which was not asked for");
    }
    long length = Integer.toUnsignedLong(Http2Socket.readInt(prefix, 1));
    if (length > maxMessage) {
      throw Status.RESOURCE_EXHAUSTED.withDescription("an answer of " + length + " bytes, over the "
          + maxMessage + " taken").asRuntimeException();
    }
    message = new byte[(int) length];
    messageRead = 0;
    if (length == 0) {
      messages.add(message);
      message = null;
    }
  }

  /** The next whole message, or null. */
  byte[] poll() {
    return messages.poll();
  }

  boolean hasMessage() {
    return !messages.isEmpty();
  }

  /** Whether the bytes taken end inside a message. */
  boolean partial() {
    return prefixRead > 0 || message != null;
  }
}
