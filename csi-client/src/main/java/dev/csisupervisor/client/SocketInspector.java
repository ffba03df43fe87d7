package dev.csisupervisor.client;

import dev.csisupervisor.common.SocketPaths;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

/**
 * Looks at a socket path without gRPC, to say precisely what is wrong with it: the path is too
 * long, missing, something other than a socket, not accessible, or nobody is listening.
 */
final class SocketInspector {
  private SocketInspector() {}

  private static final int S_IFMT = 0170000;
  private static final int S_IFSOCK = 0140000;

  /** stat fails with EACCES only when a directory on the way may not be searched. */
  static final String LOOKUP_DENIED = "cannot look up the path: a parent directory is not searchable";

  /**
   * The absolute form of {@code socket}, checked against the unix address limit.
   *
   * @throws IllegalArgumentException if the path is empty
   */
  static Path validate(Path socket) throws SocketPathTooLongException {
    if (socket.toString().isEmpty()) {
      throw new IllegalArgumentException("socket must not be empty, got ''");
    }
    Path absolute = socket.toAbsolutePath();
    if (!SocketPaths.fits(absolute)) {
      throw new SocketPathTooLongException(absolute);
    }
    return absolute;
  }

  /**
   * Stats the path (following symlinks); connects to nothing.
   *
   * @throws SocketNotFoundException if nothing is there
   * @throws NotASocketException if something other than a socket is there
   * @throws SocketPermissionException if the path cannot be looked up
   */
  static void inspect(Path socket)
      throws SocketNotFoundException, NotASocketException, SocketPermissionException {
    int mode;
    try {
      mode = (Integer) Files.getAttribute(socket, "unix:mode");
    } catch (NoSuchFileException e) {
      throw new SocketNotFoundException(socket, null);
    } catch (AccessDeniedException e) {
      throw new SocketPermissionException(socket, LOOKUP_DENIED);
    } catch (FileSystemException e) {
      // ENOTDIR (a parent is a file), ELOOP (symlink loop), ...: the socket cannot be there.
      throw new SocketNotFoundException(socket, reason(e));
    } catch (UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
      inspectPortably(socket);
      return;
    } catch (IOException e) {
      throw new SocketNotFoundException(socket, "cannot stat the path: " + e);
    }
    if ((mode & S_IFMT) != S_IFSOCK) {
      throw new NotASocketException(socket, fileType(mode));
    }
  }

  /** For file systems without the "unix" attribute view: sockets count as "other". */
  private static void inspectPortably(Path socket)
      throws SocketNotFoundException, NotASocketException, SocketPermissionException {
    BasicFileAttributes attributes;
    try {
      attributes = Files.readAttributes(socket, BasicFileAttributes.class);
    } catch (NoSuchFileException e) {
      throw new SocketNotFoundException(socket, null);
    } catch (AccessDeniedException e) {
      throw new SocketPermissionException(socket, LOOKUP_DENIED);
    } catch (IOException e) {
      throw new SocketNotFoundException(socket, "cannot stat the path: " + e);
    }
    if (attributes.isRegularFile()) {
      throw new NotASocketException(socket, "a regular file");
    }
    if (attributes.isDirectory()) {
      throw new NotASocketException(socket, "a directory");
    }
  }

  /** What a file of this {@code st_mode} is, with an article. */
  static String fileType(int mode) {
    return switch (mode & S_IFMT) {
      case S_IFSOCK -> "a socket";
      case 0100000 -> "a regular file";
      case 0040000 -> "a directory";
      case 0120000 -> "a symbolic link";
      case 0010000 -> "a FIFO (named pipe)";
      case 0020000 -> "a character device";
      case 0060000 -> "a block device";
      default -> "a file of unknown type (mode 0" + Integer.toOctalString(mode) + ")";
    };
  }

  /**
   * Connects to the socket with plain java.nio (non-blocking, closed at once) to tell "nothing
   * listening" from "something accepts connections"; empty if something accepts (or the listen
   * queue is full, which also means a listener exists).
   */
  static Optional<CsiException> tryConnect(Path socket, String method) {
    try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      channel.configureBlocking(false);
      channel.connect(UnixDomainSocketAddress.of(socket));
      return Optional.empty();
    } catch (IOException e) {
      return classifyConnectError(socket, method, e);
    }
  }

  /**
   * An HTTP/2 client's first bytes (RFC 9113 3.4): the connection preface, then an empty SETTINGS frame
   * (length 0, type 4, no flags, stream 0).
   */
  private static final byte[] HTTP2_CLIENT_PREFACE =
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0".getBytes(StandardCharsets.ISO_8859_1);

  /**
   * What the peer on {@code socket} answers to an HTTP/2 client's preface: its first {@code max}
   * bytes (fewer if it closes sooner), read within {@code timeout}. An HTTP/2 server answers with a
   * SETTINGS frame; an HTTP/1 server with "HTTP/". Empty if nothing could be read (refused, closed
   * at once, silent).
   */
  static Optional<byte[]> answerToHttp2Preface(Path socket, int max, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        Selector selector = Selector.open()) {
      channel.connect(UnixDomainSocketAddress.of(socket));
      ByteBuffer preface = ByteBuffer.wrap(HTTP2_CLIENT_PREFACE);
      while (preface.hasRemaining()) {
        channel.write(preface);
      }
      channel.configureBlocking(false);
      channel.register(selector, SelectionKey.OP_READ);
      ByteBuffer answer = ByteBuffer.allocate(max);
      while (answer.hasRemaining()) {
        long leftMillis = (deadline - System.nanoTime()) / 1_000_000;
        if (leftMillis <= 0 || selector.select(leftMillis) == 0 && System.nanoTime() >= deadline) {
          break;
        }
        selector.selectedKeys().clear();
        if (channel.read(answer) < 0) {
          break;
        }
      }
      return answer.position() == 0 ? Optional.empty() : Optional.of(Arrays.copyOf(answer.array(), answer.position()));
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /**
   * The socket-level meaning of a failed connect, found in {@code failure} or its causes: ENOENT,
   * ECONNREFUSED, EACCES, EPROTOTYPE. Works on Netty's native exceptions (whose messages carry the
   * strerror text) and on java.nio's. Empty if none of these.
   */
  static Optional<CsiException> classifyConnectError(Path socket, String method, Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
      String message = t.getMessage() == null ? "" : t.getMessage();
      if (t instanceof FileNotFoundException
          || t instanceof NoSuchFileException
          || message.contains("No such file or directory")) {
        return Optional.of(new SocketNotFoundException(socket, null));
      }
      if (message.contains("Connection refused")) {
        return Optional.of(new ConnectionRefusedException(socket));
      }
      if (message.contains("Permission denied") || t instanceof AccessDeniedException) {
        return Optional.of(new SocketPermissionException(socket, "connect: Permission denied"));
      }
      if (message.contains("Protocol wrong type for socket")) {
        return Optional.of(new NotCsiServerException(socket, method,
            "it is not a stream socket (connect: Protocol wrong type for socket)"));
      }
    }
    return Optional.empty();
  }

  private static String reason(FileSystemException e) {
    return e.getReason() == null ? e.getClass().getSimpleName() : e.getReason();
  }
}
