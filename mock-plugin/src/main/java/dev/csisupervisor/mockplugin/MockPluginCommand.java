package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.CsiEndpoint;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The standalone mock plugin: parses options, starts a {@link MockCsiPlugin}, prints
 * {@code READY-TO-SERVE <socket>}, optionally obeys line commands on stdin ({@link StdinControl}),
 * and returns an exit code once the plugin stops.
 *
 * <p>In process mode (from {@code main}) a shutdown hook stops the plugin gracefully on
 * SIGTERM/SIGINT and {@code crash} halts the JVM, leaving the socket file; otherwise (tests) the
 * command only crashes the plugin and returns {@link #CRASH_EXIT_CODE}. Exit codes: 0 stopped,
 * 1 it could not start (see the footer), 2 bad arguments, 3 crashed.
 */
@Command(name = "csi-mock-plugin", mixinStandardHelpOptions = true,
    versionProvider = MockPluginCommand.Version.class,
    description = {"A scriptable CSI plugin (Identity, Controller, Node) on a unix socket that is also a",
        "complete in-memory CSI driver (volumes, snapshots, publish/stage; csi-sanity passes).",
        "Its controller advertises by default CREATE_DELETE_VOLUME, PUBLISH_UNPUBLISH_VOLUME,",
        "CREATE_DELETE_SNAPSHOT, LIST_SNAPSHOTS and CLONE_VOLUME (--all-capabilities: everything but",
        "MODIFY_VOLUME, which --mutable-parameters adds)."},
    footer = {"",
        "Prints 'READY-TO-SERVE <socket>' on stdout once bound; SIGTERM/SIGINT stop gracefully.",
        "",
        "stdin commands (with --stdin-control), answered 'OK <command>' or 'ERR <reason>':",
        "  ready | not-ready | ready-after MS | hang | unhang",
        "  fail CODE [MESSAGE] | unfail | flap MS | unflap | latency MS",
        "  version V | name N | crash | stop",
        "  status  (answers 'OK status probes=N hung=N ready=true|false')",
        "per-RPC faults (RPC: a CSI method name, e.g. NodePublishVolume; TIMES: a count or 'always'):",
        "  fail RPC CODE [TIMES] [MESSAGE]  (default TIMES always) | hang RPC [TIMES] (default always)",
        "  delay RPC DURATION  (e.g. 500ms, 2s; 0 ends it) | clear-faults",
        "  calls RPC  (answers 'OK calls RPC N', the calls received)",
        "",
        "'csi-mock-plugin cloud-report --cloud PATH' prints what a shared cloud holds and its oracle's counts;",
        "'cloud-mark-abnormal PATH DISK MESSAGE' marks a disk abnormal, 'cloud-remove PATH DISK' removes one.",
        "",
        "Exit codes: 0 stopped, 1 cannot start (path occupied, no parent dir, bad state file,",
        "--real-mounts without root), 2 bad arguments,",
        "3 crashed (crash, --crash-after-ms)."})
final class MockPluginCommand implements Callable<Integer> {

  static final int START_FAILED_EXIT_CODE = 1;
  static final int CRASH_EXIT_CODE = 3;
  static final String READY_LINE = "READY-TO-SERVE";
  private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s)?");
  static final String DEFAULT_FAULT_MESSAGE = "mock fault (--fail-fraction)";

  @Spec
  private CommandSpec spec;

  @Option(names = "--endpoint", paramLabel = "unix:///path/csi.sock",
      description = "Socket to serve on (unix:///abs/path, unix:/abs/path or a path); default: $CSI_ENDPOINT.")
  private String endpoint;

  @Option(names = "--name", description = "Plugin name (GetPluginInfo); default: ${DEFAULT-VALUE}.")
  private String name = "mock.csi.dev";

  @Option(names = "--type", paramLabel = "controller|node|monolith",
      description = "Services to serve; default: ${DEFAULT-VALUE}.")
  private MockMode type = MockMode.MONOLITH;

  @Option(names = "--vendor-version", description = "Vendor version; default: ${DEFAULT-VALUE}.")
  private String vendorVersion = "1.0.0";

  @Option(names = "--node-id", description = "NodeGetInfo node id; default: ${DEFAULT-VALUE}.")
  private String nodeId = "node-1";

  @Option(names = "--ready-after-ms", paramLabel = "MS", description = "Probe is not ready for MS after start.")
  private long readyAfterMs;

  @Option(names = "--never-ready", description = "Probe never reports ready.")
  private boolean neverReady;

  @Option(names = "--hang-probes", description = "Probe never answers.")
  private boolean hangProbes;

  @Option(names = "--fail-probes", paramLabel = "CODE", description = "Probe fails with this gRPC status code.")
  private Status.Code failProbes;

  @Option(names = "--fail-message", description = "Message of --fail-probes; default: ${DEFAULT-VALUE}.")
  private String failMessage = "mock probe failure";

  @Option(names = "--flap-ms", paramLabel = "MS", description = "Alternate ready / not ready every MS.")
  private long flapMs;

  @Option(names = "--latency-ms", paramLabel = "MS", description = "Delay every response by MS.")
  private long latencyMs;

  @Option(names = "--create-dir", description = "Create the socket's parent directory if missing.")
  private boolean createDir;

  @Option(names = "--exit-after-ms", paramLabel = "MS", description = "Stop gracefully after MS.")
  private long exitAfterMs;

  @Option(names = "--crash-after-ms", paramLabel = "MS", description = "Crash (leave the socket) after MS.")
  private long crashAfterMs;

  @Option(names = "--stdin-control", description = "Obey line commands on stdin (see below).")
  private boolean stdinControl;

  @Option(names = "--all-capabilities",
      description = "Advertise everything the in-memory driver implements (snapshots, cloning, expansion, ...).")
  private boolean allCapabilities;

  @Option(names = "--omit-ready", description = "Answer ready probes without the ready field (absent means ready).")
  private boolean omitReady;

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

  @Option(names = "--cloud", paramLabel = "PATH",
      description = {"Share a cloud with other mock plugins through PATH (file-locked): disks made by any of them,",
          "attached by any controller to any node, a single-node disk to one node only; an oracle that counts",
          "what a correct CO never does (see 'csi-mock-plugin cloud-report --help')."})
  private Path cloud;

  @Option(names = "--cloud-attach-ms", paramLabel = "N", description = "How long each cloud attach takes (default 0).")
  private long cloudAttachMs;

  @Option(names = "--create-ms", paramLabel = "N",
      description = {"How long each CreateVolume takes (default 0); the volume exists from the call's start, and the",
          "same name asked meanwhile is ABORTED (an operation is pending for it)."})
  private long createMs;

  @Option(names = "--state-file", paramLabel = "PATH",
      description = {"Keep the driver's volumes, publications, stages and publishes in PATH: loaded on start,",
          "saved after every change (atomic rename), so a restart after SIGKILL keeps them."})
  private Path stateFile;

  @Option(names = "--real-mounts", paramLabel = "DIR",
      description = {"Mount for real (needs root), as kubernetes-csi hostpath: each volume's data is DIR/<sha256 of",
          "its id> (block: a sparse DIR/<sha256>.img); stage and publish bind-mount it, read-only if asked,",
          "unpublish and unstage unmount it; whether a path is mounted is read from /proc/self/mountinfo.",
          "With --cloud the data is beside the cloud file instead (PATH.data), where every process sees it."})
  private Path realMounts;

  @Option(names = "--snapshot-ms", paramLabel = "N",
      description = {"How long cutting a snapshot takes (default 0): CreateSnapshot answers when it is done; the",
          "same name asked meanwhile (any process on the cloud) is ABORTED."})
  private long snapshotMs;

  @Option(names = "--snapshot-ready-ms", paramLabel = "N",
      description = {"How long after its cut a snapshot becomes ready_to_use (default 0); CreateSnapshot sent again",
          "by name answers its readiness now; a CreateVolume from it before then is FAILED_PRECONDITION."})
  private long snapshotReadyMs;

  @Option(names = "--dependent-snapshots",
      description = {"ZFS-like: deleting a snapshot that volumes were restored from, or a volume that has",
          "snapshots, is FAILED_PRECONDITION naming them."})
  private boolean dependentSnapshots;

  @Option(names = "--mutable-parameters", paramLabel = "NAME[,NAME...]", split = ",",
      description = {"The mutable_parameters it accepts (CreateVolume, ControllerModifyVolume); advertises",
          "MODIFY_VOLUME. Other keys are INVALID_ARGUMENT, nothing changed."})
  private List<String> mutableParameters;

  @Option(names = "--pools", paramLabel = "SEGMENT=SIZE[,...]",
      description = {"Storage pools, each the topology segment " + Pools.KEY + "=SEGMENT of SIZE bytes",
          "(e.g. fast=10Gi,slow=1Ti): a volume goes to a pool with room that its accessibility requirements allow",
          "(else RESOURCE_EXHAUSTED); GetCapacity answers per pool; advertises GET_CAPACITY and",
          "VOLUME_ACCESSIBILITY_CONSTRAINTS."})
  private String pools;

  @Option(names = "--topology", paramLabel = "KEY=VALUE", split = ",",
      description = "NodeGetInfo's accessible_topology segments (e.g. " + Pools.KEY + "=fast); default none.")
  private Map<String, String> topology;

  @Option(names = "--hang-after-ready-ms", paramLabel = "MS",
      description = "Probe hangs once the plugin has been ready for MS (a plugin that hangs after registration).")
  private Long hangAfterReadyMs;

  private final Map<String, String> env;
  private final PrintStream out;
  private final InputStream in;
  private final boolean processMode;
  private final IntConsumer halt;
  private volatile boolean crashed;

  MockPluginCommand(Map<String, String> env, PrintStream out, InputStream in, boolean processMode, IntConsumer halt) {
    this.env = env;
    this.out = out;
    this.in = in;
    this.processMode = processMode;
    this.halt = halt;
  }

  /** Entry point of {@code main}: real environment, stdout, stdin, shutdown hook, halt on crash. */
  static int runMain(String[] args) {
    MockPluginCommand command = new MockPluginCommand(
        System.getenv(), System.out, System.in, true, code -> Runtime.getRuntime().halt(code));
    return commandLine(command).execute(args);
  }

  static CommandLine commandLine(MockPluginCommand command) {
    return new CommandLine(command).setCaseInsensitiveEnumValuesAllowed(true)
        .addSubcommand("cloud-report", new CloudReportCommand(command.out, command.in))
        .addSubcommand("cloud-mark-abnormal", new CloudEditCommands.MarkAbnormal(command.out))
        .addSubcommand("cloud-remove", new CloudEditCommands.Remove(command.out));
  }

  @Override
  public Integer call() throws Exception {
    Path socket = socketPath();
    MockCsiPlugin.Builder builder = MockCsiPlugin.builder()
        .name(name)
        .vendorVersion(vendorVersion)
        .mode(type)
        .nodeId(nodeId)
        .createParentDirs(createDir)
        .readyAfter(Duration.ofMillis(nonNegative("--ready-after-ms", readyAfterMs)))
        .latency(Duration.ofMillis(nonNegative("--latency-ms", latencyMs)));
    try {
      builder.socket(socket);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), "Invalid endpoint: " + e.getMessage());
    }
    if (neverReady) {
      builder.neverReady();
    }
    if (stateFile != null) {
      builder.stateFile(stateFile);
    }
    builder.createTime(Duration.ofMillis(nonNegative("--create-ms", createMs)));
    if (cloud != null) {
      builder.cloud(cloud, Duration.ofMillis(nonNegative("--cloud-attach-ms", cloudAttachMs)));
    }
    if (realMounts != null) {
      builder.realMounts(realMounts);
    }
    builder.snapshotTime(Duration.ofMillis(nonNegative("--snapshot-ms", snapshotMs)))
        .snapshotReadyTime(Duration.ofMillis(nonNegative("--snapshot-ready-ms", snapshotReadyMs)));
    if (dependentSnapshots) {
      builder.dependentSnapshots();
    }
    try {
      if (mutableParameters != null) {
        builder.mutableParameters(mutableParameters);
      }
      if (pools != null) {
        builder.pools(pools);
      }
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), (pools != null && e.getMessage().startsWith("pools")
          ? "--pools: " : "--mutable-parameters: ") + e.getMessage());
    }
    if (topology != null) {
      builder.accessibleTopology(topology);
    }
    if (allCapabilities) {
      builder.allCapabilities();
    }
    if (omitReady) {
      builder.omitReadyField();
    }
    if (hangAfterReadyMs != null) {
      builder.hangProbesAfterReady(Duration.ofMillis(nonNegative("--hang-after-ready-ms", hangAfterReadyMs)));
    }
    MockCsiPlugin plugin = builder.build();
    Script script = plugin.script();
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
    // Script faults before binding, so no client ever sees the plugin without them.
    if (hangProbes) {
      plugin.hangProbes(true);
    }
    if (failProbes != null) {
      if (failProbes == Status.Code.OK) {
        throw new ParameterException(spec.commandLine(), "--fail-probes must not be OK");
      }
      plugin.failProbes(failProbes, failMessage);
    }
    for (java.util.Map.Entry<String, String> d : delays.entrySet()) {
      try {
        int at = d.getKey().indexOf('@');
        if (at < 0) {
          plugin.delayCalls(d.getKey(), duration(d.getValue()));
        } else {
          plugin.delayCalls(d.getKey().substring(0, at), d.getKey().substring(at + 1), duration(d.getValue()));
        }
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), "--delay " + d.getKey() + "=" + d.getValue() + ": "
            + e.getMessage());
      }
    }
    for (java.util.Map.Entry<String, String> f : failFractions.entrySet()) {
      try {
        RandomFailure failure = RandomFailure.parse(f.getValue());
        plugin.failCallsAtRandom(f.getKey(), failure.fraction(), failure.code(), failure.message(), faultSeed);
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), "--fail-fraction " + f.getKey() + "=" + f.getValue() + ": "
            + e.getMessage());
      }
    }
    if (nonNegative("--flap-ms", flapMs) > 0) {
      plugin.flap(Duration.ofMillis(flapMs));
    }
    nonNegative("--exit-after-ms", exitAfterMs);
    nonNegative("--crash-after-ms", crashAfterMs);

    try {
      plugin.start();
    } catch (IOException e) {
      // An expected failure (path occupied, parent missing): one clear line, no stack trace.
      spec.commandLine().getErr().println("csi-mock-plugin: cannot start: " + e.getMessage());
      return START_FAILED_EXIT_CODE;
    }
    if (processMode) {
      Runtime.getRuntime().addShutdownHook(new Thread(plugin::stop, "mock-csi-shutdown"));
    }
    out.println(READY_LINE + " " + plugin.socket());
    out.flush();

    if (exitAfterMs > 0) {
      CompletableFuture.delayedExecutor(exitAfterMs, TimeUnit.MILLISECONDS).execute(plugin::stop);
    }
    if (crashAfterMs > 0) {
      CompletableFuture.delayedExecutor(crashAfterMs, TimeUnit.MILLISECONDS).execute(() -> crash(plugin));
    }
    if (stdinControl) {
      daemon("mock-csi-stdin", new StdinControl(plugin, in, out, failMessage, () -> crash(plugin)));
    }
    plugin.awaitStopped();
    return crashed ? CRASH_EXIT_CODE : 0;
  }

  /** --endpoint, else $CSI_ENDPOINT; exit 2 naming both if neither is there. */
  private Path socketPath() {
    String value = endpoint;
    String source = "--endpoint";
    if (value == null) {
      value = env.get(CsiEndpoint.ENV);
      source = CsiEndpoint.ENV;
    }
    if (value == null || value.isBlank()) {
      throw new ParameterException(spec.commandLine(),
          "Missing endpoint: give --endpoint unix:///path/csi.sock or set " + CsiEndpoint.ENV);
    }
    try {
      return parseEndpoint(value);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), "Invalid " + source + ": " + e.getMessage());
    }
  }

  /**
   * {@code unix:///abs/path}, {@code unix:/abs/path} or a plain path (relative paths resolve
   * against the working directory). Other schemes, and {@code unix://host/...}, are refused.
   */
  static Path parseEndpoint(String endpoint) {
    String path;
    if (endpoint.startsWith("unix://")) {
      path = endpoint.substring("unix://".length());
      if (!path.startsWith("/")) {
        throw new IllegalArgumentException(
            "unix:// endpoint must name an absolute path (unix:///path/csi.sock): " + endpoint);
      }
    } else if (endpoint.startsWith("unix:")) {
      path = endpoint.substring("unix:".length());
    } else if (endpoint.matches("^[A-Za-z][A-Za-z0-9+.-]*://.*")) {
      throw new IllegalArgumentException("only unix endpoints are supported: " + endpoint);
    } else {
      path = endpoint;
    }
    if (path.isBlank()) {
      throw new IllegalArgumentException("endpoint names no path: " + endpoint);
    }
    return Path.of(path);
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

  private void crash(MockCsiPlugin plugin) {
    crashed = true;
    if (processMode) {
      // Like kill -9: no shutdown hook runs, the socket file stays behind.
      halt.accept(CRASH_EXIT_CODE);
    }
    plugin.crash();
  }

  private long nonNegative(String option, long value) {
    if (value < 0) {
      throw new ParameterException(spec.commandLine(), option + " must not be negative: " + value);
    }
    return value;
  }

  /** {@code --version}: the jar's Implementation-Version when there is one. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String version = MockCsiPlugin.class.getPackage().getImplementationVersion();
      return new String[] {"csi-mock-plugin " + (version != null ? version : "(development build)")};
    }
  }

  private static void daemon(String name, Runnable task) {
    Thread thread = new Thread(task, name);
    thread.setDaemon(true);
    thread.start();
  }
}
