package dev.csisupervisor.tests;

import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

/**
 * One subscriber's reconstruction of one plugin type: the subscription's snapshot with every later event applied,
 * checking the event contract on the way:
 * <ul>
 *   <li>sequences are gapless: each event is exactly one after the previous (or the snapshot);
 *   <li>REGISTERED only for a key the view does not hold, UPDATED and DEREGISTERED only for one it holds;
 *   <li>an UPDATED changes content ({@link PluginInfo#sameContentAs}); a DEREGISTERED carries what was removed.
 * </ul>
 * A violation is recorded (and handed to {@code onProblem}), never thrown into the registry's delivery.
 *
 * <p>Events can arrive (on another executor) before {@code subscribe} has returned the snapshot: they are held
 * back until {@link #subscribe} applied the snapshot. If the subscription lags, the view re-subscribes and
 * starts over from the new snapshot, as the contract tells a lagged subscriber to.
 *
 * <p>Thread-safe: every method holds the view's monitor.
 */
final class RegistryView implements PluginListener {
  private final PluginType type;
  private final Consumer<String> onProblem;
  private final Map<PluginKey, PluginInfo> content = new HashMap<>();
  private final List<PluginEvent> early = new ArrayList<>();
  private final List<String> problems = new ArrayList<>();
  private PluginRegistry registry;
  private Executor executor;
  private Subscription subscription;
  private boolean initialized;
  private long lastSequence;
  private long events;
  private int lags;
  private boolean closed;

  RegistryView(PluginType type, Consumer<String> onProblem) {
    this.type = type;
    this.onProblem = onProblem;
  }

  /** Subscribes to {@code registry} on {@code executor} and applies the snapshot. */
  synchronized RegistryView subscribe(PluginRegistry registry, Executor executor) {
    this.registry = registry;
    this.executor = executor;
    initialized = false;
    early.clear();
    Subscription s = registry.subscribe(type, this, executor);
    subscription = s;
    content.clear();
    for (PluginInfo p : s.snapshot()) {
      if (p.type() != type) {
        problem("snapshot holds a " + p.type() + " plugin: " + p.key());
      }
      if (content.put(p.key(), p) != null) {
        problem("snapshot holds key " + p.key() + " twice");
      }
    }
    lastSequence = s.snapshotSequence();
    initialized = true;
    List<PluginEvent> held = new ArrayList<>(early);
    early.clear();
    held.forEach(this::apply);
    return this;
  }

  @Override
  public synchronized void onEvent(PluginEvent event) {
    if (!initialized) {
      early.add(event);
      return;
    }
    apply(event);
  }

  private void apply(PluginEvent e) {
    events++;
    if (e.type() != type) {
      problem("event for " + e.type() + " delivered to a " + type + " subscriber: " + e);
    }
    if (e.sequence() <= lastSequence) {
      problem("event #" + e.sequence() + " after #" + lastSequence + " (duplicate or out of order)");
    } else if (e.sequence() != lastSequence + 1) {
      problem("gap: event #" + e.sequence() + " after #" + lastSequence);
    }
    lastSequence = e.sequence();
    PluginKey key = e.plugin().key();
    PluginInfo current = content.get(key);
    switch (e.kind()) {
      case REGISTERED -> {
        if (current != null) {
          problem("#" + e.sequence() + " REGISTERED for " + key + " which is already registered");
        }
        content.put(key, e.plugin());
      }
      case UPDATED -> {
        if (current == null) {
          problem("#" + e.sequence() + " UPDATED for unknown key " + key);
        } else if (current.sameContentAs(e.plugin())
            && !(current.restored() && !e.plugin().restored())) {
          // The one content-free UPDATED: a restored entry confirmed (restored -> false).
          problem("#" + e.sequence() + " UPDATED for " + key + " without a change of content");
        }
        content.put(key, e.plugin());
      }
      case DEREGISTERED -> {
        if (current == null) {
          problem("#" + e.sequence() + " DEREGISTERED for unknown key " + key);
        } else if (!current.sameContentAs(e.plugin())) {
          problem("#" + e.sequence() + " DEREGISTERED for " + key + " carries " + e.plugin() + " but the view held "
              + current);
        }
        content.remove(key);
      }
    }
  }

  @Override
  public void onLagged(long lastDeliveredSequence) {
    PluginRegistry r;
    Executor ex;
    synchronized (this) {
      lags++;
      if (lastDeliveredSequence != lastSequence) {
        problem("onLagged(" + lastDeliveredSequence + ") but the last event applied was #" + lastSequence);
      }
      if (closed) {
        return;
      }
      r = registry;
      ex = executor;
    }
    try {
      subscribe(r, ex);
    } catch (IllegalStateException registryClosed) {
      // the registry closed meanwhile: nothing to follow any more
    }
  }

  @Override
  public synchronized void onClosed() {
    // A lag's onClosed comes after the re-subscription above; only the registry's close ends the view.
  }

  synchronized void close() {
    closed = true;
    if (subscription != null) {
      subscription.close();
    }
  }

  private void problem(String message) {
    String m = type.id() + " view: " + message;
    problems.add(m);
    onProblem.accept(m);
  }

  synchronized Map<PluginKey, PluginInfo> content() {
    return Map.copyOf(content);
  }

  synchronized List<String> problems() {
    return List.copyOf(problems);
  }

  synchronized long lastSequence() {
    return lastSequence;
  }

  synchronized long eventCount() {
    return events;
  }

  synchronized int lags() {
    return lags;
  }

  PluginType type() {
    return type;
  }
}
