package dev.csisupervisor.mockplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.GetPluginInfoRequest;
import dev.csisupervisor.csi.v1.NodeGetInfoRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.ProbeRequest;
import dev.csisupervisor.csi.v1.VolumeCapability;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The standalone command run in this JVM (no System.exit, no shutdown hook, crash does not halt). */
@Timeout(30)
class MockPluginCommandTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir
  Path dir;

  private final LineSink out = new LineSink();
  private final StringWriter err = new StringWriter();
  private PipedOutputStream stdin;

  @AfterEach
  void closeStdin() throws Exception {
    if (stdin != null) {
      stdin.close();
    }
  }

  @AfterEach
  void unmountLeftovers() {
    TestMounts.unmountAllUnder(dir); // --real-mounts: a failed test leaves no mount behind
  }

  private int runToCompletion(Map<String, String> env, String... args) {
    MockPluginCommand command = new MockPluginCommand(env, out.stream(),
        new ByteArrayInputStream(new byte[0]), false, code -> {
          throw new AssertionError("halt(" + code + ") outside process mode");
        });
    CommandLine cl = MockPluginCommand.commandLine(command);
    cl.setErr(new PrintWriter(err, true));
    return cl.execute(args);
  }

  /** Starts the command on its own thread with a scriptable stdin; returns its exit code future. */
  private CompletableFuture<Integer> runControlled(Map<String, String> env, String... args) throws Exception {
    stdin = new PipedOutputStream();
    PipedInputStream in = new PipedInputStream(stdin);
    MockPluginCommand command = new MockPluginCommand(env, out.stream(), in, false, code -> {
      throw new AssertionError("halt(" + code + ") outside process mode");
    });
    CommandLine cl = MockPluginCommand.commandLine(command);
    cl.setErr(new PrintWriter(err, true));
    CompletableFuture<Integer> exit = new CompletableFuture<>();
    Thread thread = new Thread(() -> exit.complete(cl.execute(args)), "command-under-test");
    thread.setDaemon(true);
    thread.start();
    return exit;
  }

  private String send(String command) throws Exception {
    stdin.write((command + "\n").getBytes(StandardCharsets.UTF_8));
    stdin.flush();
    return out.next(WAIT);
  }

  @Test
  void parseEndpoint_acceptsUnixUrlsAndPaths() {
    assertEquals(Path.of("/run/csi/csi.sock"), MockPluginCommand.parseEndpoint("unix:///run/csi/csi.sock"));
    assertEquals(Path.of("/run/csi/csi.sock"), MockPluginCommand.parseEndpoint("unix:/run/csi/csi.sock"));
    assertEquals(Path.of("/run/csi/csi.sock"), MockPluginCommand.parseEndpoint("/run/csi/csi.sock"));
    assertEquals(Path.of("csi.sock"), MockPluginCommand.parseEndpoint("csi.sock"));
  }

  @Test
  void parseEndpoint_rejectsOtherSchemesAndHostForms() {
    IllegalArgumentException tcp = assertThrows(IllegalArgumentException.class,
        () -> MockPluginCommand.parseEndpoint("tcp://127.0.0.1:10000"));
    assertTrue(tcp.getMessage().contains("tcp://127.0.0.1:10000"), tcp.getMessage());
    IllegalArgumentException host = assertThrows(IllegalArgumentException.class,
        () -> MockPluginCommand.parseEndpoint("unix://run/csi.sock"));
    assertTrue(host.getMessage().contains("absolute"), host.getMessage());
    assertThrows(IllegalArgumentException.class, () -> MockPluginCommand.parseEndpoint("unix://"));
    assertThrows(IllegalArgumentException.class, () -> MockPluginCommand.parseEndpoint("unix:"));
  }

  @Test
  void missingEndpoint_exits2_namingTheOptionAndTheVariable() {
    assertEquals(2, runToCompletion(Map.of(), "--name", "x"));
    assertTrue(err.toString().contains("--endpoint") && err.toString().contains("CSI_ENDPOINT"), err.toString());
  }

  @Test
  void badArguments_exit2_namingTheProblem() {
    assertEquals(2, runToCompletion(Map.of(), "--endpoint", "tcp://localhost:1"));
    assertTrue(err.toString().contains("--endpoint") && err.toString().contains("tcp://localhost:1"), err.toString());

    assertEquals(2, runToCompletion(Map.of("CSI_ENDPOINT", "tcp://localhost:1")));
    assertTrue(err.toString().contains("Invalid CSI_ENDPOINT"), err.toString());

    assertEquals(2, runToCompletion(Map.of(), "--endpoint", dir.resolve("a.sock").toString(), "--type", "sidecar"));
    assertTrue(err.toString().contains("--type"), err.toString());

    assertEquals(2, runToCompletion(Map.of(), "--endpoint", dir.resolve("a.sock").toString(), "--latency-ms", "-1"));
    assertTrue(err.toString().contains("--latency-ms must not be negative: -1"), err.toString());

    assertEquals(2, runToCompletion(Map.of(), "--endpoint", dir.resolve("a.sock").toString(), "--fail-probes", "OK"));
    assertTrue(err.toString().contains("--fail-probes must not be OK"), err.toString());

    assertEquals(2, runToCompletion(Map.of(), "--endpoint", dir.resolve("a.sock").toString(), "--delay",
        "NodeFlyVolume=1s"));
    assertTrue(err.toString().contains("--delay NodeFlyVolume=1s"), err.toString());
    assertEquals(2, runToCompletion(Map.of(), "--endpoint", dir.resolve("a.sock").toString(), "--delay",
        "NodePublishVolume=soon"));
    assertTrue(err.toString().contains("--delay NodePublishVolume=soon"), err.toString());
    assertEquals(2, runToCompletion(Map.of(), "--endpoint", dir.resolve("a.sock").toString(), "--delay",
        "ControllerPublishVolume@=1s"));
    assertTrue(err.toString().contains("--delay ControllerPublishVolume@=1s: volumeId must not be blank"),
        err.toString());
    assertEquals(2, runToCompletion(Map.of(), "--endpoint", dir.resolve("a.sock").toString(), "--delay",
        "ControllerPublish@vol-1=1s"));
    assertTrue(err.toString().contains("'ControllerPublish'"), err.toString());

    assertFailFractionRefused("NodeUnstage=0.3:INTERNAL", "--fail-fraction NodeUnstage=0.3:INTERNAL: method must be a CSI",
        "'NodeUnstage'");
    assertFailFractionRefused("NodeUnstageVolume=1.5:INTERNAL", "FRACTION must be a number from 0 to 1, got '1.5'");
    assertFailFractionRefused("NodeUnstageVolume=often:INTERNAL", "got 'often'");
    assertFailFractionRefused("NodeUnstageVolume=0.3:BUSY", "CODE must be a gRPC status code other than OK",
        "got 'BUSY'");
    assertFailFractionRefused("NodeUnstageVolume=0.3:OK", "got 'OK'");
    assertFailFractionRefused("NodeUnstageVolume=0.3", "expected FRACTION:CODE[:MESSAGE]");
    assertEquals(2, runToCompletion(Map.of(), "--endpoint", dir.resolve("a.sock").toString(), "--fault-seed", "x"));
    assertTrue(err.toString().contains("--fault-seed"), err.toString());

    assertEquals(2, runToCompletion(Map.of(), "--endpoint", "/tmp/" + "x".repeat(120)));
    assertTrue(err.toString().contains("unix socket limit of 107 bytes"), err.toString());
    assertFalse(Files.exists(dir.resolve("a.sock")), "nothing was bound");
  }

  /** {@code --fail-fraction value} exits 2 with an error that says each of {@code expected}. */
  private void assertFailFractionRefused(String value, String... expected) {
    StringWriter own = new StringWriter();
    MockPluginCommand command = new MockPluginCommand(Map.of(), out.stream(), new ByteArrayInputStream(new byte[0]),
        false, code -> {
          throw new AssertionError("halt(" + code + ") outside process mode");
        });
    CommandLine cl = MockPluginCommand.commandLine(command);
    cl.setErr(new PrintWriter(own, true));
    assertEquals(2, cl.execute("--endpoint", dir.resolve("a.sock").toString(), "--fail-fraction", value), value);
    for (String e : expected) {
      assertTrue(own.toString().contains(e), own.toString());
    }
  }

  @Test
  void driverOptions_noControllerService_unknownCapabilities_omitReady() throws Exception {
    Path socket = dir.resolve("csi.sock");
    CompletableFuture<Integer> exit = runControlled(Map.of(), "--endpoint", socket.toString(),
        "--stdin-control", "--all-capabilities", "--no-controller-service", "--unknown-capabilities",
        "--omit-ready", "--hang-after-ready-ms", "3600000");
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    try (Csi csi = new Csi(socket)) {
      var probe = csi.identity().probe(dev.csisupervisor.csi.v1.ProbeRequest.getDefaultInstance());
      assertFalse(probe.hasReady(), "ready left out");
      var plugin = csi.identity().getPluginCapabilities(
          dev.csisupervisor.csi.v1.GetPluginCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();
      assertTrue(plugin.stream().noneMatch(c -> c.hasService() && c.getService().getType()
          == dev.csisupervisor.csi.v1.PluginCapability.Service.Type.CONTROLLER_SERVICE), plugin.toString());
      assertTrue(plugin.stream().anyMatch(c -> c.hasService() && c.getService().getTypeValue() == 42));
      assertTrue(plugin.stream().anyMatch(c -> c.hasVolumeExpansion()), "--all-capabilities kept the rest");
      var node = csi.node().nodeGetCapabilities(
          dev.csisupervisor.csi.v1.NodeGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();
      assertTrue(node.stream().anyMatch(c -> c.getRpc().getTypeValue() == 77));
    }
    assertEquals("OK stop", send("stop"));
    assertEquals(0, exit.get(WAIT.toSeconds(), TimeUnit.SECONDS));
  }

  @Test
  void stopCommand_afterServingFromCsiEndpoint_exits0AndRemovesSocket() throws Exception {
    Path socket = dir.resolve("csi.sock");
    CompletableFuture<Integer> exit = runControlled(Map.of("CSI_ENDPOINT", "unix://" + socket),
        "--stdin-control", "--type", "controller", "--name", "cmd.csi.dev");
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    try (Csi csi = new Csi(socket)) {
      assertTrue(csi.ready());
      assertEquals("cmd.csi.dev", csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
    }
    assertEquals("OK stop", send("stop"));
    assertEquals(0, exit.get(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertFalse(Files.exists(socket));
  }

  @Test
  void occupiedPath_exits1_withOneLineNamingIt() throws Exception {
    Path socket = Files.writeString(dir.resolve("csi.sock"), "not a socket");
    assertEquals(1, runToCompletion(Map.of(), "--endpoint", socket.toString()));
    assertTrue(err.toString().startsWith("csi-mock-plugin: cannot start: " + socket), err.toString());
    assertTrue(err.toString().contains("regular file"), err.toString());
    assertFalse(err.toString().contains("\tat "), "no stack trace: " + err);
    assertEquals("not a socket", Files.readString(socket));

    Path missing = dir.resolve("missing/csi.sock");
    assertEquals(1, runToCompletion(Map.of(), "--endpoint", missing.toString(), "--exit-after-ms", "1"));
    assertTrue(err.toString().contains("does not exist"), err.toString());
  }

  @Test
  void malformedStateFile_exits1_namingTheFileAndLine() throws Exception {
    Path state = Files.writeString(dir.resolve("driver.state"), "not a state file\n");
    assertEquals(1, runToCompletion(Map.of(), "--endpoint", dir.resolve("csi.sock").toString(),
        "--state-file", state.toString()));
    assertEquals("csi-mock-plugin: cannot start: state file " + state
        + " line 1: the first line must be 'csi-mock-plugin-state 1': 'not a state file'", err.toString().strip());
    assertFalse(Files.exists(dir.resolve("csi.sock")));
  }

  @Test
  void createDir_createsTheMissingParent() throws Exception {
    Path socket = dir.resolve("plugins/x/csi.sock");
    assertEquals(0, runToCompletion(Map.of(), "--endpoint", socket.toString(), "--create-dir", "--exit-after-ms", "1"));
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    assertTrue(Files.isDirectory(socket.getParent()));
    assertFalse(Files.exists(socket));
  }

  @Test
  void exitAfter_stopsGracefully_andCrashAfter_leavesTheSocket() throws Exception {
    Path socket = dir.resolve("csi.sock");
    CompletableFuture<Integer> exit = runControlled(Map.of(), "--endpoint", socket.toString(), "--exit-after-ms", "100");
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    assertEquals(0, exit.get(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertFalse(Files.exists(socket));

    CompletableFuture<Integer> crash = runControlled(Map.of(), "--endpoint", socket.toString(), "--crash-after-ms", "100");
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    assertEquals(MockPluginCommand.CRASH_EXIT_CODE, crash.get(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertTrue(SocketFiles.isSocket(socket));
  }

  @Test
  void stdinCommands_scriptTheRunningPlugin() throws Exception {
    Path socket = dir.resolve("csi.sock");
    CompletableFuture<Integer> exit = runControlled(Map.of(),
        "--endpoint", "unix://" + socket, "--stdin-control", "--never-ready");
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    try (Csi csi = new Csi(socket)) {
      assertFalse(csi.ready());
      assertEquals("OK ready", send("ready"));
      assertTrue(csi.ready());
      assertEquals("OK not-ready", send("not-ready"));
      assertFalse(csi.ready());
      assertEquals("OK version 2.5.0", send("version 2.5.0"));
      assertEquals("2.5.0", csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getVendorVersion());
      assertEquals("OK fail RESOURCE_EXHAUSTED too many volumes", send("fail RESOURCE_EXHAUSTED too many volumes"));
      Status status = Csi.statusOf(() -> csi.identity().probe(ProbeRequest.getDefaultInstance()));
      assertEquals(Status.Code.RESOURCE_EXHAUSTED, status.getCode());
      assertEquals("too many volumes", status.getDescription());
      assertEquals("OK unfail", send("unfail"));
      assertEquals("OK status probes=4 hung=0 ready=false", send("status"));
      assertTrue(send("bogus").startsWith("ERR unknown command: bogus"));
      assertTrue(send("latency soon").startsWith("ERR latency needs milliseconds"));
      assertTrue(send("fail NOT_A_CODE").startsWith("ERR "));
      assertEquals("OK crash", send("crash"));
    }
    assertEquals(MockPluginCommand.CRASH_EXIT_CODE, exit.get(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertTrue(SocketFiles.isSocket(socket), "crash leaves the socket file");
  }

  @Test
  void stdinFaultCommands_failHangAndDelayEachRpc() throws Exception {
    Path socket = dir.resolve("csi.sock");
    CompletableFuture<Integer> exit = runControlled(Map.of(), "--endpoint", socket.toString(), "--stdin-control");
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    NodeGetInfoRequest info = NodeGetInfoRequest.getDefaultInstance();
    try (Csi csi = new Csi(socket)) {
      assertEquals("OK fail NodeGetInfo UNAVAILABLE 2 array busy", send("fail NodeGetInfo UNAVAILABLE 2 array busy"));
      for (int i = 0; i < 2; i++) {
        Status status = Csi.statusOf(() -> csi.node().nodeGetInfo(info));
        assertEquals(Status.Code.UNAVAILABLE, status.getCode());
        assertEquals("array busy", status.getDescription());
      }
      assertEquals("node-1", csi.node().nodeGetInfo(info).getNodeId());

      assertEquals("OK fail csi.v1.Identity/GetPluginInfo internal", send("fail csi.v1.Identity/GetPluginInfo internal"));
      for (int i = 0; i < 2; i++) {
        Status status = Csi.statusOf(() -> csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()));
        assertEquals(Status.Code.INTERNAL, status.getCode(), "no TIMES: always");
        assertEquals("mock csi.v1.Identity/GetPluginInfo failure", status.getDescription());
      }
      assertEquals("OK clear-faults", send("clear-faults"));
      assertEquals("mock.csi.dev", csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());

      assertEquals("OK hang NodeGetInfo 1", send("hang NodeGetInfo 1"));
      assertEquals(Status.Code.DEADLINE_EXCEEDED, Csi.codeOf(() -> dev.csisupervisor.csi.v1.NodeGrpc
          .newBlockingStub(csi.channel).withDeadlineAfter(200, TimeUnit.MILLISECONDS).nodeGetInfo(info)));
      assertEquals("node-1", csi.node().nodeGetInfo(info).getNodeId(), "hung once only");

      assertEquals("OK delay NodeGetInfo 300ms", send("delay NodeGetInfo 300ms"));
      assertEquals(Status.Code.DEADLINE_EXCEEDED, Csi.codeOf(() -> dev.csisupervisor.csi.v1.NodeGrpc
          .newBlockingStub(csi.channel).withDeadlineAfter(100, TimeUnit.MILLISECONDS).nodeGetInfo(info)));
      assertEquals("node-1", csi.node().nodeGetInfo(info).getNodeId(), "answered after the delay");
      assertEquals("OK delay NodeGetInfo 0", send("delay NodeGetInfo 0"));

      assertEquals("OK calls NodeGetInfo 7", send("calls NodeGetInfo"));
      assertEquals("OK calls NodeStageVolume 0", send("calls NodeStageVolume"));
      assertTrue(send("fail NodeGetInfoo UNAVAILABLE").startsWith("ERR method must be a CSI"));
      assertTrue(send("fail NodeGetInfo BUSY").startsWith("ERR fail NodeGetInfo needs a gRPC status code"));
      assertTrue(send("fail NodeGetInfo OK").startsWith("ERR code must not be OK"));
      assertTrue(send("hang NodeGetInfo 0").startsWith("ERR times must be positive"));
      assertTrue(send("hang NodeGetInfo soon").startsWith("ERR TIMES must be a count or 'always'"));
      assertTrue(send("delay NodeGetInfo fast").startsWith("ERR DURATION must be like 500ms"));
      assertTrue(send("delay NodeGetInfo").startsWith("ERR delay takes RPC DURATION"));
      assertEquals("node-1", csi.node().nodeGetInfo(info).getNodeId(), "bad commands scripted nothing");
    }
    assertEquals("OK stop", send("stop"));
    assertEquals(0, exit.get(WAIT.toSeconds(), TimeUnit.SECONDS));
  }

  @Test
  void failFraction_failsTheSameCallsForTheSameSeed_withTheCodeAndMessage() throws Exception {
    String first = null;
    for (int run = 0; run < 2; run++) {
      Path socket = dir.resolve("csi-" + run + ".sock");
      CompletableFuture<Integer> exit = runControlled(Map.of(), "--endpoint", socket.toString(), "--stdin-control",
          "--fail-fraction", "NodeGetInfo=0.5:UNAVAILABLE:target is busy", "--fail-fraction", "Probe=1:internal",
          "--fault-seed", "42");
      assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
      StringBuilder pattern = new StringBuilder();
      try (Csi csi = new Csi(socket)) {
        for (int i = 0; i < 40; i++) {
          try {
            csi.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance());
            pattern.append('.');
          } catch (io.grpc.StatusRuntimeException e) {
            assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode());
            assertEquals("target is busy", e.getStatus().getDescription());
            pattern.append('x');
          }
        }
        Status probe = Csi.statusOf(() -> csi.identity().probe(ProbeRequest.getDefaultInstance()));
        assertEquals(Status.Code.INTERNAL, probe.getCode(), "the code's case does not matter");
        assertEquals(FaultFlags.DEFAULT_FAULT_MESSAGE, probe.getDescription());
      }
      assertEquals("OK stop", send("stop"));
      assertEquals(0, exit.get(WAIT.toSeconds(), TimeUnit.SECONDS));
      assertTrue(pattern.indexOf("x") >= 0 && pattern.indexOf(".") >= 0, pattern.toString());
      if (first == null) {
        first = pattern.toString();
      } else {
        assertEquals(first, pattern.toString(), "a second plugin with the same seed fails the same calls");
      }
    }
  }

  @Test
  void durations_inMillisecondsOrSeconds() {
    assertEquals(Duration.ofMillis(500), FaultFlags.duration("500ms"));
    assertEquals(Duration.ofMillis(250), FaultFlags.duration("250"));
    assertEquals(Duration.ofSeconds(2), FaultFlags.duration("2s"));
    assertThrows(IllegalArgumentException.class, () -> FaultFlags.duration("-1ms"));
    assertThrows(IllegalArgumentException.class, () -> FaultFlags.duration("1m"));
  }

  @Test
  void startupFaultFlags_applyBeforeTheFirstProbe() throws Exception {
    Path socket = dir.resolve("csi.sock");
    CompletableFuture<Integer> exit = runControlled(Map.of(), "--endpoint", socket.toString(),
        "--stdin-control", "--fail-probes", "unavailable", "--fail-message", "warming up");
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    try (Csi csi = new Csi(socket)) {
      Status status = Csi.statusOf(() -> csi.identity().probe(ProbeRequest.getDefaultInstance()));
      assertEquals(Status.Code.UNAVAILABLE, status.getCode());
      assertEquals("warming up", status.getDescription());
    }
    assertEquals("OK stop", send("stop"));
    assertEquals(0, exit.get(WAIT.toSeconds(), TimeUnit.SECONDS));
  }

  @Test
  void realMounts_mountAsRoot_andWithoutRootExit1NamingTheOption() throws Exception {
    StringWriter help = new StringWriter();
    CommandLine helpCommand = MockPluginCommand.commandLine(new MockPluginCommand(Map.of(), out.stream(),
        new ByteArrayInputStream(new byte[0]), false, code -> { }));
    helpCommand.setOut(new PrintWriter(help, true));
    assertEquals(0, helpCommand.execute("--help"));
    assertTrue(help.toString().contains("--real-mounts=DIR"), help.toString());

    Path socket = dir.resolve("csi.sock");
    Path data = dir.resolve("data");
    if (!TestMounts.isRoot()) {
      assertEquals(1, runToCompletion(Map.of(), "--endpoint", socket.toString(), "--real-mounts", data.toString()));
      assertTrue(err.toString().contains("--real-mounts DIR) need root"), err.toString());
      return;
    }
    Path staging = Files.createDirectory(dir.resolve("staging"));
    CompletableFuture<Integer> exit = runControlled(Map.of(), "--endpoint", socket.toString(), "--stdin-control",
        "--real-mounts", data.toString());
    assertEquals("READY-TO-SERVE " + socket, out.next(WAIT));
    try (Csi csi = new Csi(socket)) {
      VolumeCapability mount = Csi.singleNodeWriter(VolumeCapability.newBuilder()
          .setMount(VolumeCapability.MountVolume.getDefaultInstance()));
      String volume = csi.controller().createVolume(CreateVolumeRequest.newBuilder().setName("v")
          .addVolumeCapabilities(mount).build()).getVolume().getVolumeId();
      csi.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(volume)
          .setStagingTargetPath(staging.toString()).setVolumeCapability(mount).build());
      assertTrue(TestMounts.isMountPoint(staging));
      assertTrue(Files.isDirectory(data.resolve(RealMounts.sha256(volume))));
    }
    assertEquals("OK stop", send("stop"));
    assertEquals(0, exit.get(WAIT.toSeconds(), TimeUnit.SECONDS));
  }

  @Test
  void help_listsTheOptions_andExits0() {
    StringWriter help = new StringWriter();
    MockPluginCommand command = new MockPluginCommand(Map.of(), out.stream(),
        new ByteArrayInputStream(new byte[0]), false, code -> { });
    CommandLine cl = MockPluginCommand.commandLine(command);
    cl.setOut(new PrintWriter(help, true));
    assertEquals(0, cl.execute("--help"));
    for (String option : new String[] {"--endpoint", "--type", "--ready-after-ms", "--never-ready",
        "--hang-probes", "--fail-probes", "--flap-ms", "--latency-ms", "--create-dir", "--exit-after-ms",
        "--stdin-control", "--state-file"}) {
      assertTrue(help.toString().contains(option), option + " missing from help:\n" + help);
    }
  }
}
