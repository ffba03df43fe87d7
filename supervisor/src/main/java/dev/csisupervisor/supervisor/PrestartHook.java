package dev.csisupervisor.supervisor;

import java.io.IOException;

/** Runs before the task starts, on every start including restarts. Must be idempotent. */
@FunctionalInterface
public interface PrestartHook {
  PrestartResponse prestart(PrestartRequest request) throws IOException;
}
