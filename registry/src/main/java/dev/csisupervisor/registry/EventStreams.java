package dev.csisupervisor.registry;

import dev.csisupervisor.registry.PluginEvent.Kind;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

/**
 * The registry's event streams: per plugin type, one total order of events (the last sequence number) and the
 * live subscribers, each with its own bounded queue ({@link Subscriber}). Publishing numbers an event and offers it
 * to every subscriber of its type without running listener code; a subscriber that is full (lagged) or ended is
 * dropped from the list, and its own drain tells its listener.
 *
 * <p>Guarded by the registry's {@code stateLock}: every method is called with it held, except that the committer,
 * the only one that changes the sequences, reads {@link #lastSequence} without it. Not thread-safe on its own.
 */
final class EventStreams {
  private final Subscriber.Limits limits;
  private final Map<PluginType, Long> sequences; // guarded by stateLock; changed only by the committer
  private final Map<PluginType, List<Subscriber>> subscribers = new EnumMap<>(PluginType.class); // guarded by stateLock

  /**
   * @param sequences the last sequence of every type, as restored; taken over
   * @param maxBacklog how many undelivered events a subscriber may have before it is dropped as lagged
   * @param closeTimeout how long a subscriber's close waits for a delivery in flight
   */
  EventStreams(Map<PluginType, Long> sequences, int maxBacklog, Duration closeTimeout) {
    this.sequences = sequences;
    this.limits = new Subscriber.Limits(maxBacklog, closeTimeout);
    for (PluginType t : PluginType.values()) {
      subscribers.put(t, new ArrayList<>());
    }
  }

  /** The sequence of the last event of {@code type} (0 before the first). */
  long lastSequence(PluginType type) {
    return sequences.get(type);
  }

  /**
   * Numbers the next event of the plugin's type and queues it for every subscriber of that type; adds each of them
   * to {@code touched} (the caller schedules their drains once the locks are released).
   */
  PluginEvent publish(Kind kind, PluginInfo info, Instant now, Set<Subscriber> touched) {
    long seq = sequences.merge(info.type(), 1L, Long::sum);
    PluginEvent event = new PluginEvent(seq, info.type(), kind, info, now);
    List<Subscriber> subs = subscribers.get(info.type());
    subs.removeIf(s -> {
      touched.add(s);
      return !s.offer(event); // lagged now: drop it from the list, the drain tells its listener
    });
    return event;
  }

  /**
   * A new subscriber of {@code type} whose stream starts after the current last sequence, with {@code snapshot} as
   * what it starts from. {@code unregister} is called when it closes itself: it must take {@code stateLock} and
   * call {@link #remove}.
   */
  Subscriber add(PluginType type, PluginListener listener, Executor executor, List<PluginInfo> snapshot,
      Consumer<Subscriber> unregister) {
    Subscriber s = new Subscriber(type, listener, executor, limits,
        new Subscriber.Start(snapshot, sequences.get(type)), unregister);
    subscribers.get(type).add(s);
    return s;
  }

  void remove(Subscriber s) {
    subscribers.get(s.type()).remove(s);
  }

  /**
   * Ends every subscriber (no delivery, no waiting) and forgets them all; returns them, so that the caller can wait
   * for deliveries in flight and deliver their ending once {@code stateLock} is released.
   */
  List<Subscriber> endAll() {
    List<Subscriber> all = new ArrayList<>();
    for (List<Subscriber> subs : subscribers.values()) {
      for (Subscriber s : subs) {
        s.end();
        all.add(s);
      }
      subs.clear();
    }
    return all;
  }
}
