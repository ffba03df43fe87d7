package dev.csisupervisor.agent.admin;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.admin.v1.AgentAdminGrpc;
import dev.csisupervisor.admin.v1.GetAgentStatusRequest;
import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.admin.v1.GetPluginRequest;
import dev.csisupervisor.admin.v1.GetPluginResponse;
import dev.csisupervisor.admin.v1.Lagged;
import dev.csisupervisor.admin.v1.ListPluginsRequest;
import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.ReloadConfigRequest;
import dev.csisupervisor.admin.v1.ReloadConfigResponse;
import dev.csisupervisor.admin.v1.Snapshot;
import dev.csisupervisor.admin.v1.WatchEventsRequest;
import dev.csisupervisor.admin.v1.WatchEventsResponse;
import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API over the agent's plugin registry. Read-only but for {@code ReloadConfig}, which
 * calls the agent's reload.
 *
 * <p><b>WatchEvents.</b> Each stream subscribes to the registry (one subscription per watched
 * type) and sends the snapshot first, then the events, in order. Sending follows gRPC flow
 * control: messages wait in the stream's own queue while the client is not ready. A stream whose
 * queue grows past {@code maxBacklog} (a client that does not read), or whose registry
 * subscription lagged, gets one final {@code Lagged} message and is completed: never a silent
 * drop. Registry listeners run on {@code listenerExecutor}; they only queue.
 *
 * <p>Thread-safe.
 */
public final class AdminService extends AgentAdminGrpc.AgentAdminImplBase {
  private static final Logger log = LoggerFactory.getLogger(AdminService.class);

  private final PluginRegistry registry;
  private final Supplier<GetAgentStatusResponse> status;
  private final Executor listenerExecutor;
  private final int maxBacklog;
  private final Set<Watcher> watchers = ConcurrentHashMap.newKeySet();

  /** Reloads the agent's config file; {@code ReloadConfig} answers with what it returns. */
  @FunctionalInterface
  public interface Reloader {
    /**
     * @throws IllegalStateException if the config cannot be reloaded (not read from a file, or
     *     the agent is stopping)
     */
    ReloadConfigResponse reload();
  }

  private final Reloader reloader;

  /** A service whose {@code ReloadConfig} answers FAILED_PRECONDITION (nothing to reload). */
  public AdminService(PluginRegistry registry, Supplier<GetAgentStatusResponse> status,
      Executor listenerExecutor, int maxBacklog) {
    this(registry, status, listenerExecutor, maxBacklog, () -> {
      throw new IllegalStateException("this agent has no config file to reload");
    });
  }

  public AdminService(PluginRegistry registry, Supplier<GetAgentStatusResponse> status,
      Executor listenerExecutor, int maxBacklog, Reloader reloader) {
    this.reloader = requireNonNull(reloader, "reloader");
    this.registry = requireNonNull(registry, "registry");
    this.status = requireNonNull(status, "status");
    this.listenerExecutor = requireNonNull(listenerExecutor, "listenerExecutor");
    Bounds.atLeast(maxBacklog, 1, "maxBacklog");
    this.maxBacklog = maxBacklog;
  }

  /** Open WatchEvents streams. */
  public int watcherCount() {
    return watchers.size();
  }

  /** Messages queued for all open streams. */
  public long backlog() {
    long n = 0;
    for (Watcher w : watchers) {
      n += w.queued();
    }
    return n;
  }

  @Override
  public void listPlugins(ListPluginsRequest request,
      StreamObserver<ListPluginsResponse> response) {
    Optional<Set<PluginType>> requested = types(request.getType(), response);
    if (requested.isEmpty()) {
      return;
    }
    Set<PluginType> types = requested.get();
    ListPluginsResponse.Builder b = ListPluginsResponse.newBuilder();
    for (PluginType t : types) {
      for (PluginInfo p : registry.list(t)) {
        b.addPlugins(ProtoMapper.toProto(p));
      }
    }
    response.onNext(b.build());
    response.onCompleted();
  }

