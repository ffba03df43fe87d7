package dev.csisupervisor.mockplugin;

import com.google.protobuf.Message;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.ProbeResponse;
import dev.csisupervisor.csi.v1.Topology;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scripted half of {@link MockCsiPlugin}'s API: what the plugin's probes and calls answer, and
 * what it has been called with. Readiness and probe faults, per-RPC faults and call records,
 * identity, capabilities and latency, over the plugin's {@link Script}, {@link CallFaults} and
 * {@link InMemoryDriver}. Sealed, MockCsiPlugin its one subclass, which adds the server and its
 * lifecycle; package-private, so that callers see these methods as MockCsiPlugin's own.
 *
 * <p>Thread-safe. Every setter may be called before the plugin starts (so a plugin is never seen
 * ready before its script is set) or while it runs; it takes effect on the next call the plugin
 * receives.
 */
abstract sealed class ScriptedPlugin permits MockCsiPlugin {

  private static final Logger log = LoggerFactory.getLogger(ScriptedPlugin.class);

  // What the plugin serves; MockCsiPlugin wires them into its server.
  final Script script;
  final InMemoryDriver driver;
  final CallFaults faults = new CallFaults();
  /** Set when the plugin starts: it answers the probes that {@code hangProbes(false)} releases. */
  volatile IdentityService identity;

  /** A script and a driver as {@code b} describes them. */
  ScriptedPlugin(MockCsiPlugin.Builder b) {
    this.script = new Script(b.ticker);
    // With a cloud, real mounts bind the disks' bytes beside the cloud file, where every process sees them.
    Path mountData = b.realMountsDir == null ? null
        : b.cloudFile != null ? DiskData.besideCloud(b.cloudFile).root() : b.realMountsDir;
    this.driver = new InMemoryDriver(script, b.clock,
        b.stateFile != null ? new DriverStateFile(b.stateFile) : null,
        mountData != null ? new RealMounts(mountData, b.uidSource) : null);
    driver.volumeIdPrefix(b.volumeIdPrefix);
    driver.createTime(b.createTime);
    driver.settings().snapshotTimes(b.snapshotTime, b.snapshotReadyTime);
    driver.settings().dependentSnapshots(b.dependentSnapshots);
    driver.settings().mutableNames(b.mutableParameters);
    driver.settings().pools(b.pools);
    if (b.cloudFile != null) {
      driver.cloud(new SharedCloud(b.cloudFile, b.cloudAttachTime));
    }
    script.updatePluginInfo(info -> info
        .setName(b.name)
        .setVendorVersion(b.vendorVersion)
        .putAllManifest(b.manifest));
    script.setPluginCapabilities(b.pluginCapabilities != null
        ? b.pluginCapabilities
        : defaultPluginCapabilities(b.mode));
    script.setControllerCapabilities(withFlagged(b.controllerCapabilities, b));
    if (!b.pools.isEmpty()) {
      List<PluginCapability> plugin = new java.util.ArrayList<>(script.pluginCapabilities());
      plugin.addAll(Capabilities.PLUGIN.of(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS));
      script.setPluginCapabilities(plugin);
    }
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

  /** The controller capabilities, with what the builder's flags ask: MODIFY_VOLUME, GET_CAPACITY. */
  private static List<ControllerServiceCapability> withFlagged(List<ControllerServiceCapability> caps,
      MockCsiPlugin.Builder b) {
    List<ControllerServiceCapability> out = new java.util.ArrayList<>(caps);
    if (!b.mutableParameters.isEmpty()) {
      out.addAll(Capabilities.CONTROLLER.of(ControllerServiceCapability.RPC.Type.MODIFY_VOLUME));
    }
    if (!b.pools.isEmpty()) {
      out.addAll(Capabilities.CONTROLLER.of(ControllerServiceCapability.RPC.Type.GET_CAPACITY));
    }
    return List.copyOf(new java.util.LinkedHashSet<>(out));
  }

  private static List<PluginCapability> defaultPluginCapabilities(MockMode mode) {
    return mode.servesController()
        ? Capabilities.PLUGIN.of(PluginCapability.Service.Type.CONTROLLER_SERVICE)
        : List.of();
  }

  /** The script, for the standalone command in this package. */
  Script script() {
    return script;
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
   * says. A graceful {@link MockCsiPlugin#stop()} answers calls still hanging with
   * {@code UNAVAILABLE}.
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
   * From now on, each call of {@code method} that no queued fault takes fails with {@code code} and
   * {@code message} (null: no message) with probability {@code fraction}, before the driver sees it,
   * drawn from a generator seeded by {@code seed} and the method's name: the same seed and the same
   * calls of that method fail the same calls, e.g. {@code NodeUnstageVolume} failing {@code INTERNAL}
   * "target is busy" a third of the time. Fraction 0 ends it; {@link #clearFaults()} too.
   *
   * @throws IllegalArgumentException naming the value if {@code method} is no CSI method,
   *     {@code fraction} is outside [0, 1], or {@code code} is OK
   */
  public void failCallsAtRandom(String method, double fraction, Status.Code code, String message, long seed) {
    faults.failAtRandom(CallFaults.fullName(method), fraction, code, message, seed);
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
   * Calls of {@code method} on volume {@code volumeId} (their request's {@code volume_id}) that no fault
   * stops wait {@code delay}, instead of the method's {@link #delayCalls(String, Duration) delay}: one slow
   * volume among fast ones, e.g. one slow ControllerPublishVolume. Zero ends it.
   */
  public void delayCalls(String method, String volumeId, Duration delay) {
    faults.delay(CallFaults.fullName(method), volumeId, delay);
  }

  /**
   * Forgets every per-RPC fault, random fault and delay. Call counts and last requests stay; calls already
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

  /**
   * Who sent the last call of {@code method} received, by its {@link Caller} headers
   * ({@value Caller#AGENT_HEADER}, {@value Caller#ELECTION_HEADER}); empty if that call carried none, or none came.
   */
  public Optional<Caller> lastCaller(MethodDescriptor<?, ?> method) {
    return Optional.ofNullable(faults.lastCaller(CallFaults.fullName(method)));
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

  /** Fails every hung probe and hung call with {@code status}, as a stopping plugin does. */
  void failHungCalls(Status status) {
    for (StreamObserver<ProbeResponse> parked : script.hangProbes(false)) {
      try {
        parked.onError(status.asRuntimeException());
      } catch (RuntimeException e) {
        log.debug("parked probe already gone: {}", e.toString());
      }
    }
    for (StreamObserver<?> hung : faults.releaseAll()) {
      try {
        hung.onError(status.asRuntimeException());
      } catch (RuntimeException e) {
        log.debug("hung call already gone: {}", e.toString());
      }
    }
  }

  /** What NodeGetInfo answers: {@code topology} empty leaves the field unset. */
  static NodeGetInfoResponse nodeInfo(String nodeId, long maxVolumes, Map<String, String> topology) {
    Objects.requireNonNull(nodeId, "nodeId");
    NodeGetInfoResponse.Builder info = NodeGetInfoResponse.newBuilder()
        .setNodeId(nodeId)
        .setMaxVolumesPerNode(maxVolumes);
    if (!topology.isEmpty()) {
      info.setAccessibleTopology(Topology.newBuilder().putAllSegments(topology));
    }
    return info.build();
  }
}
