package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertSame;

import java.io.IOException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

class FuturesTest {
  @Test
  void unwrap_takesOffEveryFutureWrapper_andNothingElse() {
    IOException cause = new IOException("disk full");
    assertSame(cause, Futures.unwrap(new CompletionException(new ExecutionException(cause))));
    assertSame(cause, Futures.unwrap(cause));
    IllegalStateException notAWrapper = new IllegalStateException(cause);
    assertSame(notAWrapper, Futures.unwrap(new CompletionException(notAWrapper)));
    CompletionException empty = new CompletionException("no cause", null);
    assertSame(empty, Futures.unwrap(empty));
  }
}
