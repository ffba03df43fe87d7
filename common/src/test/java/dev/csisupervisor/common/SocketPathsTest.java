package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class SocketPathsTest {
  private static final Path EXACTLY_107 = Path.of("/" + "s".repeat(106));
  private static final Path BYTES_108 = Path.of("/" + "s".repeat(107));

  @Test
  void pathOfExactly107Bytes_fits() {
    assertEquals(107, SocketPaths.lengthBytes(EXACTLY_107));
    assertTrue(SocketPaths.fits(EXACTLY_107));
    assertSame(EXACTLY_107, SocketPaths.checkLength("socket", EXACTLY_107));
  }

  @Test
  void pathOf108Bytes_doesNotFit_andTheMessageNamesFieldPathAndLengths() {
    assertFalse(SocketPaths.fits(BYTES_108));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> SocketPaths.checkLength("externalSocket", BYTES_108));
    assertEquals("externalSocket " + BYTES_108
        + " is 108 bytes, over the unix socket limit of 107 bytes", e.getMessage());
  }

  @Test
  void lengthCountsUtf8Bytes_notCharacters() {
    // "/" + 35 three-byte characters + "ab": 108 bytes in only 38 characters.
    Path multibyte = Path.of("/" + "\u20ac".repeat(35) + "ab");
    assertEquals(38, multibyte.toString().length());
    assertEquals(108, SocketPaths.lengthBytes(multibyte));
    assertFalse(SocketPaths.fits(multibyte));
  }
}
