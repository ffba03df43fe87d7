package dev.csisupervisor.volumes;

import dev.csisupervisor.common.Futures;
import java.util.ArrayList;
import java.util.List;

/**
 * Progress of one settle ({@link VolumeSettler#settle}): the record as the steps so far have made it, what to
 * report once it is committed, what is left. Used by one settle at a time, on the volume's lane; not thread-safe.
 */
final class SettleProgress {
  VolumeRecord record;
  /** Log lines and listener events, run once the record is committed. */
  final List<Runnable> events = new ArrayList<>();
  /** What could not be done, each in words; nothing left undone: empty. */
  final List<String> left = new ArrayList<>();
  /** Whether something left may succeed on its own with time (a failed call): then a timer is set. */
  boolean retry;

  SettleProgress(VolumeRecord record) {
    this.record = record;
  }

  /** {@code what} failed with {@code why}: left undone, and tried again later. */
  void failed(String what, Throwable why) {
    Throwable t = Futures.unwrap(why);
    left.add(what + ": " + t.getMessage());
    retry = true;
  }
}
