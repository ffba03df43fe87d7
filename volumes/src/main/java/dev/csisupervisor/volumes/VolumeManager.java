package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiClientOptions;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.state.StateStore;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * The node volume manager: mounts a volume for an allocation through its node plugin and unmounts
 * it again, and never loses or leaks a mount across crashes of the agent or the plugin.
 *
 * <p><b>Mount.</b> {@link #mount} waits for the claim's node plugin to be registered and healthy (up
 * to {@link Builder#mountWait}), and for its controller plugin too if that one must publish the volume here (each
 * wait up to {@code mountWait}), then, on the volume's lane: controller publish to this node if a
 * controller plugin of the same id offers {@code PUBLISH_UNPUBLISH_VOLUME}; NodeStageVolume once per
 * volume if the node plugin has {@code STAGE_UNSTAGE_VOLUME}; NodePublishVolume per allocation; then
 * the NodeExpandVolume the volume is owed, if any ({@link #expand}). Paths (see {@link VolumeRecord}):
 * {@code <pluginDir>/staging/<id>} and {@code <pluginDir>/per-alloc/<alloc>/<id>/<usage>}. The same
 * claim again returns the same path and calls nothing. A publish that fails undoes what the mount did
 * (unstage, controller unpublish); an owed expansion that fails stays owed and the mount stands.
 *
 * <p><b>Unmount.</b> {@link #unmount} unpublishes, unstages at the last use of a staging and
 * controller-unpublishes at the last use of the volume. If the plugin is gone or failing the
 * unmount stays pending (recorded) and is finished when the plugin is ready again; the future
 * completes then.
 *
 * <p><b>The machine.</b> The journal says what was intended; the mount table ({@link Builder#mountTable})
 * says what is. At start every record is checked against it: a publication whose target is not mounted
 * (a reboot) is <em>lost</em> and is staged and published again at the same paths as soon as its plugin
 * is ready; mounts no record names are reported ({@link #collectOrphans}). Before a recorded path is handed
 * back it is checked again, and after every unpublish or unstage the plugin reports done: a path still
 * mounted keeps the operation pending.
 *
 * <p><b>Durable.</b> Each operation's intent is committed to the state store before its first CSI
 * call and its result after its last, in group commits shared by concurrent operations. After a
 * crash, {@link Builder#build} knows every staged and published volume and every operation in
 * flight: finished mounts stay, interrupted mounts are rolled back, interrupted unmounts are
 * finished, each as soon as its plugin is ready. Secrets are never written or logged.
 *
 * <p><b>Concurrency.</b> At most one CSI call is in flight per volume; different volumes go in
 * parallel on the client's async calls (no thread per volume or plugin). Thread-safe. Futures
 * complete on gRPC I/O threads, the state store's commit-callbacks thread
 * ({@code csi-state-commit-callbacks}, never the group commit's own thread), the agent's own unmount
 * thread ({@code csi-volumes-unmount}: forced unmounts, {@link #collectOrphans}) or the scheduler:
 * attach blocking work with an executor of your own.
 *
 * <p><b>Bad input</b> ({@link VolumeClaim}'s rules, an unknown volume) throws
 * {@link IllegalArgumentException} naming the field before anything is done; what is found out
 * later fails the future with a {@link VolumeException} whose {@link VolumeException#reason()}
 * says why.
 */
public interface VolumeManager extends AutoCloseable {
  /** Every volume record's key in the state store starts with this. */
  String STORE_PREFIX = VolumeKey.STORE_PREFIX;

  static Builder builder() {
    return new Builder();
  }

  /** Mounts the claim's volume for its allocation; the future holds where. */
  CompletableFuture<MountedVolume> mount(VolumeClaim claim);

  /**
   * Unmounts the volume from the allocation (every usage it has there). Unknown: done at once. The
   * future completes once the plugin has unpublished it for this allocation (and, at the last use,
   * unstaged it and the controller has unpublished it), with the mount table agreeing; other
   * allocations of the volume neither hold it nor wait for it. It fails only if the intent cannot be
   * committed or the manager closes, never because the plugin is away: then the unmount stays pending,
   * and {@link #waitingFor()} says for what.
   */
  default CompletableFuture<Void> unmount(String pluginId, String volumeId, String allocId) {
    return unmount(UnmountRequest.of(pluginId, volumeId, allocId));
  }

  /** {@link #unmount(String, String, String)} with secrets for the controller side, or forced. */
  CompletableFuture<Void> unmount(UnmountRequest request);

  /**
   * Unmounts every volume of the allocation (forced or not), as {@link #unmount(UnmountRequest)} without
   * secrets. Completes when all are done; the volumes it found ({@code "<plugin>/<volume>"}), sorted.
   */
  CompletableFuture<List<String>> releaseAlloc(String allocId, boolean force);

  /**
   * The task runner's word on which allocations are alive (after its own restore): every allocation a
   * record holds that is not in {@code live} is unmounted, as {@link #releaseAlloc}. An allocation that
   * died while the agent was down keeps no claim, slot or mount. Completes when they are all unmounted;
   * the allocations released, sorted.
   */
  CompletableFuture<List<String>> retainAllocs(java.util.Set<String> live);

  /** Every volume this node has staged or published, or has an operation on, by plugin and volume. */
  List<VolumeRecord> list();

  /** The record of one volume, if this node has it. */
  Optional<VolumeRecord> find(String pluginId, String volumeId);

  /**
   * NodeGetVolumeStats of the volume where it is published for {@code allocId} (or, with
   * {@code allocId} empty, its first publication). Fails with {@code UNSUPPORTED} if the plugin lacks
   * {@code GET_VOLUME_STATS}, {@code NOT_MOUNTED} if the volume is not published here.
   */
  CompletableFuture<VolumeStats> stats(String pluginId, String volumeId, Optional<String> allocId);

  /**
   * Expands the volume: ControllerExpandVolume if a controller plugin of the id offers
   * {@code EXPAND_VOLUME}, then NodeExpandVolume where it is published if the controller says so
   * (or there is no controller) and the node plugin offers {@code EXPAND_VOLUME}. The future holds
   * the new size in bytes (0 if the plugin did not say). A registered controller (else node plugin) that offers
   * {@code EXPAND_VOLUME} and is not ready yet is waited for, up to {@link Builder#mountWait}.
   *
   * <p>A plugin that expands {@code VOLUME_EXPANSION:OFFLINE} only (not {@code ONLINE}) does not expand a
   * volume published or staged on this node: {@code IN_USE}, nothing called; neither advertised: no such rule.
   * When the controller answers {@code node_expansion_required} and the volume is not published here (or its
   * node plugin is not ready), the NodeExpandVolume is owed: recorded in the volume's record
   * ({@link VolumeRecord#nodeExpansion()}, a record of its own if the volume is not on this node; such a record
   * is no mounted volume and does not hold a delete) and sent after the volume's next NodePublishVolume here, with
   * that claim's secrets, then cleared. Nothing is owed if no node plugin of the id here offers
   * {@code EXPAND_VOLUME}.
   */
  CompletableFuture<Long> expand(String pluginId, String volumeId, CapacityRange range, Secrets secrets);

  /**
   * CreateVolume through the plugin's controller ({@code CREATE_DELETE_VOLUME}); where the plugin has
   * {@code VOLUME_ACCESSIBILITY_CONSTRAINTS}, the volume is asked for where this node is (as
   * {@link #create(String, String, Optional, List, Map, Secrets, Optional)} without a topology).
   */
  default CompletableFuture<CsiVolume> create(String pluginId, String name, Optional<CapacityRange> capacity,
      List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets) {
    return create(pluginId, name, capacity, capabilities, parameters, secrets, Optional.empty());
  }

  /**
   * CreateVolume through the plugin's controller ({@code CREATE_DELETE_VOLUME}), with accessibility
   * requirements when the plugin has {@code VOLUME_ACCESSIBILITY_CONSTRAINTS}: {@code topology} if given, else
   * this node's (its node plugin's NodeGetInfo {@code accessible_topology}, as requisite and preferred), none if
   * this node reported none. A {@code topology} for a plugin without the capability fails {@code UNSUPPORTED}
   * (CSI forbids it). The volume answered carries its {@link CsiVolume#accessibleTopology()}. Waits for the
   * controller to be ready up to {@link Builder#mountWait}, as a mount waits for its node plugin.
   */
  CompletableFuture<CsiVolume> create(String pluginId, String name, Optional<CapacityRange> capacity,
      List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets,
      Optional<TopologyRequirement> topology);

  /**
   * DeleteVolume through the plugin's controller; refused ({@code IN_USE}) while mounted on this node. Like
   * {@link #create}, it waits for the controller to be ready up to {@link Builder#mountWait} (a plugin just
   * started or restarted); a plugin registered as a node plugin only is refused at once.
   */
  CompletableFuture<Void> delete(String pluginId, String volumeId, Secrets secrets);

  /** Volumes with an operation in flight or pending (an unmount waiting for its plugin, a rollback). */
  List<VolumeRecord> pending();

  /**
   * Per volume with work pending ({@code "<plugin>/<volume>"}): what it waits for, in words — a plugin to be
   * ready, a call that failed (with the RPC, the code and the plugin's message), a path still mounted.
   */
  Map<String, String> waitingFor();

  /**
   * Mount points below the plugins' {@code staging/} and {@code per-alloc/} directories that no record names,
   * read from the mount table now; with {@code remove}, each is unmounted (and its empty directories
   * removed). Without a mount table: none.
   */
  CompletableFuture<List<OrphanMount>> collectOrphans(boolean remove);

  /** Volumes whose plugin last reported an abnormal condition, with the plugin's message. */
  Map<String, String> abnormal();

  /** What was found interrupted in the state when the manager was built (rolled back or finished since, or pending). */
  List<String> recovered();

  /** How many group commits (one fsync each) and record changes the group commit the manager writes through has made (with the agent, the node's: the registry's changes too). */
  CommitStats commitStats();

  /** Commit figures: {@code commits} fsyncs held {@code changes} record changes. */
  record CommitStats(long commits, long changes) {}

  /** Events from now on, on {@code executor}; closing the handle stops them. */
  AutoCloseable addListener(VolumeListener listener, Executor executor);

  /**
   * Stops: pending operations stay recorded for the next start, futures still waiting fail with
   * {@code CLOSED}, clients are closed. Idempotent. Does not close the registry or the state store.
   */
  @Override
  void close();

  /** Builds a {@link VolumeManager}; registry, state store, CSI root and scheduler are required. */
  final class Builder {
    final java.util.List<java.util.Map.Entry<VolumeListener, java.util.concurrent.Executor>> listeners =
        new java.util.ArrayList<>();
    PluginRegistry registry;
    StateStore stateStore;
    Path csiRoot;
    ScheduledExecutorService scheduler;
    Clock clock = Clock.systemUTC();
    LongSupplier nanoTime = System::nanoTime;
    Duration mountWait = Duration.ofMinutes(1);
    Duration healthInterval = Duration.ofMinutes(1);
    int maxAttempts = 5;
    Duration initialBackoff = Duration.ofMillis(200);
    Duration maxBackoff = Duration.ofSeconds(10);
    Duration pendingRetryMax = Duration.ofMinutes(2);
    Duration operationDeadline = Duration.ofMinutes(10);
    CsiClientOptions clientOptions = CsiClientOptions.defaults();
    Function<Path, CsiClient> clientFactory;
    VolumeObserver observer = VolumeObserver.NONE;
    Random random = new Random();
    Map<String, byte[]> records;
    Optional<MountTable> mountTable = Optional.of(MountTable.proc());
    ClusterClaims clusterClaims = ClusterClaims.NONE;

    Builder() {}

    /**
     * The cluster's claims (default {@link ClusterClaims#NONE}): taken before each mount, released after each
     * allocation's unmount; in a cluster the controller publish is the cluster's, never this manager's.
     */
    public Builder clusterClaims(ClusterClaims claims) {
      this.clusterClaims = Objects.requireNonNull(claims, "claims");
      return this;
    }

    /**
     * The mount table the journal is checked against (default {@link MountTable#proc()}). Empty: not checked,
     * every recorded path is believed — only for plugins that mount nothing, such as the mock plugin without
     * root; never for a real driver.
     */
    public Builder mountTable(Optional<MountTable> table) {
      this.mountTable = Objects.requireNonNull(table, "table");
      return this;
    }

    /**
     * The volume records as the store held them at open ({@code stateStore.loadAll(STORE_PREFIX)}),
     * read before another module's restore took the store's first {@code loadAll()}; by default the
     * manager reads them itself at {@link #build()}.
     */
    public Builder records(Map<String, byte[]> records) {
      this.records = Map.copyOf(Objects.requireNonNull(records, "records"));
      return this;
    }

    /** Required: where node and controller plugins are found. */
    public Builder registry(PluginRegistry registry) {
      this.registry = Objects.requireNonNull(registry, "registry");
      return this;
    }

    /** Required: where volume records are committed (the registry's store is the intended one). */
    public Builder stateStore(StateStore stateStore) {
      this.stateStore = Objects.requireNonNull(stateStore, "stateStore");
      return this;
    }

    /** Required: the CSI root; every staging and target path lies under it. */
    public Builder csiRoot(Path csiRoot) {
      this.csiRoot = Objects.requireNonNull(csiRoot, "csiRoot").toAbsolutePath().normalize();
      return this;
    }

    /** Required: runs timers (plugin waits, retries, health checks). Not closed by the manager. */
    public Builder scheduler(ScheduledExecutorService scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
      return this;
    }

    /** The clock for event times, and the nano ticker for call latencies (defaults: system). */
    public Builder clock(Clock clock, LongSupplier nanoTime) {
      this.clock = Objects.requireNonNull(clock, "clock");
      this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
      return this;
    }

    /**
     * How long a mount waits for its node plugin to be ready, and a create or delete for its controller plugin
     * (default 1 min).
     */
    public Builder mountWait(Duration mountWait) {
      this.mountWait = Bounds.positive(Objects.requireNonNull(mountWait, "mountWait"), "mountWait");
      return this;
    }

    /** How often mounted volumes' conditions are read, where the plugin reports them; zero: never (default 1 min). */
    public Builder healthInterval(Duration healthInterval) {
      this.healthInterval = Bounds.notNegative(Objects.requireNonNull(healthInterval, "healthInterval"), "healthInterval");
      return this;
    }

    /** Attempts of one CSI call on transient errors, and the backoff between them (default 5, 200 ms to 10 s). */
    public Builder retry(int maxAttempts, Duration initialBackoff, Duration maxBackoff) {
      this.maxAttempts = Bounds.atLeast(maxAttempts, 1, "maxAttempts");
      this.initialBackoff = Bounds.positive(Objects.requireNonNull(initialBackoff, "initialBackoff"), "initialBackoff");
      this.maxBackoff = Bounds.notBelow(Objects.requireNonNull(maxBackoff, "maxBackoff"), "maxBackoff",
          initialBackoff, "initialBackoff");
      return this;
    }

    /**
     * How long a stage, publish or controller publish whose outcome is uncertain (answered DEADLINE_EXCEEDED,
     * ABORTED or UNAVAILABLE, or the plugin could not be reached) is sent again before the mount gives up and
     * is rolled back (default 10 min: a stage may be formatting a large disk).
     */
    public Builder operationDeadline(Duration operationDeadline) {
      this.operationDeadline = Bounds.positive(Objects.requireNonNull(operationDeadline, "operationDeadline"),
          "operationDeadline");
      return this;
    }

    /** The longest wait between two tries of a pending unmount or rollback whose plugin is ready but failing (default 2 min). */
    public Builder pendingRetryMax(Duration pendingRetryMax) {
      this.pendingRetryMax = Bounds.positive(Objects.requireNonNull(pendingRetryMax, "pendingRetryMax"), "pendingRetryMax");
      return this;
    }

    /** Options of the clients made for plugin sockets (default: {@link CsiClientOptions#defaults()}). */
    public Builder clientOptions(CsiClientOptions options) {
      this.clientOptions = Objects.requireNonNull(options, "options");
      return this;
    }

    /** How a client for a plugin socket is made (default {@link CsiClient#create(Path, CsiClientOptions)}). */
    public Builder clientFactory(Function<Path, CsiClient> factory) {
      this.clientFactory = Objects.requireNonNull(factory, "factory");
      return this;
    }

    /** Told of every CSI call (metrics). */
    public Builder observer(VolumeObserver observer) {
      this.observer = Objects.requireNonNull(observer, "observer");
      return this;
    }

    /**
     * A listener of every event from the very start, on {@code executor}: those of the restore and of the first
     * settles too, which come before {@link VolumeManager#addListener} can be called on the built manager (a
     * volume found LOST or PENDING after a restart). Repeatable; it lives as long as the manager.
     */
    public Builder listener(VolumeListener listener, java.util.concurrent.Executor executor) {
      listeners.add(java.util.Map.entry(Objects.requireNonNull(listener, "listener"),
          Objects.requireNonNull(executor, "executor")));
      return this;
    }

    /** The backoff jitter's randomness (tests pass a seeded one). */
    public Builder random(Random random) {
      this.random = Objects.requireNonNull(random, "random");
      return this;
    }

    /**
     * Restores every volume record from the state store and starts following the registry.
     *
     * @throws IllegalStateException if a required setting is missing
     * @throws UncheckedIOException never; unreadable records are reported by {@link VolumeManager#recovered()}
     */
    public VolumeManager build() {
      if (registry == null || stateStore == null || csiRoot == null || scheduler == null) {
        throw new IllegalStateException("registry, stateStore, csiRoot and scheduler are required");
      }
      return DefaultVolumeManager.start(this);
    }
  }
}
