package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.AdminProto;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.nio.channels.SocketChannel;
import java.time.Instant;

/**
 * The one-time set-up of the JDK and protobuf that an admin command will need once it has its command line parsed,
 * done meanwhile on a second thread: while the main thread builds and parses the command line (a third of a CLI
 * call), this one initialises
 * <ol>
 *   <li>the JDK's unix-domain sockets (their class initialisation makes a {@code SecureRandom}: security providers,
 *       ~10 ms),
 *   <li>protobuf's descriptors of {@code admin.proto} (parsing an answer with a map field needs them: the whole
 *       file's descriptors and protobuf's own, 15-30 ms), and
 *   <li>the time zone the tables print times in (its rules read from the JDK's database, ~5 ms).
 * </ol>
 * The same work the command would do itself, in the same JVM: a class initialisation that the main thread reaches
 * while this thread runs it waits for it (the JVM's class initialisation lock), never runs it twice. Nothing here
 * changes what a command does or prints; on a machine with one CPU it merely moves the work.
 */
final class AheadOfUse extends Thread {
  private AheadOfUse() {
    super("csi-agent-ahead-of-use");
    setDaemon(true); // the JVM does not wait for it to exit
  }

  /** Starts the thread. (A subclass rather than a lambda: no call site to link at the start of every command.) */
  static void begin() {
    new AheadOfUse().start();
  }

  @Override
  public void run() {
    // In the order a command needs them: the socket first, then the answer's parsing, then its printing.
    try (SocketChannel unused = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      // opened and closed: only the class initialisation is wanted
    } catch (IOException | UnsupportedOperationException e) {
      // the command will say what is wrong when it connects
    }
    AdminProto.getDescriptor();
    Format.time(Instant.EPOCH);
  }
}
