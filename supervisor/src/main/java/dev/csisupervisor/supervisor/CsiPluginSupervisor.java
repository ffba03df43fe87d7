package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.FileWatcher;
import dev.csisupervisor.registry.PluginRegistry;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Random;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;

/**
 * The node's CSI plugin supervisor: makes one {@link CsiPluginSupervisorHook} per plugin task,
 * all sharing one scheduled executor (no thread per plugin), one clock and one file watcher.
 *
 * <p>Thread-safe. The scheduler is the caller's: the supervisor never shuts it down. Closing the
 * supervisor stops its own file watcher (a {@link Builder#fileWatcher given one} is the caller's
 * to close); stop the hooks first (each deregisters its plugin).
 */
public final class CsiPluginSupervisor implements AutoCloseable {
  private enum State { RUNNING, CLOSED }

  /** Threads that run registrations when the host gives no executor of its own. */
  static final int REGISTRY_THREADS = 4;

  private final Path csiRoot;
  private final ExecutorService ownedRegistryExecutor;
  private final FileWatcher watcher;
  private final boolean ownsWatcher;
  private final AtomicReference<State> state = new AtomicReference<>(State.RUNNING);
  private final SupervisorServices services;

  private CsiPluginSupervisor(Builder b) {
    this.csiRoot = requireNonNull(b.csiRoot, "csiRoot");
    if (!csiRoot.isAbsolute()) {
      throw new IllegalArgumentException("csiRoot must be an absolute path, got " + csiRoot);
    }
    PluginRegistry registry = requireNonNull(b.registry, "registry");
    ScheduledExecutorService scheduler = requireNonNull(b.scheduler, "scheduler");
    Executor registryExecutor;
    if (b.registryExecutor != null) {
      registryExecutor = b.registryExecutor;
      this.ownedRegistryExecutor = null;
    } else {
      ThreadPoolExecutor pool = new ThreadPoolExecutor(REGISTRY_THREADS, REGISTRY_THREADS, 0,
          TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), runnable -> {
            Thread t = new Thread(runnable, "csi-supervisor-registry");
            t.setDaemon(true);
            return t;
          });
      pool.prestartAllCoreThreads();
      registryExecutor = pool;
      this.ownedRegistryExecutor = pool;
    }
    this.ownsWatcher = b.fileWatcher == null;
    this.watcher = ownsWatcher ? new FileWatcher() : b.fileWatcher;
    this.services = new SupervisorServices(csiRoot, registry, registryExecutor, scheduler,
        requireNonNull(b.clock, "clock"), requireNonNull(b.nanoTicker, "nanoTicker"), requireNonNull(b.random, "random"),
        b.connector != null ? b.connector : CsiClientConnection::open, watcher,
        requireNonNull(b.probeObserver, "probeObserver"));
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * A hook for one task's plugin. Validates the config against this node (the socket path must
   * fit the unix limit under {@code csiRoot}) and throws {@link IllegalArgumentException} naming
   * the problem; nothing touches the disk until prestart.
   */
  public CsiPluginSupervisorHook hook(TaskContext task, CsiPluginConfig config,
      TaskEventEmitter events, TaskLifecycle lifecycle) {
    if (state.get() == State.CLOSED) {
      throw new IllegalStateException("supervisor is closed");
    }
    return new DefaultCsiPluginSupervisorHook(task, config, services, events, lifecycle);
  }

  public Path csiRoot() {
    return csiRoot;
  }

  @Override
  public void close() {
    if (state.getAndSet(State.CLOSED) == State.CLOSED) {
      return;
    }
    if (ownsWatcher) {
      watcher.close();
    }
    if (ownedRegistryExecutor != null) {
      ownedRegistryExecutor.shutdown();
    }
  }

  /** Builder; {@code csiRoot}, {@code registry} and {@code scheduler} are required. */
  public static final class Builder {
    private Path csiRoot;
    private PluginRegistry registry;
    private ScheduledExecutorService scheduler;
    private Executor registryExecutor;
    private Clock clock = Clock.systemUTC();
    private Random random = new Random();
    private PluginConnection.Connector connector;
    private ProbeObserver probeObserver = ProbeObserver.none();
    private LongSupplier nanoTicker = System::nanoTime;
    private FileWatcher fileWatcher;

    private Builder() {}

    /** Root of the plugin directories, {@code <csiRoot>/<type>/<pluginId>/csi.sock}. */
    public Builder csiRoot(Path v) { this.csiRoot = v; return this; }
    public Builder registry(PluginRegistry v) { this.registry = v; return this; }
    /** The shared scheduler every hook's timers and RPC completions run on. */
    public Builder scheduler(ScheduledExecutorService v) { this.scheduler = v; return this; }
    /**
     * Where every durable registry commit of the hooks runs (registrations, health updates,
     * deregistrations other than {@code stop()}'s own, which runs on its caller), off the scheduler
     * and outside every hook's lock; one hook's commits stay in order. Default: a pool of
     * {@value #REGISTRY_THREADS} daemon threads owned and shut down by the supervisor.
     */
    public Builder registryExecutor(Executor v) { this.registryExecutor = v; return this; }
    /** The clock for event and health timestamps (timers use the scheduler). */
    public Builder clock(Clock v) { this.clock = v; return this; }
    /** The randomness behind backoff jitter; seed it for reproducible runs. */
    public Builder random(Random v) { this.random = v; return this; }
    /** Sees every probe (latency, outcome), e.g. for a latency histogram. */
    public Builder probeObserver(ProbeObserver v) { this.probeObserver = v; return this; }
    /** The ticker probe latencies are measured with. */
    public Builder nanoTicker(LongSupplier v) { this.nanoTicker = v; return this; }
    /**
     * The watcher that sees plugin sockets appear, shared with the host's other users of one
     * (the agent's discovery directory): one inotify instance and one thread for all. The caller
     * closes it, after this supervisor. Default: one of the supervisor's own.
     */
    public Builder fileWatcher(FileWatcher v) { this.fileWatcher = v; return this; }
    Builder connector(PluginConnection.Connector v) { this.connector = v; return this; }

    public CsiPluginSupervisor build() {
      return new CsiPluginSupervisor(this);
    }
  }
}
