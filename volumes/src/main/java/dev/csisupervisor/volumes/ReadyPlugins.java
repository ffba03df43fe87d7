package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.common.Durations;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node and controller plugins the manager may call (the ready ones), followed from the registry (snapshot, then
 * events), with one {@link CsiClient} per plugin socket. A plugin is <em>ready</em> when its newest
 * registration is healthy and confirmed since the agent started (not merely restored). Thread-safe;
 * registry events arrive on the registering thread, after its commit, outside its locks.
 */
final class ReadyPlugins implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ReadyPlugins.class);

  /**
   * A ready node plugin.
   *
   * @param pluginDir its directory on the host, where the manager makes staging and target paths
   * @param mountPoint the same directory as the plugin sees it (a containerised plugin's mount point, registered
   *     as {@code container_mount_point}); the host directory for a plugin that runs on the host
   */
  record NodePlugin(PluginInfo info, CsiClient client, Path pluginDir, Path mountPoint) {
    String id() {
      return info.name();
    }

    /**
     * {@code hostPath} as the plugin sees it: CSI's staging and target paths are "in the root filesystem of the
     * process serving this request". A path outside the plugin directory is passed as it is.
     */
    Path pluginPath(Path hostPath) {
      if (mountPoint.equals(pluginDir) || !hostPath.startsWith(pluginDir)) {
        return hostPath;
      }
      return mountPoint.resolve(pluginDir.relativize(hostPath));
    }

    boolean has(String capability) {
      return info.fingerprint().nodeCapabilities().contains(capability);
    }

    boolean stages() {
      return has(CsiCapabilities.STAGE_UNSTAGE_VOLUME);
    }

    long maxVolumes() {
      return info.fingerprint().maxVolumesPerNode();
    }

    String nodeId() {
      return info.fingerprint().nodeId();
    }
  }

  /** A ready controller plugin. */
  record ControllerPlugin(PluginInfo info, CsiClient client) {
    boolean has(String capability) {
      return info.fingerprint().controllerCapabilities().contains(capability);
    }
  }

  private final PluginRegistry registry;
  private final Path csiRoot;
  private final Function<Path, CsiClient> clients;
  private final ScheduledExecutorService scheduler;
  private final Consumer<String> onReady;

  private final Object lock = new Object();
  private final Map<Path, CsiClient> clientsBySocket = new HashMap<>(); // guarded by lock
  private final Waiters<NodePlugin> nodeWaiters = new Waiters<>(); // guarded by lock
  private final Waiters<ControllerPlugin> controllerWaiters = new Waiters<>(); // guarded by lock
  private final List<Subscription> subscriptions = new ArrayList<>();
  private boolean closed; // guarded by lock

  /**
   * @param onReady called with a plugin's id each time its node plugin becomes (or is again) ready, or its
   *     controller plugin does, outside every lock of this class
   */
  ReadyPlugins(PluginRegistry registry, Path csiRoot, Function<Path, CsiClient> clients,
      ScheduledExecutorService scheduler, Consumer<String> onReady) {
    this.registry = registry;
    this.csiRoot = csiRoot;
    this.clients = clients;
    this.scheduler = scheduler;
    this.onReady = onReady;
  }

  /** Subscribes to both types; every node plugin already ready is announced. */
  void start() {
    PluginListener listener = new PluginListener() {
      @Override
      public void onEvent(PluginEvent event) {
        changed(event);
      }

      @Override
      public void onLagged(long lastDeliveredSequence) {
        log.warn("volume manager fell behind the registry's events; plugin readiness is read on demand");
      }
    };
    subscriptions.add(registry.subscribe(PluginType.CSI_NODE, listener, Runnable::run));
    subscriptions.add(registry.subscribe(PluginType.CSI_CONTROLLER, listener, Runnable::run));
    for (PluginType type : PluginType.values()) {
      for (PluginInfo info : registry.list(type)) {
        if (isReady(info)) {
          onReady.accept(info.name());
        }
      }
    }
  }

  private void changed(PluginEvent event) {
    if (event.kind() == PluginEvent.Kind.DEREGISTERED) {
      closeUnusedClients();
    }
    String id = event.plugin().name();
    boolean ready = event.type() == PluginType.CSI_CONTROLLER
        ? wake(controllerWaiters, id, readyController(id))
        : wake(nodeWaiters, id, readyNode(id));
    if (ready) {
      // Work that waits only for the controller (its unpublish) goes on when it is ready, too.
      onReady.accept(id);
    }
  }

  /** Completes the waiters of {@code id} if the plugin is ready; whether it is. */
  private <P> boolean wake(Waiters<P> waiters, String id, Optional<P> ready) {
    if (ready.isEmpty()) {
      return false;
    }
    List<CompletableFuture<P>> woken;
    synchronized (lock) {
      woken = waiters.byId.remove(id);
    }
    if (woken != null) {
      woken.forEach(w -> w.complete(ready.get()));
    }
    return true;
  }

  static boolean isReady(PluginInfo info) {
    return !info.restored() && info.health().healthy();
  }

  /** The node plugin {@code id} if it is ready now. */
  Optional<NodePlugin> readyNode(String id) {
    return registry.find(PluginType.CSI_NODE, id).filter(ReadyPlugins::isReady)
        .map(info -> new NodePlugin(info, client(info.socketPath()), pluginDir(info), mountPoint(info)));
  }

  /** The controller plugin {@code id} if it is ready now. */
  Optional<ControllerPlugin> readyController(String id) {
    return registry.find(PluginType.CSI_CONTROLLER, id).filter(ReadyPlugins::isReady)
        .map(info -> new ControllerPlugin(info, client(info.socketPath())));
  }

  /** The node plugin's newest registration, ready or not. */
  Optional<PluginInfo> registeredNode(String id) {
    return registry.find(PluginType.CSI_NODE, id);
  }

  /** The controller plugin's newest registration, ready or not. */
  Optional<PluginInfo> registeredController(String id) {
    return registry.find(PluginType.CSI_CONTROLLER, id);
  }

  /**
   * The node plugin once it is ready, waiting up to {@code timeout} on the scheduler. Fails at once
   * (no wait) if {@code id} is registered as a controller only and its plugin does not serve the Node service (it
   * answered no NodeGetInfo): that is a wrong plugin, not a late one. A monolith registers its controller half first,
   * so a controller whose plugin serves Node is its node half's forerunner: waited for.
   */
  CompletableFuture<NodePlugin> awaitNode(String id, Duration timeout) {
    if (registry.find(PluginType.CSI_NODE, id).isEmpty() && registry.find(PluginType.CSI_CONTROLLER, id)
        .filter(c -> c.fingerprint().nodeId().isEmpty()).isPresent()) {
      return CompletableFuture.failedFuture(new VolumeException(VolumeException.Reason.UNSUPPORTED,
          "plugin " + id + " is registered as a controller plugin only; volumes are mounted through a node plugin"));
    }
    return await(nodeWaiters, id, timeout, () -> readyNode(id), () -> notReady(PluginType.CSI_NODE, id, timeout));
  }

  /**
   * The controller plugin once it is ready (a plugin just started, or restarted after a crash, is not yet), waiting
   * up to {@code timeout} on the scheduler. Fails at once if {@code id} is registered as a node plugin only and its
   * plugin does not advertise {@code CONTROLLER_SERVICE}: it has no controller to wait for.
   */
  CompletableFuture<ControllerPlugin> awaitController(String id, Duration timeout) {
    if (registry.find(PluginType.CSI_CONTROLLER, id).isEmpty() && registry.find(PluginType.CSI_NODE, id)
        .filter(n -> !n.fingerprint().pluginCapabilities().contains(CsiCapabilities.CONTROLLER_SERVICE)).isPresent()) {
      return CompletableFuture.failedFuture(new VolumeException(VolumeException.Reason.UNSUPPORTED,
          "plugin " + id + " is registered as a node plugin only; it has no controller service"));
    }
    return await(controllerWaiters, id, timeout, () -> readyController(id),
        () -> notReady(PluginType.CSI_CONTROLLER, id, timeout));
  }

  /**
   * Done once the controller plugin {@code id} is ready if it is registered with {@code PUBLISH_UNPUBLISH_VOLUME}
   * (it must publish a volume to this node before the node plugin may stage it), waiting up to {@code timeout}; done
   * at once if no such controller is registered.
   */
  CompletableFuture<Void> awaitPublishingController(String id, Duration timeout) {
    boolean publishes = registry.find(PluginType.CSI_CONTROLLER, id)
        .filter(i -> i.fingerprint().controllerCapabilities().contains(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME))
        .isPresent();
    return publishes ? awaitController(id, timeout).thenApply(c -> null) : CompletableFuture.completedFuture(null);
  }

  private <P> CompletableFuture<P> await(Waiters<P> waiters, String id, Duration timeout, Supplier<Optional<P>> ready,
      Supplier<VolumeException> late) {
    Optional<P> now = ready.get();
    if (now.isPresent()) {
      return CompletableFuture.completedFuture(now.get());
    }
    CompletableFuture<P> waiter = new CompletableFuture<>();
    synchronized (lock) {
      if (closed) {
        return CompletableFuture.failedFuture(new VolumeException(VolumeException.Reason.CLOSED, "volume manager is closed"));
      }
      waiters.byId.computeIfAbsent(id, k -> new ArrayList<>()).add(waiter);
    }
    // The plugin may have become ready between the first look and the registration of the waiter.
    ready.get().ifPresent(waiter::complete);
    ScheduledFuture<?> timer = scheduler.schedule(() -> {
      if (waiter.completeExceptionally(late.get())) {
        synchronized (lock) {
          List<CompletableFuture<P>> list = waiters.byId.get(id);
          if (list != null) {
            list.remove(waiter);
            if (list.isEmpty()) {
              waiters.byId.remove(id);
            }
          }
        }
      }
    }, timeout.toNanos(), TimeUnit.NANOSECONDS);
    waiter.whenComplete((p, e) -> timer.cancel(false));
    return waiter;
  }

  private VolumeException notReady(PluginType type, String id, Duration waited) {
    String kind = type == PluginType.CSI_NODE ? "node" : "controller";
    Optional<PluginInfo> info = registry.find(type, id);
    String state = info.isEmpty() ? "is not registered as a " + kind + " plugin"
        : info.get().restored() ? "is restored from the last run but not confirmed running"
        : "is registered but unhealthy (" + info.get().health().message() + ")";
    return new VolumeException(VolumeException.Reason.PLUGIN_UNAVAILABLE,
        kind + " plugin " + id + " " + state + " after waiting " + Durations.format(waited));
  }

  /** The plugin's directory: its socket's directory when that lies under the CSI root, else {@code <csiRoot>/node/<id>}. */
  Path pluginDir(PluginInfo info) {
    Path socketDir = info.socketPath().toAbsolutePath().normalize().getParent();
    if (socketDir != null && socketDir.startsWith(csiRoot) && !socketDir.equals(csiRoot)) {
      return socketDir;
    }
    return csiRoot.resolve("node").resolve(info.name());
  }

  /**
   * Where the plugin sees its directory: the registered {@code container_mount_point} when the registered
   * {@code mount_point} (the host side) is its directory, else the host directory itself (a plugin on the host).
   */
  Path mountPoint(PluginInfo info) {
    Path dir = pluginDir(info);
    String container = info.options().get("container_mount_point");
    String host = info.options().get("mount_point");
    if (container == null || container.isBlank() || host == null
        || !Path.of(host).toAbsolutePath().normalize().equals(dir)) {
      return dir;
    }
    Path c = Path.of(container);
    return c.isAbsolute() ? c.normalize() : dir;
  }

  private CsiClient client(Path socket) {
    synchronized (lock) {
      return clientsBySocket.computeIfAbsent(socket, clients);
    }
  }

  private void closeUnusedClients() {
    List<CsiClient> unused = new ArrayList<>();
    synchronized (lock) {
      java.util.Set<Path> used = new java.util.HashSet<>();
      for (PluginType t : PluginType.values()) {
        registry.listAll(t).forEach(i -> used.add(i.socketPath()));
      }
      clientsBySocket.entrySet().removeIf(e -> {
        if (!used.contains(e.getKey())) {
          unused.add(e.getValue());
          return true;
        }
        return false;
      });
    }
    // Outside the lock, and on a thread of its own: close() may wait up to a second for calls to
    // finish, which neither the registry's thread nor the shared scheduler may spend.
    if (!unused.isEmpty()) {
      Thread closer = new Thread(() -> unused.forEach(CsiClient::close), "csi-volumes-client-close");
      closer.setDaemon(true);
      closer.start();
    }
  }

  @Override
  public void close() {
    List<CsiClient> all;
    List<CompletableFuture<?>> pending = new ArrayList<>();
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      all = new ArrayList<>(clientsBySocket.values());
      clientsBySocket.clear();
      nodeWaiters.drainTo(pending);
      controllerWaiters.drainTo(pending);
    }
    subscriptions.forEach(Subscription::close);
    pending.forEach(w -> w.completeExceptionally(
        new VolumeException(VolumeException.Reason.CLOSED, "volume manager is closed")));
    all.forEach(CsiClient::close);
  }

  /** The callers waiting for a plugin of one type to be ready, by plugin id; guarded by the outer lock. */
  private static final class Waiters<P> {
    final Map<String, List<CompletableFuture<P>>> byId = new HashMap<>();

    void drainTo(List<CompletableFuture<?>> into) {
      byId.values().forEach(into::addAll);
      byId.clear();
    }
  }
}
