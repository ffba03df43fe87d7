package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

class PrintableTest {
  @Test
  void textWithoutControlCharacters_isReturnedAsItIs() {
    String text = "plügin /run/csi.sock";
    assertSame(text, Printable.escape(text));
  }

  @Test
  void controlCharactersAndLineSeparators_areEscaped_soTheTextStaysOneLine() {
    assertEquals("a\\u000ab\\u000dc\\u0009d", Printable.escape("a\nb\rc\td"));
    assertEquals("\\u001b[2J\\u007f\\u0085", Printable.escape("\u001b[2J\u007f\u0085"));
    assertEquals("x\\u2028y\\u2029z", Printable.escape("x\u2028y\u2029z"));
  }

  @Test
  void quote_escapesAndQuotes_soBlankAndEmptyTextAreVisible() {
    assertEquals("''", Printable.quote(""));
    assertEquals("' '", Printable.quote(" "));
    assertEquals("'a\\u0000b'", Printable.quote("a\u0000b"));
    assertEquals("null", Printable.quote(null));
  }
}
