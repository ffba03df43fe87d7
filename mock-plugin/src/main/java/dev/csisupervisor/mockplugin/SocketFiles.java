package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.SocketPaths;
import java.io.IOException;
import java.net.ConnectException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;

/** What the plugin does to the file system around its socket: check the path, prepare, clean up, leave stale. */
final class SocketFiles {

  private static final int S_IFMT = 0170000;
  private static final int S_IFSOCK = 0140000;

  private SocketFiles() {
  }

  /** The absolute, normalized socket path, refusing paths the kernel cannot bind. */
  static Path checkedPath(Path socket) {
    Objects.requireNonNull(socket, "socket");
    Path absolute = socket.toAbsolutePath().normalize();
    if (absolute.getParent() == null) {
      throw new IllegalArgumentException("socket must name a file, not the root: " + socket);
    }
    return SocketPaths.checkLength("socket path", absolute);
  }

  /**
   * Makes {@code socket} bindable: checks (or creates, if told) its parent directory and removes a
   * stale socket file. Anything else at the path — a regular file, a directory, a symbolic link, a
   * socket that still accepts connections — is left alone and reported.
   */
  static void prepare(Path socket, boolean createParentDirs) throws IOException {
    Path parent = socket.getParent();
    if (!Files.isDirectory(parent)) {
      if (Files.exists(parent, LinkOption.NOFOLLOW_LINKS)) {
        throw new FileSystemException(parent.toString(), null,
            "parent of socket " + socket + " is not a directory");
      }
      if (!createParentDirs) {
        throw new NoSuchFileException(parent.toString(), null,
            "parent directory of socket " + socket + " does not exist (createParentDirs is off)");
      }
      Files.createDirectories(parent);
    }
    BasicFileAttributes attributes;
    try {
      attributes = Files.readAttributes(socket, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      return;
    }
    if (attributes.isSymbolicLink()) {
      throw new FileSystemException(socket.toString(), null,
          "a symbolic link is where the socket should be; refusing to replace it");
    }
    if (attributes.isDirectory()) {
      throw new FileSystemException(socket.toString(), null,
          "a directory is where the socket should be; refusing to replace it");
    }
    if (attributes.isRegularFile()) {
      throw new FileSystemException(socket.toString(), null,
          "a regular file is where the socket should be; refusing to delete it");
    }
    if (!isSocket(socket)) {
      throw new FileSystemException(socket.toString(), null,
          "a special file that is not a socket is where the socket should be; refusing to delete it");
    }
    if (accepts(socket)) {
      throw new FileSystemException(socket.toString(), null,
          "socket is in use: another server accepts connections on it");
    }
    Files.deleteIfExists(socket);
  }

  /** Whether {@code path} is a unix socket file (symbolic links are not followed). */
  static boolean isSocket(Path path) {
    try {
      int mode = (Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS);
      return (mode & S_IFMT) == S_IFSOCK;
    } catch (IOException | UnsupportedOperationException e) {
      return false;
    }
  }

  /** Removes the socket file if it is still there and still a socket; best effort. */
  static void removeSocket(Path socket) throws IOException {
    if (isSocket(socket)) {
      Files.deleteIfExists(socket);
    }
  }

  /**
   * Makes sure a socket file with nobody accepting on it exists at {@code socket}, as a killed
   * process leaves behind. Netty's server channel deletes its socket file when it closes, so after
   * an in-process "crash" the file has to be put back: binding a JDK channel and closing it does
   * that (the JDK, unlike Netty, leaves the file on close).
   */
  static void leaveStale(Path socket) throws IOException {
    if (Files.exists(socket, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      channel.bind(UnixDomainSocketAddress.of(socket));
    }
  }

  /** Whether something accepts connections on {@code socket} right now. */
  private static boolean accepts(Path socket) throws IOException {
    try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      channel.connect(UnixDomainSocketAddress.of(socket));
      return true;
    } catch (ConnectException e) {
      // ECONNREFUSED: a stale socket file, nobody listening.
      return false;
    }
  }
}
