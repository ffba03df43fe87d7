package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.CsiEndpoint;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
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
 *
 * <p>The driver's options are the mixin {@link DriverFlags}, the scripted faults' {@link FaultFlags}.
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

  @Spec
  private CommandSpec spec;

  @Mixin
  private final DriverFlags driverFlags = new DriverFlags();

  @Mixin
  private final FaultFlags faultFlags = new FaultFlags();

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
    MockCsiPlugin plugin = builder(socketPath()).build();
    // Script faults before binding, so no client ever sees the plugin without them.
    faultFlags.capabilities(plugin.script());
    faultFlags.script(plugin, spec.commandLine());
    nonNegative(spec.commandLine(), "--exit-after-ms", exitAfterMs);
    nonNegative(spec.commandLine(), "--crash-after-ms", crashAfterMs);

    try {
      plugin.start();
    } catch (IOException e) {
      // An expected failure (path occupied, parent missing): one clear line, no stack trace.
      spec.commandLine().getErr().println("csi-mock-plugin: cannot start: " + e.getMessage());
      return START_FAILED_EXIT_CODE;
    }
    return serve(plugin);
  }

  /** A builder with every option but the faults. */
  private MockCsiPlugin.Builder builder(Path socket) {
    MockCsiPlugin.Builder builder = MockCsiPlugin.builder()
        .name(name)
        .vendorVersion(vendorVersion)
        .mode(type)
        .nodeId(nodeId)
        .createParentDirs(createDir)
        .readyAfter(Duration.ofMillis(nonNegative(spec.commandLine(), "--ready-after-ms", readyAfterMs)))
        .latency(Duration.ofMillis(nonNegative(spec.commandLine(), "--latency-ms", latencyMs)));
    try {
      builder.socket(socket);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), "Invalid endpoint: " + e.getMessage());
    }
    if (neverReady) {
      builder.neverReady();
    }
    driverFlags.configure(builder, spec.commandLine());
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
      builder.hangProbesAfterReady(
          Duration.ofMillis(nonNegative(spec.commandLine(), "--hang-after-ready-ms", hangAfterReadyMs)));
    }
    return builder;
  }

  /** Prints the ready line, arms the timed exit and crash and the stdin control; waits until the plugin stops. */
  private int serve(MockCsiPlugin plugin) throws InterruptedException {
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
      daemon("mock-csi-stdin", new StdinControl(plugin, in, out, faultFlags.failMessage(), () -> crash(plugin)));
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



  private void crash(MockCsiPlugin plugin) {
    crashed = true;
    if (processMode) {
      // Like kill -9: no shutdown hook runs, the socket file stays behind.
      halt.accept(CRASH_EXIT_CODE);
    }
    plugin.crash();
  }

  /** {@code value}, if it is not negative; else exit code 2 naming the option. */
  static long nonNegative(CommandLine commandLine, String option, long value) {
    if (value < 0) {
      throw new ParameterException(commandLine, option + " must not be negative: " + value);
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
