package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class ByteSizesTest {
  @Test
  void eachSize_isWrittenInTheLargestBinaryUnitItReaches() {
    assertEquals("0 B", ByteSizes.format(0));
    assertEquals("1023 B", ByteSizes.format(1023));
    assertEquals("1.0 KiB", ByteSizes.format(1024));
    assertEquals("1.5 KiB", ByteSizes.format(1536));
    assertEquals("48.0 MiB", ByteSizes.format(48L << 20));
    assertEquals("2.0 GiB", ByteSizes.format(2L << 30));
  }

  @Test
  void sizes_parseBinaryUnits() {
    assertEquals(10L * 1024 * 1024, ByteSizes.parse("10MiB"));
    assertEquals(2048, ByteSizes.parse("2k"));
    assertEquals(1L << 30, ByteSizes.parse("1GiB"));
    assertEquals(123, ByteSizes.parse("123"));
    assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("99999999999999999999"));
    assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("1TiB"));
    assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse("9999999999999GiB"), "overflow when multiplied");
    for (String bad : new String[] {"", " ", "1.5MiB", "-1", "MiB", "10 MiB extra"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ByteSizes.parse(bad), bad);
      assertEquals("'" + bad + "' is not a size (use bytes or 512KiB, 10MiB, 1GiB)", e.getMessage());
    }
  }
}
