package dev.csisupervisor.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;

class TestSeedTest {
  @Test
  void unsetOrEmpty_isTheFixedDefault() {
    assertEquals(TestSeed.DEFAULT, TestSeed.parse(null));
    assertEquals(TestSeed.DEFAULT, TestSeed.parse(""));
  }

  @Test
  void aNumber_isThatSeed() {
    assertEquals(42L, TestSeed.parse("42"));
    assertEquals(-7L, TestSeed.parse(" -7 "));
  }

  @Test
  void random_drawsAFreshSeed() {
    Set<Long> drawn = new HashSet<>();
    for (int i = 0; i < 5; i++) {
      drawn.add(TestSeed.parse("random"));
    }
    assertTrue(drawn.size() > 1, "five draws, one value: " + drawn);
  }

  @Test
  void anythingElse_isRejectedNamingTheProperty() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TestSeed.parse("fixed"));
    assertTrue(e.getMessage().contains("csi.test.seed") && e.getMessage().contains("'fixed'"), e.getMessage());
  }

  @Test
  void aFailure_carriesTheSeedAndTheFlagThatReplaysIt() {
    AssertionError failure = new AssertionError("boom");
    assertSame(failure, TestSeed.OnFailure.withSeed("[test:x]", failure));
    assertEquals(1, failure.getSuppressed().length);
    String note = failure.getSuppressed()[0].getMessage();
    assertTrue(note.contains("[test:x]") && note.contains("-Dcsi.test.seed=" + TestSeed.value()), note);
  }

  @Test
  void anAbortedTest_isLeftAlone() {
    TestAbortedException aborted = new TestAbortedException("no etcd");
    assertSame(aborted, TestSeed.OnFailure.withSeed("[test:y]", aborted));
    assertEquals(0, aborted.getSuppressed().length);
  }
}
