package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.CsiEndpoint;
import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.csi.v1.PluginCapability;
import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real CSI plugin gRPC server on a unix domain socket whose behaviour is scripted: ready after a
 * delay, never ready, hanging or failing probes, flapping readiness, a new vendor version or
 * capability set, added latency, an abrupt crash; and for any RPC, failures with any status code,
 * hangs, scripted answers and delays ({@link #failCalls}, {@link #hangCalls}, {@link #replyCalls},
 * {@link #delayCalls}), with a count and the last request of every method ({@link #callCount},
 * {@link #lastRequest}).
 *
 * <p>Serves Identity always, Controller and/or Node according to its {@link MockMode}. The
 * capability and info RPCs answer from the script; every other Controller and Node RPC is answered
 * by an {@link InMemoryDriver}, volumes and snapshots kept in memory (or, with a {@link Builder#cloud shared
 * cloud}, in the cloud file other plugin processes share). A whole service the mode does not serve returns
 * {@code UNIMPLEMENTED}.
 *
 * <p><b>Threads.</b> gRPC handlers run directly on the Netty event loop and never block: a hung
 * probe keeps its call open without holding a thread, latency is a task scheduled on the event
 * loop. By default each plugin owns a one-thread epoll event loop; pass a shared one with
 * {@link Builder#eventLoopGroup} to run many plugins in one JVM (the plugin never shuts a shared
 * group down).
 *
 * <p><b>Thread-safety.</b> Every method is thread-safe. Behaviour setters may be called before
 * {@link #start()} (so a plugin is never seen ready before its script is set) or while running;
 * they take effect on the next call the plugin receives. Lifecycle: {@code NEW → RUNNING →
 * STOPPED | CRASHED}; it never goes back, except that a failed {@link #start()} leaves the plugin
 * {@code NEW} so the caller may fix the path and try again.
 *
 * <p>Readiness is read from the injected ticker ({@link Builder#ticker}), so tests drive
 * {@code readyAfter} and {@code flap} with a fake clock instead of waiting.
 *
 * <p>In the source, its parts: the scripting methods (readiness, probe and per-RPC faults, call
 * records, identity, capabilities, latency) are declared in the package-private
 * {@code ScriptedPlugin} it extends; the bound gRPC server is a {@code PluginServer}; this class
 * has the lifecycle and the {@link Builder} (whose capability and driver setters are in its bases).
 */
public final class MockCsiPlugin extends ScriptedPlugin implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(MockCsiPlugin.class);

  private enum State { NEW, RUNNING, STOPPED, CRASHED }

  private final Path socket;
  private final MockMode mode;
  private final boolean createParentDirs;
  private final Duration initialReadyAfter;
  private final EventLoopGroup sharedGroup;
  private final java.util.concurrent.ScheduledExecutorService waits; // null: the event loop

  private final Object lifecycle = new Object();
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final CountDownLatch terminated = new CountDownLatch(1);
  // Written under `lifecycle` by start(); read by stop()/crash() under the same lock.
  private PluginServer server;

  private MockCsiPlugin(Builder b) {
    super(b);
    this.socket = b.socket;
    this.mode = b.mode;
    this.createParentDirs = b.createParentDirs;
    this.initialReadyAfter = b.neverReady ? null : b.readyAfter;
    this.sharedGroup = b.eventLoopGroup;
    this.waits = b.waits;
  }

  /** A new builder; {@link Builder#socket(Path)} is required, everything else has a default. */
  public static Builder builder() {
    return new Builder();
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  /**
   * Binds the socket and starts serving. Before binding, a stale socket file at the path (a socket
   * nobody accepts on) is removed; anything else there is refused. The parent directory is created
   * only if {@link Builder#createParentDirs(boolean)} said so.
   *
   * @return this plugin, running
   * @throws IOException naming the path: the parent directory is missing, a regular file,
   *     directory, symbolic link or live socket is at the path, or binding failed; or naming the
   *     {@link Builder#stateFile state file} (and line) if it cannot be read or is malformed; or
   *     naming the option if {@link Builder#realMounts real mounts} were asked for and the process
   *     is not root. The plugin stays {@code NEW} and may be started again.
   * @throws IllegalStateException if the plugin was already started or stopped
   */
  public MockCsiPlugin start() throws IOException {
    synchronized (lifecycle) {
      State current = state.get();
      if (current != State.NEW) {
        throw new IllegalStateException("mock CSI plugin on " + socket + " cannot start: it is " + current);
      }
      if (!Epoll.isAvailable()) {
        throw new IOException("epoll transport is unavailable, cannot serve unix socket " + socket,
            Epoll.unavailabilityCause());
      }
      driver.prepareRealMounts();
      driver.loadState(); // before binding: no client sees the driver without its saved volumes
      SocketFiles.prepare(socket, createParentDirs);
      EventLoopGroup group = sharedGroup != null ? sharedGroup : PluginServer.newOwnedGroup(socket);
      Responder responder = new Responder(script, waits != null ? waits : group);
      IdentityService identityService = new IdentityService(script, responder);
      ServiceTable services = new CsiServices(script, driver, identityService).table(responder, faults);
      if (initialReadyAfter != null && !initialReadyAfter.isZero()) {
        script.readyAfter(initialReadyAfter);
      }
      CallerInterceptor callers = new CallerInterceptor(faults, (caller, method) -> {
        SharedCloud cloud = driver.cloud();
        if (cloud != null) {
          cloud.controllerCall(script.pluginInfo().getName(), caller, method);
        }
      });
      server = PluginServer.start(socket, mode, services, callers, group, sharedGroup == null);
      identity = identityService;
      state.set(State.RUNNING);
    }
    log.info("mock CSI plugin '{}' ({}) serving on {}", script.pluginInfo().getName(), mode, socket);
    return this;
  }

  /**
   * Graceful stop: answers hung probes with {@code UNAVAILABLE}, lets in-flight calls finish (up to
   * 5 s), closes the server and removes the socket file. Idempotent; a no-op after {@link #crash()}.
   * Stopping a plugin that never started just marks it stopped.
   */
  public void stop() {
    synchronized (lifecycle) {
      State current = state.get();
      if (current == State.NEW) {
        state.set(State.STOPPED);
        terminated.countDown();
        return;
      }
      if (current != State.RUNNING) {
        return;
      }
      state.set(State.STOPPED);
      // Hung probes and calls would hold the graceful shutdown for its whole grace period.
      failHungCalls(Status.UNAVAILABLE.withDescription("mock CSI plugin stopping"));
      server.stop();
      terminated.countDown();
    }
    log.info("mock CSI plugin stopped, socket {} removed", socket);
  }

  /**
   * Abrupt stop, as if the process were killed: every connection is closed at the socket level
   * with no HTTP/2 goodbye (a call in flight fails with {@code UNAVAILABLE}, as against a dead
   * process), the server is shut down at once, and the socket file is LEFT BEHIND with nobody
   * accepting on it, so new connections are refused (a stale socket). A no-op if the plugin
   * already stopped or crashed.
   *
   * @throws IllegalStateException if the plugin was never started
   */
  public void crash() {
    synchronized (lifecycle) {
      State current = state.get();
      if (current == State.NEW) {
        throw new IllegalStateException("mock CSI plugin on " + socket + " cannot crash: it never started");
      }
      if (current != State.RUNNING) {
        return;
      }
      state.set(State.CRASHED);
      script.releaseAllParked(); // dropped with their connections
      faults.releaseAll();
      server.crash();
      terminated.countDown();
    }
    log.info("mock CSI plugin crashed, stale socket left at {}", socket);
  }

  /** Same as {@link #stop()}: graceful, idempotent, leaves a crashed plugin's stale socket alone. */
  @Override
  public void close() {
    stop();
  }

  /** Blocks until the plugin has stopped or crashed. */
  public void awaitStopped() throws InterruptedException {
    terminated.await();
  }

  /** Blocks up to {@code timeout} until the plugin has stopped or crashed; returns whether it has. */
  public boolean awaitStopped(Duration timeout) throws InterruptedException {
    return terminated.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Whether the plugin is serving (started, and neither stopped nor crashed). */
  public boolean isRunning() {
    return state.get() == State.RUNNING;
  }

  /** The absolute socket path. */
  public Path socket() {
    return socket;
  }

  /** The target string a gRPC channel builder accepts: {@code unix:///abs/path}. */
  public String target() {
    return CsiEndpoint.of(socket);
  }

  public MockMode mode() {
    return mode;
  }

  // ---- standalone ---------------------------------------------------------------------------------

  /**
   * Runs a mock plugin as a program. See {@code --help}; prints {@code READY-TO-SERVE <socket>}
   * once bound, stops gracefully on SIGTERM/SIGINT. Exit code 2 on bad arguments.
   */
  public static void main(String[] args) {
    System.exit(MockPluginCommand.runMain(args));
  }

  @Override
  public String toString() {
    return "MockCsiPlugin[" + script.pluginInfo().getName() + ", " + mode + ", " + socket + ", " + state.get() + "]";
  }

  /**
   * Configures a {@link MockCsiPlugin}. Not thread-safe; {@link #build()} may be called more than
   * once (each plugin gets its own copy of the settings).
   *
   * <p>In the source, the capability setters are declared in the package-private {@code CapabilityOptions} and
   * the in-memory driver's ({@link #stateFile}, {@link #cloud}, {@link #realMounts}, {@link #pools}, ...) in
   * {@code DriverOptions}, which it extends; this class has the socket, identity, probe and serving settings.
   */
  public static final class Builder extends CapabilityOptions<Builder> {
    // Read when a plugin is built, by its constructor and ScriptedPlugin's.
    Path socket;
    String name = "mock.csi.dev";
    String vendorVersion = "1.0.0";
    MockMode mode = MockMode.MONOLITH;
    Duration readyAfter = Duration.ZERO;
    boolean neverReady;
    boolean createParentDirs;
    Map<String, String> manifest = Map.of();
    String nodeId = "node-1";
    long maxVolumesPerNode;
    Map<String, String> accessibleTopology = Map.of();
    Duration latency = Duration.ZERO;
    boolean omitReady;
    Duration hangAfterReady;
    EventLoopGroup eventLoopGroup;
    java.util.concurrent.ScheduledExecutorService waits;
    LongSupplier ticker = System::nanoTime;

    private Builder() {
    }

    @Override
    Builder self() {
      return this;
    }

    /** Required. The socket path (made absolute); at most 107 bytes, the unix limit. */
    public Builder socket(Path socket) {
      this.socket = SocketFiles.checkedPath(socket);
      return this;
    }

    /** GetPluginInfo name; default {@code mock.csi.dev}. Not validated, so clients can be fed bad names. */
    public Builder name(String name) {
      this.name = Objects.requireNonNull(name, "name");
      return this;
    }

    /** GetPluginInfo vendor_version; default {@code 1.0.0}. */
    public Builder vendorVersion(String vendorVersion) {
      this.vendorVersion = Objects.requireNonNull(vendorVersion, "vendorVersion");
      return this;
    }

    /** Which services are served; default {@link MockMode#MONOLITH}. */
    public Builder mode(MockMode mode) {
      this.mode = Objects.requireNonNull(mode, "mode");
      return this;
    }

    /** Probe reports not ready until {@code delay} after {@link #start()}; default zero. */
    public Builder readyAfter(Duration delay) {
      this.readyAfter = Bounds.notNegative(delay, "readyAfter");
      return this;
    }

    /** Probe reports not ready until told otherwise (overrides {@link #readyAfter}). */
    public Builder neverReady() {
      this.neverReady = true;
      return this;
    }

    /** Whether {@link #start()} may create a missing parent directory; default false. */
    public Builder createParentDirs(boolean create) {
      this.createParentDirs = create;
      return this;
    }

    /** GetPluginInfo manifest; default empty. */
    public Builder manifest(Map<String, String> manifest) {
      this.manifest = Map.copyOf(manifest);
      return this;
    }

    /** NodeGetInfo node_id; default {@code node-1}. */
    public Builder nodeId(String nodeId) {
      this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
      return this;
    }

    /** NodeGetInfo max_volumes_per_node; default 0 (not set: the CO decides). Sent as given, even if negative. */
    public Builder maxVolumesPerNode(long maxVolumesPerNode) {
      this.maxVolumesPerNode = maxVolumesPerNode;
      return this;
    }

    /** NodeGetInfo accessible_topology segments; default empty (field unset). */
    public Builder accessibleTopology(Map<String, String> segments) {
      this.accessibleTopology = Map.copyOf(segments);
      return this;
    }

    /** Ready probes are answered without the {@code ready} field (absent means ready). */
    public Builder omitReadyField() {
      this.omitReady = true;
      return this;
    }

    /** Probes hang once the plugin has been ready for {@code after}; see {@link MockCsiPlugin#hangProbesAfterReady}. */
    public Builder hangProbesAfterReady(Duration after) {
      this.hangAfterReady = Bounds.notNegative(after, "hangProbesAfterReady");
      return this;
    }

    /**
     * Advertises everything the in-memory driver implements (what csi-sanity then tests):
     * plugin CONTROLLER_SERVICE (if the mode serves Controller) and online volume expansion;
     * every Controller RPC capability but MODIFY_VOLUME; node STAGE_UNSTAGE_VOLUME,
     * GET_VOLUME_STATS, EXPAND_VOLUME, VOLUME_CONDITION, SINGLE_NODE_MULTI_WRITER.
     */
    public Builder allCapabilities() {
      List<PluginCapability> plugin = new java.util.ArrayList<>();
      if (mode.servesController()) {
        plugin.addAll(Capabilities.PLUGIN.of(PluginCapability.Service.Type.CONTROLLER_SERVICE));
      }
      plugin.add(PluginCapability.newBuilder().setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
          .setType(PluginCapability.VolumeExpansion.Type.ONLINE)).build());
      this.pluginCapabilities = List.copyOf(plugin);
      this.controllerCapabilities = DriverController.CAPABILITIES;
      this.nodeCapabilities = DriverNode.CAPABILITIES;
      return this;
    }

    /** Delay added to every response; default zero. */
    public Builder latency(Duration latency) {
      this.latency = Bounds.notNegative(latency, "latency");
      return this;
    }

    /**
     * An epoll event loop group to serve on, shared with other plugins (e.g.
     * {@code new MultiThreadIoEventLoopGroup(n, EpollIoHandler.newFactory())}). The plugin never
     * shuts it down. Default: the plugin owns a one-thread group.
     */
    public Builder eventLoopGroup(EventLoopGroup group) {
      this.eventLoopGroup = Objects.requireNonNull(group, "eventLoopGroup");
      return this;
    }

    /**
     * Where the plugin's timed answers wait: the {@link #latency}, a delayed call ({@code delayCalls}), a slow create
     * ({@link #createTime}) and a snapshot's cut ({@link #snapshotTime}). Default: the plugin's event loop, in real
     * time. A test passes a scheduler with virtual time ({@code dev.csisupervisor.testing.FakeScheduler}) and moves
     * it forward instead of waiting; the answer is then sent from the thread that moves it. Never shut down by the
     * plugin.
     */
    Builder waits(java.util.concurrent.ScheduledExecutorService scheduler) {
      this.waits = Objects.requireNonNull(scheduler, "waits");
      return this;
    }

    /** Nanosecond ticker for readyAfter and flapping; default {@code System::nanoTime}. */
    public Builder ticker(LongSupplier nanoTime) {
      this.ticker = Objects.requireNonNull(nanoTime, "ticker");
      return this;
    }

    /**
     * A new plugin, not started.
     *
     * @throws IllegalStateException if no socket was given
     */
    public MockCsiPlugin build() {
      if (socket == null) {
        throw new IllegalStateException("socket is required: call socket(Path) before build()");
      }
      return new MockCsiPlugin(this);
    }

    /** {@code build().start()}. */
    public MockCsiPlugin start() throws IOException {
      return build().start();
    }
  }
}
