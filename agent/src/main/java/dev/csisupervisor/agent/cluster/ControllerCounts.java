package dev.csisupervisor.agent.cluster;

import java.util.concurrent.atomic.AtomicLong;

/** The controller agent's counts (for metrics and status) and its last error. Thread-safe. */
final class ControllerCounts {
  private final AtomicLong publishes = new AtomicLong();
  private final AtomicLong unpublishes = new AtomicLong();
  private final AtomicLong fenced = new AtomicLong();
  private final AtomicLong creates = new AtomicLong();
  private final AtomicLong deletes = new AtomicLong();
  private volatile String lastError = "";

  void published() {
    publishes.incrementAndGet();
  }

  void unpublished() {
    unpublishes.incrementAndGet();
  }

  void fenced(int claims) {
    fenced.addAndGet(claims);
  }

  void created() {
    creates.incrementAndGet();
  }

  void deleted() {
    deletes.incrementAndGet();
  }

  void error(String message) {
    lastError = message;
  }

  String lastError() {
    return lastError;
  }

  ClusterController.Counts snapshot() {
    return new ClusterController.Counts(publishes.get(), unpublishes.get(), fenced.get(), creates.get(),
        deletes.get(), lastError);
  }
}
