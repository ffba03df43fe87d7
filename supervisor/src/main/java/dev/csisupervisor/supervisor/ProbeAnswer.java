package dev.csisupervisor.supervisor;

/**
 * One probe's outcome as the supervision state machine reads it: ready or not and, if not, why (the message
 * recorded as the plugin's last error, and its kind, as {@link ProbeFailures#kind} names it).
 *
 * @param ok the plugin answered and said it is ready
 * @param problem empty if {@code ok}; else the failure's message, or that the plugin reports not ready
 * @param kind empty if {@code ok}; else the failure's kind
 */
record ProbeAnswer(boolean ok, String problem, String kind) {
  /** The outcome of a probe that answered {@code ready} or failed with {@code error} (one of them null). */
  static ProbeAnswer of(Boolean ready, Throwable error) {
    boolean ok = error == null && Boolean.TRUE.equals(ready);
    String problem = error != null ? ProbeFailures.describe(error) : (ok ? "" : "plugin reports not ready");
    return new ProbeAnswer(ok, problem, ProbeFailures.kind(ok, error));
  }
}