  @Override
  public void getPlugin(GetPluginRequest request, StreamObserver<GetPluginResponse> response) {
    PluginType type;
    try {
      type = ProtoMapper.fromProto(request.getType());
    } catch (IllegalArgumentException e) {
      type = null;
    }
    if (type == null) {
      response.onError(Status.INVALID_ARGUMENT
          .withDescription("type must be CSI_CONTROLLER or CSI_NODE").asException());
      return;
    }
    if (request.getName().isEmpty()) {
      response.onError(Status.INVALID_ARGUMENT.withDescription("name must not be empty")
          .asException());
      return;
    }
    var found = registry.find(type, request.getName());
    if (found.isEmpty()) {
      response.onError(Status.NOT_FOUND.withDescription("no " + type + " plugin named \""
          + request.getName() + "\" is registered").asException());
      return;
    }
    GetPluginResponse.Builder b = GetPluginResponse.newBuilder()
        .setPlugin(ProtoMapper.toProto(found.get()));
    try {
      for (var t : status.get().getTasksList()) {
        if (t.getId().equals(request.getName()) && t.getAllocId().equals(found.get().allocId())) {
          b.setTask(t);
          break;
        }
      }
    } catch (RuntimeException e) {
      log.warn("GetPlugin {}: the agent's task status is not available: {}", request.getName(),
          e.toString());
    }
    response.onNext(b.build());
    response.onCompleted();
  }

  @Override
  public void reloadConfig(ReloadConfigRequest request,
      StreamObserver<ReloadConfigResponse> response) {
    ReloadConfigResponse r;
    try {
      r = reloader.reload();
    } catch (IllegalStateException e) {
      response.onError(Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asException());
      return;
    } catch (RuntimeException e) {
      log.error("ReloadConfig failed", e);
      response.onError(Status.INTERNAL.withDescription("reload failed: " + e).asException());
      return;
    }
    response.onNext(r);
    response.onCompleted();
  }

  @Override
  public void getAgentStatus(GetAgentStatusRequest request,
      StreamObserver<GetAgentStatusResponse> response) {
    response.onNext(status.get());
    response.onCompleted();
  }

  @Override
  public void watchEvents(WatchEventsRequest request,
      StreamObserver<WatchEventsResponse> response) {
    Optional<Set<PluginType>> requested = types(request.getType(), response);
    if (requested.isEmpty()) {
      return;
    }
    Set<PluginType> types = requested.get();
    var out = (ServerCallStreamObserver<WatchEventsResponse>) response;
    Watcher w = new Watcher(out);
    watchers.add(w);
    out.setOnCancelHandler(w::cancelled);
    out.setOnReadyHandler(w::drain);
    try {
      w.subscribe(types);
    } catch (IllegalStateException e) {
      // The registry closed meanwhile: the agent is shutting down.
      w.fail(Status.UNAVAILABLE.withDescription("agent is shutting down"));
    }
  }

