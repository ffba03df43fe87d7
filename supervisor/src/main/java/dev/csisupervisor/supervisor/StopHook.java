package dev.csisupervisor.supervisor;

/** Runs when the task stops for good. Idempotent, and safe before poststart ever ran. */
@FunctionalInterface
public interface StopHook {
  void stop(StopRequest request);
}
