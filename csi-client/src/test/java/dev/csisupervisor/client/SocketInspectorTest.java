package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.testing.WithoutPermissionOverride;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class SocketInspectorTest extends PluginSocketTest {
  @Test
  void validate_relativePath_becomesAbsolute() throws Exception {
    Path validated = SocketInspector.validate(Path.of("csi.sock"));
    assertTrue(validated.isAbsolute());
    assertEquals(Path.of("csi.sock").toAbsolutePath(), validated);
  }

  @Test
  void validate_emptyPath_isIllegalArgument() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SocketInspector.validate(Path.of("")));
    assertEquals("socket must not be empty, got ''", e.getMessage());
  }

  @Test
  void validate_nullPath_namesTheField() {
    NullPointerException e = assertThrows(NullPointerException.class, () -> CsiClient.create(null));
    assertEquals("socket", e.getMessage());
  }

  @Test
  void validate_countsUtf8Bytes_notChars() {
    // "/" + 35 three-byte characters + "ab": 108 bytes in only 38 chars
    Path path = Path.of("/" + "€".repeat(35) + "ab");
    SocketPathTooLongException e = assertThrows(SocketPathTooLongException.class, () -> SocketInspector.validate(path));
    assertEquals(108, e.lengthBytes());
  }

  @Test
  void validate_relativePathTooLongOnceAbsolute_isRejected() {
    Path relative = Path.of("r".repeat(107));
    assertThrows(SocketPathTooLongException.class, () -> SocketInspector.validate(relative));
  }

  @Test
  void fileType_namesEveryKind() {
    assertEquals("a socket", SocketInspector.fileType(0140755));
    assertEquals("a regular file", SocketInspector.fileType(0100644));
    assertEquals("a directory", SocketInspector.fileType(0040755));
    assertEquals("a symbolic link", SocketInspector.fileType(0120777));
    assertEquals("a FIFO (named pipe)", SocketInspector.fileType(0010644));
    assertEquals("a character device", SocketInspector.fileType(0020666));
    assertEquals("a block device", SocketInspector.fileType(0060660));
    assertEquals("a file of unknown type (mode 0170000)", SocketInspector.fileType(0170000));
  }

  @Test
  void inspect_fifo_isNotASocket() throws Exception {
    Path fifo = dir.resolve("fifo");
    Process mkfifo = new ProcessBuilder("mkfifo", fifo.toString()).start();
    assertEquals(0, mkfifo.waitFor());
    NotASocketException e = assertThrows(NotASocketException.class, () -> SocketInspector.inspect(fifo));
    assertEquals("a FIFO (named pipe)", e.fileType());
  }

  @Test
  void inspect_unsearchableParent_isPermissionDenied() throws Exception {
    Path locked = dir.resolve("locked");
    Files.createDirectory(locked);
    Files.setPosixFilePermissions(locked, java.nio.file.attribute.PosixFilePermissions.fromString("---------"));
    // Root may search any directory: the inspection runs where permissions apply.
    WithoutPermissionOverride.Result r =
        WithoutPermissionOverride.run(InspectAndPrint.class, locked.resolve("csi.sock").toString());
    assertEquals(SocketPermissionException.class.getSimpleName() + ": permission denied on CSI plugin socket "
        + locked.resolve("csi.sock") + " (cannot look up the path: a parent directory is not searchable)",
        r.output(), r.toString());
  }

  /** Inspects the socket path named by its argument and prints the exception (or "fine"). */
  static final class InspectAndPrint {
    public static void main(String[] args) {
      try {
        SocketInspector.inspect(Path.of(args[0]));
        System.out.println("fine");
      } catch (CsiException e) {
        System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
      }
    }
  }

  @Test
  void inspect_brokenSymlink_isNotFound() throws Exception {
    Path link = dir.resolve("link");
    Files.createSymbolicLink(link, dir.resolve("nowhere"));
    assertThrows(SocketNotFoundException.class, () -> SocketInspector.inspect(link));
  }

  @Test
  void inspect_symlinkLoop_isNotFound_sayingWhy() throws Exception {
    Path a = dir.resolve("a");
    Files.createSymbolicLink(a, dir.resolve("b"));
    Files.createSymbolicLink(dir.resolve("b"), a);
    SocketNotFoundException e = assertThrows(SocketNotFoundException.class, () -> SocketInspector.inspect(a));
    assertTrue(e.getMessage().contains("(Too many levels of symbolic links"), e.getMessage());
  }

  @Test
  void inspect_staleSocket_passes_butConnectSaysRefused() throws Exception {
    RawSocketServer.makeStaleSocket(socket);
    SocketInspector.inspect(socket);
    assertInstanceOf(ConnectionRefusedException.class,
        SocketInspector.tryConnect(socket, "m").orElseThrow());
  }

  @Test
  void tryConnect_listeningSocket_isEmpty() throws Exception {
    startRawServer(RawSocketServer.Behaviour.SILENT);
    assertTrue(SocketInspector.tryConnect(socket, "m").isEmpty());
  }

  @Test
  void tryConnect_missingSocket_isNotFound() {
    assertInstanceOf(SocketNotFoundException.class,
        SocketInspector.tryConnect(dir.resolve("missing.sock"), "m").orElseThrow());
  }
}
