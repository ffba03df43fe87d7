package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class PluginIdsTest {
  @Test
  void lettersDigitsDotsUnderscoresAndDashes_upTo128_areValid() {
    for (String id : new String[] {"a", "ebs", "hostpath.csi.k8s.io", "A_b-9", "...", ".hidden",
        "x".repeat(128)}) {
      assertTrue(PluginIds.isValid(id), id);
      assertEquals(Optional.empty(), PluginIds.problem(id), id);
    }
  }

  @Test
  void dotAndDotDot_couldEscapeThePluginRoot() {
    assertFalse(PluginIds.isValid("."));
    assertFalse(PluginIds.isValid(".."));
    assertEquals("must not be '.' or '..' or contain '/' (it could escape the plugin root),"
        + " got '..'", PluginIds.problem("..").orElseThrow());
    assertEquals("must not be '.' or '..' or contain '/' (it could escape the plugin root),"
        + " got '../etc'", PluginIds.problem("../etc").orElseThrow());
  }

  @Test
  void emptyNullAndTooLong_areInvalid_withTheirOwnReason() {
    assertFalse(PluginIds.isValid(null));
    assertEquals("must not be null", PluginIds.problem(null).orElseThrow());
    assertFalse(PluginIds.isValid(""));
    assertEquals("must not be empty", PluginIds.problem("").orElseThrow());
    assertFalse(PluginIds.isValid("x".repeat(129)));
    assertEquals("must be at most 128 characters, got 129",
        PluginIds.problem("x".repeat(129)).orElseThrow());
  }

  @Test
  void otherCharacters_areInvalid_andTheValueIsPrintedEscaped() {
    for (String id : new String[] {"my plugin", "plügin", "a;b", "a\\b", "a\u0000b"}) {
      assertFalse(PluginIds.isValid(id), id);
    }
    assertEquals("must be 1 to 128 of A-Z a-z 0-9 . _ -, got 'a\\u001b[2J'",
        PluginIds.problem("a\u001b[2J").orElseThrow());
  }
}
