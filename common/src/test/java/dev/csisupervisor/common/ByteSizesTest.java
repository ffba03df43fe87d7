package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
