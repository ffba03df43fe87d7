package dev.csisupervisor.common;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** What a failed future failed with. Stateless. */
public final class Futures {
  private Futures() {}

  /**
   * The failure itself, out of the {@link CompletionException} and {@link ExecutionException} wrappers that
   * futures put around it (a wrapper without a cause is returned as it is).
   */
  public static Throwable unwrap(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
