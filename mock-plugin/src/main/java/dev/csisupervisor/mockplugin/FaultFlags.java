package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The options of {@link MockPluginCommand} (a picocli mixin) that script faults before the plugin binds, so no
 * client ever sees it without them: hung or failing probes, flapping readiness, delayed and randomly failing RPCs,
 * and capability sets a driver should not have (no CONTROLLER_SERVICE, values this CSI version does not define).
 * Bad values are refused with exit code 2, naming the option.
 */
final class FaultFlags {

  static final String DEFAULT_FAULT_MESSAGE = "mock fault (--fail-fraction)";
  private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s)?");

  @Option(names = "--hang-probes", description = "Probe never answers.")
  private boolean hangProbes;

  @Option(names = "--fail-probes", paramLabel = "CODE", description = "Probe fails with this gRPC status code.")
  private Status.Code failProbes;

  @Option(names = "--fail-message", description = "Message of --fail-probes; default: ${DEFAULT-VALUE}.")
  private String failMessage = "mock probe failure";

  @Option(names = "--flap-ms", paramLabel = "MS", description = "Alternate ready / not ready every MS.")
  private long flapMs;

  @Option(names = "--delay", paramLabel = "RPC[@VOLUME_ID]=DURATION",
      description = {"Answer every call of RPC (e.g. NodePublishVolume) after DURATION (500ms, 2s); with @VOLUME_ID,",
          "only its calls on that volume (e.g. ControllerPublishVolume@vol-7=10s: one slow volume). Repeatable.",
          "The driver acts when the delay is over."})
  private java.util.Map<String, String> delays = new java.util.LinkedHashMap<>();

  @Option(names = "--fail-fraction", paramLabel = "RPC=FRACTION:CODE[:MESSAGE]",
      description = {"Fail about FRACTION (0 to 1) of the calls of RPC with gRPC status CODE and MESSAGE (default",
          "'" + DEFAULT_FAULT_MESSAGE + "'), drawn from --fault-seed; e.g. NodeUnstageVolume=0.3:INTERNAL:target is busy.",
          "Repeatable, one per RPC. Scripted faults (stdin) come first; --delay applies to the calls let through."})
  private java.util.Map<String, String> failFractions = new java.util.LinkedHashMap<>();

  @Option(names = "--fault-seed", paramLabel = "N",
      description = "Seed of --fail-fraction's draws (per RPC: the same seed fails the same calls); default ${DEFAULT-VALUE}.")
  private long faultSeed = 1;

  @Option(names = "--no-controller-service",
      description = "Do not advertise the CONTROLLER_SERVICE plugin capability (a node-only driver).")
  private boolean noControllerService;

  @Option(names = "--unknown-capabilities",
      description = "Also advertise capability values this CSI version does not define (plugin 42, controller 99, node 77).")
  private boolean unknownCapabilities;

  /** The message of {@code --fail-probes}, also the stdin {@code fail} command's default. */
  String failMessage() {
    return failMessage;
  }

  /** Takes out or adds the capabilities {@code --no-controller-service} and {@code --unknown-capabilities} say. */
  void capabilities(Script script) {
    if (noControllerService) {
      List<PluginCapability> kept = new ArrayList<>();
      for (PluginCapability c : script.pluginCapabilities()) {
        if (!(c.hasService() && c.getService().getType() == PluginCapability.Service.Type.CONTROLLER_SERVICE)) {
          kept.add(c);
        }
      }
      script.setPluginCapabilities(kept);
    }
    if (unknownCapabilities) {
      List<PluginCapability> p = new ArrayList<>(script.pluginCapabilities());
      p.addAll(Capabilities.PLUGIN.of(42));
      script.setPluginCapabilities(p);
      List<ControllerServiceCapability> c = new ArrayList<>(script.controllerCapabilities());
      c.addAll(Capabilities.CONTROLLER.of(99));
      script.setControllerCapabilities(c);
      List<NodeServiceCapability> n = new ArrayList<>(script.nodeCapabilities());
      n.addAll(Capabilities.NODE.of(77));
      script.setNodeCapabilities(n);
    }
  }

  /**
   * Scripts the probe and per-RPC faults on a plugin not yet started.
   *
   * @throws ParameterException naming the option: {@code --fail-probes OK}, a malformed delay or fraction, a negative
   *     {@code --flap-ms}
   */
  void script(MockCsiPlugin plugin, CommandLine commandLine) {
    if (hangProbes) {
      plugin.hangProbes(true);
    }
    if (failProbes != null) {
      if (failProbes == Status.Code.OK) {
        throw new ParameterException(commandLine, "--fail-probes must not be OK");
      }
      plugin.failProbes(failProbes, failMessage);
    }
    delays(plugin, commandLine);
    failFractions(plugin, commandLine);
    if (MockPluginCommand.nonNegative(commandLine, "--flap-ms", flapMs) > 0) {
      plugin.flap(Duration.ofMillis(flapMs));
    }
  }

  private void delays(MockCsiPlugin plugin, CommandLine commandLine) {
    for (Map.Entry<String, String> d : delays.entrySet()) {
      try {
        int at = d.getKey().indexOf('@');
        if (at < 0) {
          plugin.delayCalls(d.getKey(), duration(d.getValue()));
        } else {
          plugin.delayCalls(d.getKey().substring(0, at), d.getKey().substring(at + 1), duration(d.getValue()));
        }
      } catch (IllegalArgumentException e) {
        throw new ParameterException(commandLine, "--delay " + d.getKey() + "=" + d.getValue() + ": "
            + e.getMessage());
      }
    }
  }

  private void failFractions(MockCsiPlugin plugin, CommandLine commandLine) {
    for (Map.Entry<String, String> f : failFractions.entrySet()) {
      try {
        RandomFailure failure = RandomFailure.parse(f.getValue());
        plugin.failCallsAtRandom(f.getKey(), failure.fraction(), failure.code(), failure.message(), faultSeed);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(commandLine, "--fail-fraction " + f.getKey() + "=" + f.getValue() + ": "
            + e.getMessage());
      }
    }
  }

  /** {@code 500ms}, {@code 2s}, or a bare number of milliseconds. */
  static Duration duration(String word) {
    Matcher m = DURATION.matcher(word);
    if (!m.matches()) {
      throw new IllegalArgumentException("DURATION must be like 500ms, 2s or 500 (milliseconds), got '" + word + "'");
    }
    long amount = Long.parseLong(m.group(1));
    return "s".equals(m.group(2)) ? Duration.ofSeconds(amount) : Duration.ofMillis(amount);
  }

  /** The value of {@code --fail-fraction RPC=FRACTION:CODE[:MESSAGE]}: what follows the RPC's {@code =}. */
  record RandomFailure(double fraction, Status.Code code, String message) {
    static RandomFailure parse(String value) {
      String[] parts = value.split(":", 3);
      if (parts.length < 2) {
        throw new IllegalArgumentException("expected FRACTION:CODE[:MESSAGE], e.g. 0.3:INTERNAL, got '" + value + "'");
      }
      double fraction;
      try {
        fraction = Double.parseDouble(parts[0]);
      } catch (NumberFormatException e) {
        fraction = Double.NaN;
      }
      if (!(fraction >= 0 && fraction <= 1)) {
        throw new IllegalArgumentException("FRACTION must be a number from 0 to 1, got '" + parts[0] + "'");
      }
      Status.Code code = null;
      for (Status.Code c : Status.Code.values()) {
        if (c.name().equalsIgnoreCase(parts[1]) && c != Status.Code.OK) {
          code = c;
        }
      }
      if (code == null) {
        throw new IllegalArgumentException("CODE must be a gRPC status code other than OK (e.g. INTERNAL,"
            + " UNAVAILABLE, ABORTED), got '" + parts[1] + "'");
      }
      return new RandomFailure(fraction, code, parts.length == 3 ? parts[2] : DEFAULT_FAULT_MESSAGE);
    }
  }
}
