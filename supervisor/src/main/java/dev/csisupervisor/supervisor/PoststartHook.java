package dev.csisupervisor.supervisor;

/** Runs after the task started. Calling it again while supervision runs changes nothing. */
@FunctionalInterface
public interface PoststartHook {
  void poststart(PoststartRequest request);
}
