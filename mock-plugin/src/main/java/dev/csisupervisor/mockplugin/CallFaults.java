package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.NodeGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Per-RPC faults and call records of one mock plugin, for every method of CSI Identity, Controller
 * and Node: how many calls arrived, the last request, a queue of scripted faults (fail with a
 * status, hang, or answer with a given response instead of the driver's) that calls use up one by
 * one, a seeded random failure for a fraction of the calls the queue lets through, and a delay
 * for the calls that get through both.
 *
 * <p>Thread-safe. Each method's queue and delay are guarded by that method's record; counts and
 * last requests are lock-free. Hung calls are one set under one lock, so that releasing them on
 * stop and parking a new one cannot interleave (a call parked after the release would hold the
 * graceful stop for its whole grace period).
 */
final class CallFaults {

  /** What to do with one call. */
  enum Kind { PROCEED, FAIL, HANG, REPLY }

  /**
   * The decision for one call.
   *
   * @param status the status to fail with ({@link Kind#FAIL} only)
   * @param response the response to answer with ({@link Kind#REPLY} only), of the method's response type
   * @param delayNanos how long to wait before handing the call to its handler ({@link Kind#PROCEED} only)
   */
  record Action(Kind kind, Status status, Object response, long delayNanos) {
    static final Action PROCEED_NOW = new Action(Kind.PROCEED, null, null, 0);
  }

  /** A scripted fault, for {@code remaining} more calls (-1: all): the action it takes. */
  private record Fault(Action action, int remaining) {
    Fault usedOnce() {
      return new Fault(action, remaining < 0 ? remaining : remaining - 1);
    }
  }

  /**
   * Fails about {@code fraction} of the calls, each drawn from {@code random}: the same seed and the
   * same sequence of calls of the method fail the same calls, whatever other methods are called.
   */
  private record RandomFault(double fraction, Status status, Random random) {}

  private static final class MethodRecord {
    final LongAdder calls = new LongAdder();
    volatile Object lastRequest;
    /** The caller of the last call received; null: it named none (or none came). */
    volatile Caller lastCaller;
    final Deque<Fault> faults = new ArrayDeque<>(); // guarded by this
    long delayNanos; // guarded by this
    final Map<String, Long> volumeDelayNanos = new java.util.HashMap<>(); // guarded by this: by volume id
    RandomFault randomFault; // guarded by this; null: none
  }

  /** Every method the mock can serve, by full name ({@code csi.v1.Node/NodePublishVolume}). */
  private static final Set<String> METHODS = methods(
      IdentityGrpc.getServiceDescriptor(), ControllerGrpc.getServiceDescriptor(), NodeGrpc.getServiceDescriptor());

  private final Map<String, MethodRecord> records;
  /** Volumes with a delayed call that has not reached its handler (shared by every service). */
  private final Set<String> pendingVolumes = ConcurrentHashMap.newKeySet();

  private final Object parkLock = new Object();
  private final Set<StreamObserver<?>> parked = new LinkedHashSet<>(); // guarded by parkLock
  private boolean released; // guarded by parkLock: the plugin stopped, nothing parks any more

  CallFaults() {
    Map<String, MethodRecord> r = new LinkedHashMap<>();
    METHODS.forEach(name -> r.put(name, new MethodRecord()));
    records = Map.copyOf(r);
  }

  // ---- names ----------------------------------------------------------------------------------

  /**
   * The full name of a CSI method given as its full name ({@code csi.v1.Node/NodePublishVolume})
   * or its bare name ({@code NodePublishVolume}; CSI's method names are unique across services).
   *
   * @throws IllegalArgumentException naming the value if it is no method of Identity, Controller or Node
   */
  static String fullName(String method) {
    Objects.requireNonNull(method, "method");
    if (METHODS.contains(method)) {
      return method;
    }
    for (String full : METHODS) {
      if (full.substring(full.indexOf('/') + 1).equals(method)) {
        return full;
      }
    }
    throw new IllegalArgumentException("method must be a CSI Identity, Controller or Node method, as"
        + " NodePublishVolume or csi.v1.Node/NodePublishVolume, got '" + method + "'");
  }

  /** The full name of {@code method}, if it is a method of CSI Identity, Controller or Node. */
  static String fullName(MethodDescriptor<?, ?> method) {
    Objects.requireNonNull(method, "method");
    return fullName(method.getFullMethodName());
  }

  // ---- scripting ------------------------------------------------------------------------------

  /** Queues a fault: the next {@code times} calls (all, if -1) that reach it fail with {@code code}. */
  void fail(String method, Status.Code code, String message, int times) {
    Objects.requireNonNull(code, "code");
    if (code == Status.Code.OK) {
      throw new IllegalArgumentException("code must not be OK: a failed call needs an error status");
    }
    Status status = Status.fromCode(code).withDescription(message);
    enqueue(method, new Fault(new Action(Kind.FAIL, status, null, 0), checkTimes(times)));
  }

  /** Queues a fault: the next {@code times} calls (all, if -1) that reach it never answer. */
  void hang(String method, int times) {
    enqueue(method, new Fault(new Action(Kind.HANG, null, null, 0), checkTimes(times)));
  }

  /**
   * Queues a fault: the next {@code times} calls (all, if -1) that reach it are answered with
   * {@code response}, which must be of the method's response type.
   */
  void reply(String method, Object response, int times) {
    Objects.requireNonNull(response, "response");
    enqueue(method, new Fault(new Action(Kind.REPLY, null, response, 0), checkTimes(times)));
  }

  /**
   * From now on, each call that no queued fault takes fails with {@code code} and {@code message}
   * with probability {@code fraction}, drawn from a generator seeded by {@code seed} and the method's
   * full name (so two methods with one seed do not fail in step). A fraction of 0 ends it; a new
   * one replaces the old and starts its draws afresh.
   *
   * @throws IllegalArgumentException if {@code fraction} is not in [0, 1] or {@code code} is OK
   */
  void failAtRandom(String method, double fraction, Status.Code code, String message, long seed) {
    Objects.requireNonNull(code, "code");
    if (!(fraction >= 0 && fraction <= 1)) { // also NaN
      throw new IllegalArgumentException("fraction must be from 0 to 1, got " + fraction);
    }
    if (code == Status.Code.OK) {
      throw new IllegalArgumentException("code must not be OK: a failed call needs an error status");
    }
    MethodRecord r = record(method);
    String full = fullName(method);
    RandomFault fault = fraction == 0 ? null : new RandomFault(fraction,
        Status.fromCode(code).withDescription(message), new Random(seed * 31 + full.hashCode()));
    synchronized (r) {
      r.randomFault = fault;
    }
  }

  /** Calls that get through the faults wait {@code delay} before their handler runs; zero: no delay. */
  void delay(String method, Duration delay) {
    long nanos = Bounds.notNegative(delay, "delay").toNanos();
    MethodRecord r = record(method);
    synchronized (r) {
      r.delayNanos = nanos;
    }
  }

  /**
   * Calls that get through the faults and name {@code volumeId} (their request's {@code volume_id}) wait
   * {@code delay} before their handler runs, instead of the method's delay; zero: back to the method's delay.
   */
  void delay(String method, String volumeId, Duration delay) {
    Objects.requireNonNull(volumeId, "volumeId");
    if (volumeId.isBlank()) {
      throw new IllegalArgumentException("volumeId must not be blank");
    }
    long nanos = Bounds.notNegative(delay, "delay").toNanos();
    MethodRecord r = record(method);
    synchronized (r) {
      if (nanos == 0) {
        r.volumeDelayNanos.remove(volumeId);
      } else {
        r.volumeDelayNanos.put(volumeId, nanos);
      }
    }
  }

  /** Forgets every queued fault and delay; counts, last requests and calls already hanging stay. */
  void clear() {
    for (MethodRecord r : records.values()) {
      synchronized (r) {
        r.faults.clear();
        r.delayNanos = 0;
        r.volumeDelayNanos.clear();
        r.randomFault = null;
      }
    }
  }

  private void enqueue(String method, Fault fault) {
    MethodRecord r = record(method);
    synchronized (r) {
      r.faults.addLast(fault);
    }
  }

  private static int checkTimes(int times) {
    if (times == 0 || times < -1) {
      throw new IllegalArgumentException("times must be positive, or -1 for every call, got " + times);
    }
    return times;
  }

  // ---- calls ----------------------------------------------------------------------------------

  /**
   * Records a call that arrived and decides what happens to it: the first queued fault, used up
   * by one, or else the random fault if its draw says so, or else proceed after the delay of the
   * request's volume ({@code volume}: its {@code volume_id}, null if none) or else the method's.
   */
  Action onCall(String method, Object request, String volume) {
    MethodRecord r = records.get(method);
    if (r == null) {
      return Action.PROCEED_NOW; // not a CSI method: nothing can be scripted for it
    }
    r.lastRequest = request;
    r.calls.increment();
    synchronized (r) {
      Fault head = r.faults.peekFirst();
      if (head == null) {
        RandomFault random = r.randomFault;
        if (random != null && random.random().nextDouble() < random.fraction()) {
          return new Action(Kind.FAIL, random.status(), null, 0);
        }
        long delay = volume == null ? r.delayNanos : r.volumeDelayNanos.getOrDefault(volume, r.delayNanos);
        return delay == 0 ? Action.PROCEED_NOW : new Action(Kind.PROCEED, null, null, delay);
      }
      Fault rest = head.usedOnce();
      r.faults.removeFirst();
      if (rest.remaining() != 0) {
        r.faults.addFirst(rest);
      }
      return head.action();
    }
  }

  /** Marks an operation on {@code volumeId} as in progress; false if one already is. */
  boolean beginPending(String volumeId) {
    return pendingVolumes.add(volumeId);
  }

  void endPending(String volumeId) {
    pendingVolumes.remove(volumeId);
  }

  /** Whether a delayed call on {@code volumeId} has not reached its handler yet. */
  boolean isPending(String volumeId) {
    return pendingVolumes.contains(volumeId);
  }

  long callCount(String method) {
    return record(method).calls.sum();
  }

  Object lastRequest(String method) {
    return record(method).lastRequest;
  }

  /** The caller (null: none) of a call of {@code method} (a full name) that has just arrived. */
  void recordCaller(String method, Caller caller) {
    MethodRecord r = records.get(method);
    if (r != null) {
      r.lastCaller = caller;
    }
  }

  /** The caller of the last call of {@code method} received, or null. */
  Caller lastCaller(String method) {
    return record(method).lastCaller;
  }

  private MethodRecord record(String method) {
    return records.get(fullName(method));
  }

  // ---- hung calls -----------------------------------------------------------------------------

  /**
   * Keeps {@code observer} unanswered. Must run during the call's handler (gRPC accepts a cancel
   * handler only then): a hung call is forgotten when its client gives up, so hung calls do not
   * pile up. Returns false, keeping nothing, once the plugin has stopped.
   */
  boolean park(StreamObserver<?> observer) {
    synchronized (parkLock) {
      if (released) {
        return false;
      }
      parked.add(observer);
    }
    if (observer instanceof ServerCallStreamObserver<?> call) {
      call.setOnCancelHandler(() -> {
        synchronized (parkLock) {
          parked.remove(observer);
        }
      });
    }
    return true;
  }

  int parkedCount() {
    synchronized (parkLock) {
      return parked.size();
    }
  }

  /** Hands back every hung call, for the plugin to answer or drop as it stops; nothing parks from now on. */
  List<StreamObserver<?>> releaseAll() {
    synchronized (parkLock) {
      released = true;
      List<StreamObserver<?>> all = new ArrayList<>(parked);
      parked.clear();
      return all;
    }
  }

  private static Set<String> methods(ServiceDescriptor... services) {
    Set<String> all = new LinkedHashSet<>();
    for (ServiceDescriptor service : services) {
      for (MethodDescriptor<?, ?> m : service.getMethods()) {
        all.add(m.getFullMethodName());
      }
    }
    return Set.copyOf(all);
  }
}
