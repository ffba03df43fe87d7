package dev.csisupervisor.registry;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Records what a subscription delivered and rebuilds the view (key -> info) from its snapshot and events.
 * Thread-safe; also checks that calls never overlap and that sequences have no gap.
 */
class RecordingListener implements PluginListener {
  private final List<PluginEvent> events = new ArrayList<>();
  private final Map<PluginKey, PluginInfo> view = new LinkedHashMap<>();
  private final List<String> problems = new ArrayList<>();
  private long lastSequence = -1;
  private Long lagged;
  private int closedCalls;
  private boolean inCall;
  private boolean endedCalled;

  /** Seeds the view from a subscription's snapshot; call before any event can arrive or from the same thread. */
  synchronized RecordingListener start(Subscription s) {
    if (lastSequence < 0) {
      lastSequence = s.snapshotSequence();
      s.snapshot().forEach(p -> view.put(p.key(), p));
    }
    return this;
  }

  synchronized void seed(List<PluginInfo> snapshot, long snapshotSequence) {
    lastSequence = snapshotSequence;
    snapshot.forEach(p -> view.put(p.key(), p));
  }

  @Override
  public void onEvent(PluginEvent e) {
    enter();
    try {
      synchronized (this) {
        if (endedCalled) {
          problems.add("onEvent after onClosed: " + e);
        }
        if (lastSequence >= 0 && e.sequence() != lastSequence + 1) {
          problems.add("gap: expected #" + (lastSequence + 1) + ", got #" + e.sequence());
        }
        lastSequence = e.sequence();
        events.add(e);
        switch (e.kind()) {
          case REGISTERED -> {
            if (view.put(e.plugin().key(), e.plugin()) != null) {
              problems.add("REGISTERED for a key already in view: " + e);
            }
          }
          case UPDATED -> {
            if (view.put(e.plugin().key(), e.plugin()) == null) {
              problems.add("UPDATED for a key not in view: " + e);
            }
          }
          case DEREGISTERED -> {
            if (view.remove(e.plugin().key()) == null) {
              problems.add("DEREGISTERED for a key not in view: " + e);
            }
          }
        }
      }
      onEventHook(e);
    } finally {
      exit();
    }
  }

  /** Override to act inside onEvent. */
  void onEventHook(PluginEvent e) {}

  @Override
  public void onLagged(long lastDeliveredSequence) {
    enter();
    try {
      synchronized (this) {
        if (lagged != null) {
          problems.add("onLagged twice");
        }
        lagged = lastDeliveredSequence;
      }
    } finally {
      exit();
    }
  }

  @Override
  public void onClosed() {
    enter();
    try {
      synchronized (this) {
        closedCalls++;
        endedCalled = true;
      }
    } finally {
      exit();
    }
  }

  private synchronized void enter() {
    if (inCall) {
      problems.add("overlapping listener calls");
    }
    inCall = true;
  }

  private synchronized void exit() {
    inCall = false;
  }

  synchronized List<PluginEvent> events() {
    return List.copyOf(events);
  }

  synchronized Map<PluginKey, PluginInfo> view() {
    return Map.copyOf(view);
  }

  synchronized List<String> problems() {
    return List.copyOf(problems);
  }

  synchronized long lastSequence() {
    return lastSequence;
  }

  synchronized Long lagged() {
    return lagged;
  }

  synchronized int closedCalls() {
    return closedCalls;
  }
}
