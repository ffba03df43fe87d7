package dev.csisupervisor.volumes;


import org.awaitility.core.ConditionFactory;
import org.awaitility.Awaitility;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.testing.FakeScheduler;
import dev.csisupervisor.testing.ShortTempDir;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * One node for volume tests: a real mock CSI plugin (monolith, every capability) on a unix socket
 * under the CSI root, a registry and a state store, a {@link FakeScheduler} for every timer, and
 * the manager under test with a {@link FaultyClient} per plugin socket.
 */
final class VolumeKit implements AutoCloseable {
  static final Duration WAIT = Duration.ofSeconds(20);

  /**
   * Awaitility for up to {@link #WAIT}, polling from the first moment and every 5 ms (by default it waits 100 ms
   * before it first looks).
   */
  static ConditionFactory await() {
    return Awaitility.await().atMost(WAIT).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5));
  }
  static final Set<String> ALL_NODE_CAPS = Set.of("STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS", "EXPAND_VOLUME",
      "VOLUME_CONDITION", "SINGLE_NODE_MULTI_WRITER", "VOLUME_MOUNT_GROUP");
  static final Set<String> ALL_CONTROLLER_CAPS = Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME",
      "EXPAND_VOLUME");

  final ShortTempDir dir = new ShortTempDir("vk");
  final Path csiRoot;
  final FakeScheduler scheduler = new FakeScheduler();
  final FakeMountTable mounts = new FakeMountTable();
  final StateStore store;
  final PluginRegistry registry;
  final Map<Path, FaultyClient> clients = new ConcurrentHashMap<>();
  final List<MockCsiPlugin> plugins = new ArrayList<>();
  final List<VolumeEvent> events = new CopyOnWriteArrayList<>();
  final List<VolumeManager> managers = new ArrayList<>();
  private final Map<String, CsiClient> direct = new ConcurrentHashMap<>();

  VolumeKit(StateStore store) {
    this(store, null);
  }

  /** @param csiRoot the CSI root (null: {@code csi} in the kit's directory) */
  VolumeKit(StateStore store, Path csiRoot) {
    this.csiRoot = csiRoot != null ? csiRoot : dir.resolve("csi");
    this.store = store;
    this.registry = PluginRegistry.builder().stateStore(store).build();
  }

  /**
   * A kit over an in-memory store with one plugin, {@code id}, running and registered as a node and a controller
   * plugin, each with every capability: an agent alone as the whole orchestrator.
   */
  static VolumeKit withMonolith(String id) throws Exception {
    VolumeKit kit = new VolumeKit(new InMemoryStateStore());
    kit.startPlugin(id);
    kit.registerNode(id);
    kit.registerController(id, ALL_CONTROLLER_CAPS);
    return kit;
  }

  Path socket(String id) {
    return csiRoot.resolve("monolith").resolve(id).resolve("csi.sock");
  }

  /** Starts a monolith mock plugin {@code id} with every capability. */
  MockCsiPlugin startPlugin(String id) throws Exception {
    return startPlugin(id, b -> {});
  }

  /** Starts a monolith mock plugin {@code id} with every capability, then what {@code custom} changes. */
  MockCsiPlugin startPlugin(String id, java.util.function.Consumer<MockCsiPlugin.Builder> custom) throws Exception {
    Files.createDirectories(socket(id).getParent());
    MockCsiPlugin.Builder b = MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket(id)).allCapabilities();
    custom.accept(b);
    MockCsiPlugin p = b.start();
    plugins.add(p);
    return p;
  }

  /** Registers {@code id} as a healthy node plugin with these node capabilities. */
  void registerNode(String id, Set<String> nodeCaps, long maxVolumes) {
    registry.register(info(PluginType.CSI_NODE, id, Set.of(), nodeCaps, maxVolumes, true));
  }

  void registerNode(String id) {
    registerNode(id, ALL_NODE_CAPS, 0);
  }

  void registerController(String id, Set<String> controllerCaps) {
    registry.register(info(PluginType.CSI_CONTROLLER, id, controllerCaps, Set.of(), 0, true));
  }

  void setHealthy(PluginType type, String id, boolean healthy) {
    PluginInfo i = registry.find(type, id).orElseThrow();
    registry.register(i.withHealth(healthy ? PluginHealth.healthy(Instant.now())
        : PluginHealth.unhealthy("probe failed", Instant.now())));
  }

  PluginInfo info(PluginType type, String id, Set<String> controllerCaps, Set<String> nodeCaps, long max,
      boolean healthy) {
    return info(type, id, type == PluginType.CSI_CONTROLLER ? Set.of("SERVICE:CONTROLLER_SERVICE") : Set.of(),
        controllerCaps, nodeCaps, max, Map.of(), healthy);
  }

  /** A registration with these plugin capabilities too, and (a node's) accessible topology. */
  PluginInfo info(PluginType type, String id, Set<String> pluginCaps, Set<String> controllerCaps, Set<String> nodeCaps,
      long max, Map<String, String> topology, boolean healthy) {
    Fingerprint f = new Fingerprint(id, "1.0", Map.of(), pluginCaps, controllerCaps, nodeCaps,
        type == PluginType.CSI_NODE ? "node-1" : "", max, topology);
    return new PluginInfo(type, id, "1.0", "alloc-" + id, socket(id), Map.of(), f,
        healthy ? PluginHealth.healthy(Instant.now()) : PluginHealth.unhealthy("down", Instant.now()), false);
  }

  VolumeManager.Builder builder() {
    return VolumeManager.builder().registry(registry).stateStore(store).csiRoot(csiRoot).scheduler(scheduler)
        .clock(scheduler.clock(), System::nanoTime)
        .retry(3, Duration.ofMillis(100), Duration.ofSeconds(1))
        .pendingRetryMax(Duration.ofSeconds(30))
        .operationDeadline(Duration.ofSeconds(30))
        .mountWait(Duration.ofSeconds(30))
        .random(new Random(42))
        .mountTable(Optional.of(mounts))
        .clientFactory(socket -> clients.computeIfAbsent(socket, s -> {
          try {
            return new FaultyClient(CsiClient.create(s), mounts);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        }).reopened());
  }

  VolumeManager manager() {
    return manager(builder());
  }

  VolumeManager manager(VolumeManager.Builder b) {
    VolumeManager m = b.listener(events::add, Runnable::run).build(); // from the first event (a restart's LOST)
    managers.add(m);
    return m;
  }

  FaultyClient client(String id) {
    return clients.get(socket(id));
  }

  /** Creates a volume on plugin {@code id} directly (not through the manager); its id. */
  String createVolume(String id, String name) throws Exception {
    CsiClient client = direct.get(id);
    if (client == null) {
      client = CsiClient.create(socket(id));
      direct.put(id, client);
    }
    return client.createVolumeAsync(new CreateVolumeRequest(name, Optional.empty(),
        List.of(VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER)), Map.of(), Secrets.none()))
        .get(20, TimeUnit.SECONDS).volumeId();
  }

  /** Waits for the future, moving fake time on by 1 s per look so that timers (retries, waits) fire. */
  <T> T drive(CompletableFuture<T> future) {
    await().until(() -> {
      if (!future.isDone()) {
        scheduler.forwardTime(1, TimeUnit.SECONDS);
      }
      return future.isDone();
    });
    return future.join();
  }

  /** Waits for the future to fail; its {@link VolumeException}. */
  VolumeException failure(CompletableFuture<?> future) {
    await().until(() -> {
      if (!future.isDone()) {
        scheduler.forwardTime(1, TimeUnit.SECONDS);
      }
      return future.isDone();
    });
    Throwable t = future.handle((v, e) -> e).join();
    if (t == null) {
      throw new AssertionError("expected a failure, got " + future.join());
    }
    return VolumeException.find(t).orElseThrow(() -> new AssertionError("not a VolumeException", t));
  }

  @Override
  public void close() {
    managers.forEach(VolumeManager::close);
    registry.close();
    direct.values().forEach(CsiClient::close);
    plugins.forEach(MockCsiPlugin::close);
    dir.close();
  }
}
