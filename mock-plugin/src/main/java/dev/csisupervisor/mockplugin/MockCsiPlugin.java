package dev.csisupervisor.mockplugin;

import com.google.protobuf.Message;
import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.common.SocketPaths;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.GetPluginInfoResponse;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodeGrpc;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.ProbeResponse;
import dev.csisupervisor.csi.v1.Topology;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
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
 * by an {@link InMemoryDriver}, volumes and snapshots kept in memory. A whole service the mode does
 * not serve returns {@code UNIMPLEMENTED}.
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
 */
public final class MockCsiPlugin implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(MockCsiPlugin.class);

  /** How long a graceful stop waits for in-flight calls before cutting them off. */
  private static final Duration STOP_GRACE = Duration.ofSeconds(5);

  private enum State { NEW, RUNNING, STOPPED, CRASHED }

  private final Path socket;
  private final MockMode mode;
  private final boolean createParentDirs;
  private final Duration initialReadyAfter;
  private final EventLoopGroup sharedGroup;
  private final Script script;
  private final InMemoryDriver driver;
  private final CallFaults faults = new CallFaults();

  private final Object lifecycle = new Object();
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final CountDownLatch terminated = new CountDownLatch(1);
  // Written under `lifecycle` by start(); read by stop()/crash() under the same lock.
  private Server server;
  private EventLoopGroup ownedGroup;
  private ConnectionKiller connections;
  private volatile IdentityService identity;

  private MockCsiPlugin(Builder b) {
    this.socket = b.socket;
    this.mode = b.mode;
    this.createParentDirs = b.createParentDirs;
    this.initialReadyAfter = b.neverReady ? null : b.readyAfter;
    this.sharedGroup = b.eventLoopGroup;
    this.script = new Script(b.ticker);
    this.driver = new InMemoryDriver(script, java.time.Clock.systemUTC(),
        b.stateFile != null ? new DriverStateFile(b.stateFile) : null);
    script.updatePluginInfo(info -> info
        .setName(b.name)
        .setVendorVersion(b.vendorVersion)
        .putAllManifest(b.manifest));
    script.setPluginCapabilities(b.pluginCapabilities != null
        ? b.pluginCapabilities
        : defaultPluginCapabilities(b.mode));
    script.setControllerCapabilities(b.controllerCapabilities);
    script.setNodeCapabilities(b.nodeCapabilities);
    script.setNodeInfo(nodeInfo(b.nodeId, b.maxVolumesPerNode, b.accessibleTopology));
    script.setLatency(b.latency);
    if (b.neverReady) {
      script.setReady(false);
    }
    script.setOmitReady(b.omitReady);
    if (b.hangAfterReady != null) {
      script.hangAfterReady(b.hangAfterReady);
    }
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
   *     {@link Builder#stateFile state file} (and line) if it cannot be read or is malformed. The
   *     plugin stays {@code NEW} and may be started again.
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
      driver.loadState(); // before binding: no client sees the driver without its saved volumes
      SocketFiles.prepare(socket, createParentDirs);
      EventLoopGroup group = sharedGroup != null ? sharedGroup : newOwnedGroup();
      Responder responder = new Responder(script, group);
      IdentityService identityService = new IdentityService(script, responder);
      ServiceTable services = new CsiServices(script, driver, identityService).table(responder, faults);
      ConnectionKiller killer = new ConnectionKiller();
      NettyServerBuilder builder = NettyServerBuilder.forAddress(new DomainSocketAddress(socket.toString()))
          .channelFactory(killer)
          .bossEventLoopGroup(group)
          .workerEventLoopGroup(group)
          // gRPC sets SO_KEEPALIVE on accepted channels; unix sockets have no such option
          // and Netty would warn on every connection.
          .withChildOption(ChannelOption.SO_KEEPALIVE, null)
          .directExecutor()
          .addService(services.service(IdentityGrpc.getServiceDescriptor()));
      if (mode.servesController()) {
        builder.addService(services.service(ControllerGrpc.getServiceDescriptor()));
      }
      if (mode.servesNode()) {
        builder.addService(services.service(NodeGrpc.getServiceDescriptor()));
      }
      if (initialReadyAfter != null && !initialReadyAfter.isZero()) {
        script.readyAfter(initialReadyAfter);
      }
      try {
        server = builder.build().start();
      } catch (IOException | RuntimeException e) {
        if (sharedGroup == null) {
          shutdownGroup(group);
        }
        throw new IOException("mock CSI plugin cannot bind unix socket " + socket + ": " + e.getMessage(), e);
      }
      ownedGroup = sharedGroup == null ? group : null;
      connections = killer;
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
      // Hung probes would hold the graceful shutdown for its whole grace period.
      Status stopping = Status.UNAVAILABLE.withDescription("mock CSI plugin stopping");
      for (StreamObserver<ProbeResponse> parked : script.hangProbes(false)) {
        try {
          parked.onError(stopping.asRuntimeException());
        } catch (RuntimeException e) {
          log.debug("parked probe already gone: {}", e.toString());
        }
      }
      for (StreamObserver<?> hung : faults.releaseAll()) {
        try {
          hung.onError(stopping.asRuntimeException());
        } catch (RuntimeException e) {
          log.debug("hung call already gone: {}", e.toString());
        }
      }
      server.shutdown();
      try {
        if (!server.awaitTermination(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
          log.warn("mock CSI plugin on {}: calls still running after {}, cutting them off", socket, STOP_GRACE);
          server.shutdownNow();
          server.awaitTermination(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
        }
      } catch (InterruptedException e) {
        server.shutdownNow();
        Thread.currentThread().interrupt();
      }
      shutdownGroup(ownedGroup);
      try {
        SocketFiles.removeSocket(socket);
      } catch (IOException e) {
        log.warn("mock CSI plugin could not remove its socket {}: {}", socket, e.toString());
      }
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
      // Like a killed process: connections vanish without an HTTP/2 goodbye, so clients see
      // UNAVAILABLE whatever they were doing. Only then is the server object shut down.
      connections.killAll(STOP_GRACE);
      server.shutdownNow();
      try {
        server.awaitTermination(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      shutdownGroup(ownedGroup);
      try {
        SocketFiles.leaveStale(socket);
      } catch (IOException e) {
        log.warn("mock CSI plugin could not leave a stale socket at {}: {}", socket, e.toString());
      }
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
    return "unix://" + socket;
  }

  public MockMode mode() {
    return mode;
  }

  // ---- readiness --------------------------------------------------------------------------------

  /** Probe reports {@code ready} from the next call on (cancels a pending {@link #readyAfter}). */
  public void setReady(boolean ready) {
    script.setReady(ready);
  }

  /** Probe reports not ready until told otherwise. */
  public void neverReady() {
    script.setReady(false);
  }

  /** Probe reports not ready until {@code delay} has passed on the ticker, from now. */
  public void readyAfter(Duration delay) {
    script.readyAfter(delay);
  }

  /**
   * Probe alternates: ready for {@code period}, not ready for the next {@code period}, and so on,
   * from now on the ticker. Overrides the ready setting until {@link #stopFlapping()}.
   */
  public void flap(Duration period) {
    script.flap(period);
  }

  /** Ends flapping; Probe goes back to the ready setting. */
  public void stopFlapping() {
    script.stopFlapping();
  }

  /** Whether a Probe received now would report ready (ignoring hang and failure). */
  public boolean isReadyNow() {
    return script.isReadyNow();
  }

  /**
   * Whether a ready Probe answer leaves out the {@code ready} field, as many drivers do (CSI: "If
   * not present, the caller SHALL assume that the plugin is in a ready state"). Not-ready answers
   * always carry {@code ready=false}.
   */
  public void omitReadyField(boolean omit) {
    script.setOmitReady(omit);
  }

  /**
   * Probes start hanging once the plugin has answered ready for {@code after} (measured on the
   * ticker from the first probe that found it ready): a plugin that hangs after registration.
   * {@link #hangProbes(boolean) hangProbes(false)} ends it.
   */
  public void hangProbesAfterReady(Duration after) {
    script.hangAfterReady(Objects.requireNonNull(after, "after"));
  }

  // ---- probe faults -----------------------------------------------------------------------------

  /**
   * While {@code hang} is true, Probe never answers: the call stays open (no thread held) until
   * the client's deadline cancels it. Switching it off answers the probes still waiting; a stop
   * answers them with {@code UNAVAILABLE}.
   */
  public void hangProbes(boolean hang) {
    List<StreamObserver<ProbeResponse>> released = script.hangProbes(hang);
    IdentityService service = identity;
    if (service != null) {
      released.forEach(service::answer);
    }
  }

  /** Probe fails with this status until {@link #clearProbeFailure()}. {@code code} must not be OK. */
  public void failProbes(Status.Code code, String message) {
    script.failProbes(code, message);
  }

  public void clearProbeFailure() {
    script.clearProbeFailure();
  }

  /** What the driver has staged now: volume id -> staging paths (for tests that look for leaked stages). */
  public Map<String, java.util.Set<String>> stagedPaths() {
    return driver.stagedPaths();
  }

  /** What the driver has published now: volume id -> target paths. */
  public Map<String, java.util.Set<String>> publishedPaths() {
    return driver.publishedPaths();
  }

  /** Probe calls received so far, including hung and failed ones. */
  public long probeCount() {
    return script.probeCount();
  }

  /** Probe calls currently hanging (received, not answered, not cancelled). */
  public int hungProbeCount() {
    return script.parkedCount();
  }

  // ---- per-RPC faults and call records --------------------------------------------------------------
  // A method is a MethodDescriptor of CSI Identity, Controller or Node (e.g.
  // NodeGrpc.getNodePublishVolumeMethod()), or its name: full ("csi.v1.Node/NodePublishVolume") or
  // bare ("NodePublishVolume"). Anything else is an IllegalArgumentException naming it.

  /**
   * The next {@code times} calls of {@code method} (every call, if -1) fail with {@code code} and
   * {@code message} (null: no message), before the driver sees them: the driver's state does not
   * change. Faults of one method queue up: {@code failCalls(m, UNAVAILABLE, "busy", 2)} then
   * {@code hangCalls(m, 1)} fails two calls, hangs the third, and lets the fourth through. A fault
   * with {@code times} -1 holds every later call, and the faults queued behind it never come.
   *
   * @throws IllegalArgumentException if {@code code} is OK, or {@code times} is 0 or below -1
   */
  public void failCalls(MethodDescriptor<?, ?> method, Status.Code code, String message, int times) {
    faults.fail(CallFaults.fullName(method), code, message, times);
  }

  /** {@link #failCalls(MethodDescriptor, Status.Code, String, int)} by name. */
  public void failCalls(String method, Status.Code code, String message, int times) {
    faults.fail(CallFaults.fullName(method), code, message, times);
  }

  /**
   * The next {@code times} calls of {@code method} (every call, if -1) never answer, until the
   * client's deadline or cancel ends them (no thread is held), and never reach the driver. Queued
   * with the method's other faults, as {@link #failCalls(MethodDescriptor, Status.Code, String, int)}
   * says. A graceful {@link #stop()} answers calls still hanging with {@code UNAVAILABLE}.
   */
  public void hangCalls(MethodDescriptor<?, ?> method, int times) {
    faults.hang(CallFaults.fullName(method), times);
  }

  /** {@link #hangCalls(MethodDescriptor, int)} by name. */
  public void hangCalls(String method, int times) {
    faults.hang(CallFaults.fullName(method), times);
  }

  /**
   * The next {@code times} calls of {@code method} (every call, if -1) are answered with
   * {@code response} instead of the driver's answer (the driver does not see them): a plugin that
   * answers what a test needs, e.g. stats in a unit CSI does not define yet, or a volume with a
   * topology. Queued with the method's other faults, as
   * {@link #failCalls(MethodDescriptor, Status.Code, String, int)} says.
   */
  public <R> void replyCalls(MethodDescriptor<?, R> method, R response, int times) {
    faults.reply(CallFaults.fullName(method), response, times);
  }

  /**
   * Every call of {@code method} that no fault stops waits {@code delay} and then runs: the driver
   * does its work after the delay and the call answers with its real result. The wait is a task
   * on the event loop, not a sleeping thread. The work is done even if the client gave up
   * meanwhile, as a slow real driver would. Adds to the plugin-wide {@link #setLatency latency}.
   * Zero ends the delay.
   */
  public void delayCalls(MethodDescriptor<?, ?> method, Duration delay) {
    faults.delay(CallFaults.fullName(method), delay);
  }

  /** {@link #delayCalls(MethodDescriptor, Duration)} by name. */
  public void delayCalls(String method, Duration delay) {
    faults.delay(CallFaults.fullName(method), delay);
  }

  /**
   * Forgets every per-RPC fault and delay. Call counts and last requests stay; calls already
   * hanging keep hanging until their deadline. Probe scripting ({@link #failProbes},
   * {@link #hangProbes}) is separate and stays.
   */
  public void clearFaults() {
    faults.clear();
  }

  /** Calls of {@code method} received since the plugin was built, including failed, hung and delayed ones. */
  public long callCount(MethodDescriptor<?, ?> method) {
    return faults.callCount(CallFaults.fullName(method));
  }

  /** {@link #callCount(MethodDescriptor)} by name. */
  public long callCount(String method) {
    return faults.callCount(CallFaults.fullName(method));
  }

  /** The request of the last call of {@code method} received (also if it failed or hung); empty if none came. */
  @SuppressWarnings("unchecked") // the record of a method only ever holds that method's requests
  public <Q> Optional<Q> lastRequest(MethodDescriptor<Q, ?> method) {
    return Optional.ofNullable((Q) faults.lastRequest(CallFaults.fullName(method)));
  }

  /** {@link #lastRequest(MethodDescriptor)} by name. */
  public Optional<Message> lastRequest(String method) {
    return Optional.ofNullable((Message) faults.lastRequest(CallFaults.fullName(method)));
  }

  /** Calls hanging now by {@link #hangCalls} (received, not answered, not cancelled). */
  public int hungCallCount() {
    return faults.parkedCount();
  }

  // ---- identity, capabilities, latency ------------------------------------------------------------

  public void setName(String name) {
    Objects.requireNonNull(name, "name");
    script.updatePluginInfo(info -> info.setName(name));
  }

  public void setVendorVersion(String vendorVersion) {
    Objects.requireNonNull(vendorVersion, "vendorVersion");
    script.updatePluginInfo(info -> info.setVendorVersion(vendorVersion));
  }

  public void setManifest(Map<String, String> manifest) {
    Map<String, String> copy = Map.copyOf(manifest);
    script.updatePluginInfo(info -> info.clearManifest().putAllManifest(copy));
  }

  /** Plugin capabilities of the {@code Service} kind, as raw numbers (unknown numbers are sent as they are). */
  public void setPluginCapabilities(int... serviceTypes) {
    script.setPluginCapabilities(Capabilities.PLUGIN.of(serviceTypes));
  }

  public void setPluginCapabilities(PluginCapability.Service.Type... serviceTypes) {
    script.setPluginCapabilities(Capabilities.PLUGIN.of(serviceTypes));
  }

  /** Plugin capabilities as full messages (e.g. {@code VolumeExpansion}). */
  public void setPluginCapabilities(Collection<PluginCapability> capabilities) {
    script.setPluginCapabilities(Capabilities.PLUGIN.copy(capabilities));
  }

  public void setControllerCapabilities(int... rpcTypes) {
    script.setControllerCapabilities(Capabilities.CONTROLLER.of(rpcTypes));
  }

  public void setControllerCapabilities(ControllerServiceCapability.RPC.Type... rpcTypes) {
    script.setControllerCapabilities(Capabilities.CONTROLLER.of(rpcTypes));
  }

  public void setControllerCapabilities(Collection<ControllerServiceCapability> capabilities) {
    script.setControllerCapabilities(Capabilities.CONTROLLER.copy(capabilities));
  }

  public void setNodeCapabilities(int... rpcTypes) {
    script.setNodeCapabilities(Capabilities.NODE.of(rpcTypes));
  }

  public void setNodeCapabilities(NodeServiceCapability.RPC.Type... rpcTypes) {
    script.setNodeCapabilities(Capabilities.NODE.of(rpcTypes));
  }

  public void setNodeCapabilities(Collection<NodeServiceCapability> capabilities) {
    script.setNodeCapabilities(Capabilities.NODE.copy(capabilities));
  }

  /** Shorthand for {@link #setPluginCapabilities(PluginCapability.Service.Type...)}. */
  public void setCapabilities(PluginCapability.Service.Type... serviceTypes) {
    setPluginCapabilities(serviceTypes);
  }

  /** Shorthand for {@link #setControllerCapabilities(ControllerServiceCapability.RPC.Type...)}. */
  public void setCapabilities(ControllerServiceCapability.RPC.Type... rpcTypes) {
    setControllerCapabilities(rpcTypes);
  }

  /** Shorthand for {@link #setNodeCapabilities(NodeServiceCapability.RPC.Type...)}. */
  public void setCapabilities(NodeServiceCapability.RPC.Type... rpcTypes) {
    setNodeCapabilities(rpcTypes);
  }

  /** What NodeGetInfo answers from now on; an empty topology leaves the field unset. */
  public void setNodeInfo(String nodeId, long maxVolumesPerNode, Map<String, String> accessibleTopology) {
    script.setNodeInfo(nodeInfo(nodeId, maxVolumesPerNode, accessibleTopology));
  }

  /** Every response (and error) is delayed by {@code latency}; zero turns latency off. */
  public void setLatency(Duration latency) {
    script.setLatency(latency);
  }

  // ---- standalone ---------------------------------------------------------------------------------

  /**
   * Runs a mock plugin as a program. See {@code --help}; prints {@code READY-TO-SERVE <socket>}
   * once bound, stops gracefully on SIGTERM/SIGINT. Exit code 2 on bad arguments.
   */
  public static void main(String[] args) {
    System.exit(MockPluginCommand.runMain(args));
  }

  /** The script, for the standalone command in this package. */
  Script script() {
    return script;
  }

  // ---- internals ----------------------------------------------------------------------------------

  private EventLoopGroup newOwnedGroup() {
    // Daemon threads: a test that forgets to close a plugin must not keep its JVM alive.
    return new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("mock-csi-" + socket.getFileName(), true),
        EpollIoHandler.newFactory());
  }

  private static void shutdownGroup(EventLoopGroup group) {
    if (group != null) {
      group.shutdownGracefully(0, 0, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }

  private static List<PluginCapability> defaultPluginCapabilities(MockMode mode) {
    return mode.servesController()
        ? Capabilities.PLUGIN.of(PluginCapability.Service.Type.CONTROLLER_SERVICE)
        : List.of();
  }

  private static NodeGetInfoResponse nodeInfo(String nodeId, long maxVolumes, Map<String, String> topology) {
    Objects.requireNonNull(nodeId, "nodeId");
    NodeGetInfoResponse.Builder info = NodeGetInfoResponse.newBuilder()
        .setNodeId(nodeId)
        .setMaxVolumesPerNode(maxVolumes);
    if (!topology.isEmpty()) {
      info.setAccessibleTopology(Topology.newBuilder().putAllSegments(topology));
    }
    return info.build();
  }

  @Override
  public String toString() {
    return "MockCsiPlugin[" + script.pluginInfo().getName() + ", " + mode + ", " + socket + ", " + state.get() + "]";
  }

  /**
   * Configures a {@link MockCsiPlugin}. Not thread-safe; {@link #build()} may be called more than
   * once (each plugin gets its own copy of the settings).
   */
  public static final class Builder {
    private Path socket;
    private String name = "mock.csi.dev";
    private String vendorVersion = "1.0.0";
    private MockMode mode = MockMode.MONOLITH;
    private Duration readyAfter = Duration.ZERO;
    private boolean neverReady;
    private boolean createParentDirs;
    private Map<String, String> manifest = Map.of();
    private List<PluginCapability> pluginCapabilities; // null: the mode's default
    private List<ControllerServiceCapability> controllerCapabilities = Capabilities.CONTROLLER.of(
        ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
        ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME);
    private List<NodeServiceCapability> nodeCapabilities =
        Capabilities.NODE.of(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME);
    private String nodeId = "node-1";
    private long maxVolumesPerNode;
    private Map<String, String> accessibleTopology = Map.of();
    private Duration latency = Duration.ZERO;
    private boolean omitReady;
    private Duration hangAfterReady;
    private EventLoopGroup eventLoopGroup;
    private LongSupplier ticker = System::nanoTime;
    private Path stateFile;

    private Builder() {
    }

    /** Required. The socket path (made absolute); at most 107 bytes, the unix limit. */
    public Builder socket(Path socket) {
      this.socket = checkedSocketPath(socket);
      return this;
    }

    /** The absolute, normalized socket path, refusing paths the kernel cannot bind. */
    private static Path checkedSocketPath(Path socket) {
      Objects.requireNonNull(socket, "socket");
      Path absolute = socket.toAbsolutePath().normalize();
      if (absolute.getParent() == null) {
        throw new IllegalArgumentException("socket must name a file, not the root: " + socket);
      }
      return SocketPaths.checkLength("socket path", absolute);
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

    /**
     * Plugin capabilities of the {@code Service} kind as raw numbers; unknown numbers go on the
     * wire as they are. Default: {@code CONTROLLER_SERVICE} if the mode serves Controller, else none.
     */
    public Builder pluginCapabilities(int... serviceTypes) {
      this.pluginCapabilities = Capabilities.PLUGIN.of(serviceTypes);
      return this;
    }

    public Builder pluginCapabilities(PluginCapability.Service.Type... serviceTypes) {
      this.pluginCapabilities = Capabilities.PLUGIN.of(serviceTypes);
      return this;
    }

    /** Plugin capabilities as full messages, e.g. with {@code VolumeExpansion}; empty for none. */
    public Builder pluginCapabilities(Collection<PluginCapability> capabilities) {
      this.pluginCapabilities = Capabilities.PLUGIN.copy(capabilities);
      return this;
    }

    /** Default: CREATE_DELETE_VOLUME, PUBLISH_UNPUBLISH_VOLUME. */
    public Builder controllerCapabilities(int... rpcTypes) {
      this.controllerCapabilities = Capabilities.CONTROLLER.of(rpcTypes);
      return this;
    }

    public Builder controllerCapabilities(ControllerServiceCapability.RPC.Type... rpcTypes) {
      this.controllerCapabilities = Capabilities.CONTROLLER.of(rpcTypes);
      return this;
    }

    public Builder controllerCapabilities(Collection<ControllerServiceCapability> capabilities) {
      this.controllerCapabilities = Capabilities.CONTROLLER.copy(capabilities);
      return this;
    }

    /** Default: STAGE_UNSTAGE_VOLUME. */
    public Builder nodeCapabilities(int... rpcTypes) {
      this.nodeCapabilities = Capabilities.NODE.of(rpcTypes);
      return this;
    }

    public Builder nodeCapabilities(NodeServiceCapability.RPC.Type... rpcTypes) {
      this.nodeCapabilities = Capabilities.NODE.of(rpcTypes);
      return this;
    }

    public Builder nodeCapabilities(Collection<NodeServiceCapability> capabilities) {
      this.nodeCapabilities = Capabilities.NODE.copy(capabilities);
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
      this.controllerCapabilities = Capabilities.CONTROLLER.of(
          ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
          ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME,
          ControllerServiceCapability.RPC.Type.LIST_VOLUMES,
          ControllerServiceCapability.RPC.Type.GET_CAPACITY,
          ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
          ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS,
          ControllerServiceCapability.RPC.Type.CLONE_VOLUME,
          ControllerServiceCapability.RPC.Type.PUBLISH_READONLY,
          ControllerServiceCapability.RPC.Type.EXPAND_VOLUME,
          ControllerServiceCapability.RPC.Type.LIST_VOLUMES_PUBLISHED_NODES,
          ControllerServiceCapability.RPC.Type.VOLUME_CONDITION,
          ControllerServiceCapability.RPC.Type.GET_VOLUME,
          // GET_SNAPSHOT is implemented but not advertised: csi-sanity v5.3.1 does not
          // know it yet and fails a plugin that advertises it.
          ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER);
      this.nodeCapabilities = Capabilities.NODE.of(
          NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
          NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
          NodeServiceCapability.RPC.Type.EXPAND_VOLUME,
          NodeServiceCapability.RPC.Type.VOLUME_CONDITION,
          NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER);
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
     * Keeps the in-memory driver's volumes (with their controller publications, stages and
     * publishes) and snapshots in {@code file} across restarts, as a real driver's state directory
     * does: loaded by {@link MockCsiPlugin#start()} (empty if the file does not exist yet; its
     * directory must), saved after every change before the call is answered (written aside,
     * forced, renamed over the file), so a plugin killed with SIGKILL and started again on the same
     * file knows its volumes. One plugin per file. Default: none, the state lives in memory only.
     */
    public Builder stateFile(Path file) {
      this.stateFile = Objects.requireNonNull(file, "stateFile").toAbsolutePath().normalize();
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