  /**
   * The registry types a request asks for (unspecified: all); empty after answering INVALID_ARGUMENT
   * to a value that names no type.
   */
  private static Optional<Set<PluginType>> types(dev.csisupervisor.admin.v1.PluginType t,
      StreamObserver<?> response) {
    PluginType type;
    try {
      type = ProtoMapper.fromProto(t);
    } catch (IllegalArgumentException e) {
      response.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asException());
      return Optional.empty();
    }
    return Optional.of(type == null ? EnumSet.allOf(PluginType.class) : EnumSet.of(type));
  }

  /** One WatchEvents stream. All sending happens under its monitor. */
  private final class Watcher {
    private final ServerCallStreamObserver<WatchEventsResponse> out;
    private final ArrayDeque<WatchEventsResponse> queue = new ArrayDeque<>();
    private final List<Subscription> subscriptions = new ArrayList<>();
    private boolean started; // snapshots are in the queue: sending may begin
    private boolean finishing; // a Lagged/close is queued: complete once the queue is sent
    private boolean done; // completed, failed or cancelled

    Watcher(ServerCallStreamObserver<WatchEventsResponse> out) {
      this.out = out;
    }

    void subscribe(Set<PluginType> types) {
      for (PluginType type : types) {
        Subscription s = registry.subscribe(type, new Listener(type), listenerExecutor);
        WatchEventsResponse snapshot = WatchEventsResponse.newBuilder().setSnapshot(
            Snapshot.newBuilder()
                .setType(ProtoMapper.toProto(type))
                .setSequence(s.snapshotSequence())
                .addAllPlugins(s.snapshot().stream().map(ProtoMapper::toProto).toList()))
            .build();
        synchronized (this) {
          subscriptions.add(s);
          // Events the listener queued already come after this snapshot.
          queue.addFirst(snapshot);
        }
      }
      synchronized (this) {
        started = true;
        if (done) {
          closeSubscriptions();
          return;
        }
      }
      log.debug("admin: WatchEvents stream opened for {}", types);
      drain();
    }

    synchronized int queued() {
      return queue.size();
    }

    synchronized void enqueue(WatchEventsResponse m) {
      if (done || finishing) {
        return;
      }
      queue.addLast(m);
      if (queue.size() > maxBacklog) {
        int pending = queue.size();
        queue.clear();
        log.warn("admin: WatchEvents client is {} events behind (limit {}): closing its stream",
            pending, maxBacklog);
        lagged(null, pending, "watcher fell " + pending + " events behind (limit " + maxBacklog
            + "); watch again for a new snapshot");
        return;
      }
      drain();
    }

    synchronized void lagged(PluginType type, long pending, String message) {
      if (done || finishing) {
        return;
      }
      Lagged.Builder l = Lagged.newBuilder().setPending(pending).setMessage(message);
      if (type != null) {
        l.setType(ProtoMapper.toProto(type));
      }
      queue.addLast(WatchEventsResponse.newBuilder().setLagged(l).build());
      finishing = true;
      closeSubscriptions();
      drain();
    }

    /** The registry closed a subscription (agent shutdown): end the stream after what is queued. */
    synchronized void closedByRegistry() {
      if (done || finishing) {
        return;
      }
      finishing = true;
      closeSubscriptions();
      drain();
    }

    synchronized void drain() {
      if (!started || done) {
        return;
      }
      try {
        while (!queue.isEmpty() && out.isReady()) {
          out.onNext(queue.pollFirst());
        }
        if (finishing && queue.isEmpty()) {
          done = true;
          watchers.remove(this);
          out.onCompleted();
        }
      } catch (RuntimeException e) {
        // The call was cancelled under us.
        cancelled();
      }
    }

    synchronized void fail(Status status) {
      if (done) {
        return;
      }
      done = true;
      watchers.remove(this);
      closeSubscriptions();
      try {
        out.onError(status.asException());
      } catch (RuntimeException ignored) {
        // already cancelled
      }
    }

    synchronized void cancelled() {
      if (done) {
        return;
      }
      done = true;
      queue.clear();
      watchers.remove(this);
      closeSubscriptions();
      log.debug("admin: WatchEvents stream closed by the client");
    }

    private void closeSubscriptions() {
      for (Subscription s : subscriptions) {
        // Close runs the listener's onClosed on the executor; it finds the stream finishing.
        listenerExecutor.execute(s::close);
      }
      subscriptions.clear();
    }

    private final class Listener implements PluginListener {
      private final PluginType type;

      Listener(PluginType type) {
        this.type = type;
      }

      @Override
      public void onEvent(PluginEvent event) {
        enqueue(WatchEventsResponse.newBuilder().setEvent(ProtoMapper.toProto(event)).build());
      }

      @Override
      public void onLagged(long lastDeliveredSequence) {
        log.warn("admin: WatchEvents subscription for {} lagged after sequence {}: closing its"
            + " stream", type, lastDeliveredSequence);
        lagged(type, 0, "the registry dropped this watcher after sequence "
            + lastDeliveredSequence + "; watch again for a new snapshot");
      }

      @Override
      public void onClosed() {
        closedByRegistry();
      }
    }
  }
}
