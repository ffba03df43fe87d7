package dev.csisupervisor.mockplugin;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.common.util.concurrent.ListenableFuture;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.GetPluginInfoRequest;
import dev.csisupervisor.csi.v1.GetPluginInfoResponse;
import dev.csisupervisor.csi.v1.NodeGetInfoRequest;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.ProbeRequest;
import dev.csisupervisor.csi.v1.ProbeResponse;
import dev.csisupervisor.csi.v1.VolumeCapability;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The standalone program as a real child JVM: start, probe, signal, crash. */
@Timeout(60)
class MockPluginProcessTest {

  @TempDir
  Path dir;

  private final List<Process> children = new ArrayList<>();

  @AfterEach
  void killChildren() throws InterruptedException {
    for (Process child : children) {
      child.destroyForcibly();
      child.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** A child JVM running the mock plugin; stderr goes to a file for diagnostics. */
  private Process launch(String csiEndpoint, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-Xshare:auto",
        "-cp", System.getProperty("java.class.path"),
        MockCsiPlugin.class.getName()));
    command.addAll(List.of(args));
    ProcessBuilder builder = new ProcessBuilder(command)
        .redirectError(dir.resolve("stderr-" + children.size() + ".log").toFile());
    builder.environment().remove("CSI_ENDPOINT");
    if (csiEndpoint != null) {
      builder.environment().put("CSI_ENDPOINT", csiEndpoint);
    }
    Process process = builder.start();
    children.add(process);
    return process;
  }

  private static BufferedReader stdout(Process process) {
    return new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  private String stderr(int index) throws IOException {
    return Files.readString(dir.resolve("stderr-" + index + ".log"));
  }

  private static void send(Writer stdin, String line) throws IOException {
    stdin.write(line + "\n");
    stdin.flush();
  }

  @Test
  void standalone_startsProbes_andSigtermRemovesTheSocket() throws Exception {
    Path socket = dir.resolve("csi.sock");
    Process child = launch(null, "--endpoint", "unix://" + socket, "--name", "proc.csi.dev",
        "--type", "controller", "--vendor-version", "3.1.4");
    BufferedReader out = stdout(child);
    assertEquals("READY-TO-SERVE " + socket, out.readLine(), () -> "stderr: " + stderrQuietly(0));
    try (Csi csi = new Csi(socket)) {
      assertTrue(csi.ready());
      GetPluginInfoResponse info = csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
      assertEquals("proc.csi.dev", info.getName());
      assertEquals("3.1.4", info.getVendorVersion());
    }
    child.destroy(); // SIGTERM
    assertTrue(child.waitFor(20, TimeUnit.SECONDS), "child did not exit on SIGTERM");
    assertEquals(143, child.exitValue(), () -> "stderr: " + stderrQuietly(0));
    assertFalse(Files.exists(socket), "graceful stop on SIGTERM removes the socket");
  }

  @Test
  void standalone_withoutEndpoint_exits2NamingTheOption() throws Exception {
    Process child = launch(null, "--name", "x");
    assertTrue(child.waitFor(20, TimeUnit.SECONDS));
    assertEquals(2, child.exitValue());
    String err = stderr(0);
    assertTrue(err.contains("--endpoint") && err.contains("CSI_ENDPOINT"), err);
  }

  @Test
  void standalone_fromCsiEndpoint_scriptedOnStdin_crashLeavesSocketAndDropsCalls() throws Exception {
    Path socket = dir.resolve("csi.sock");
    Process child = launch("unix://" + socket, "--type", "node", "--node-id", "n7", "--stdin-control");
    BufferedReader out = stdout(child);
    Writer in = new OutputStreamWriter(child.getOutputStream(), StandardCharsets.UTF_8);
    assertEquals("READY-TO-SERVE " + socket, out.readLine(), () -> "stderr: " + stderrQuietly(0));
    try (Csi csi = new Csi(socket)) {
      assertEquals("n7", csi.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()).getNodeId());
      send(in, "not-ready");
      assertEquals("OK not-ready", out.readLine());
      assertFalse(csi.ready());

      send(in, "hang");
      assertEquals("OK hang", out.readLine());
      ListenableFuture<ProbeResponse> hung = csi.identityFuture().probe(ProbeRequest.getDefaultInstance());
      await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> {
        send(in, "status");
        return out.readLine().contains("hung=1");
      });

      send(in, "crash");
      assertEquals("OK crash", out.readLine());
      assertTrue(child.waitFor(20, TimeUnit.SECONDS));
      assertEquals(MockPluginCommand.CRASH_EXIT_CODE, child.exitValue());
      // A dead process drops its connections: the call in flight fails UNAVAILABLE.
      ExecutionException e = assertThrows(ExecutionException.class, () -> hung.get(10, TimeUnit.SECONDS));
      assertEquals(Status.Code.UNAVAILABLE, ((StatusRuntimeException) e.getCause()).getStatus().getCode());
    }
    assertTrue(SocketFiles.isSocket(socket), "a crash leaves the socket file behind");
  }

  @Test
  void standalone_withStateFile_keepsItsVolumesThroughSigkill() throws Exception {
    Path socket = dir.resolve("csi.sock");
    Path state = dir.resolve("driver.state");
    Path staging = Files.createDirectory(dir.resolve("staging"));
    Path target = dir.resolve("target");
    String[] args = {"--endpoint", socket.toString(), "--all-capabilities", "--state-file", state.toString()};
    VolumeCapability mount = VolumeCapability.newBuilder()
        .setMount(VolumeCapability.MountVolume.getDefaultInstance())
        .setAccessMode(VolumeCapability.AccessMode.newBuilder()
            .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
        .build();
    NodePublishVolumeRequest.Builder publish = NodePublishVolumeRequest.newBuilder()
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(mount);

    Process first = launch(null, args);
    assertEquals("READY-TO-SERVE " + socket, stdout(first).readLine(), () -> "stderr: " + stderrQuietly(0));
    String id;
    try (Csi csi = new Csi(socket)) {
      id = csi.controller().createVolume(CreateVolumeRequest.newBuilder().setName("data")
          .addVolumeCapabilities(mount).build()).getVolume().getVolumeId();
      csi.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).setVolumeCapability(mount).build());
      csi.node().nodePublishVolume(publish.setVolumeId(id).build());
    }
    first.destroyForcibly(); // SIGKILL: no shutdown hook, nothing flushed on the way out
    assertTrue(first.waitFor(20, TimeUnit.SECONDS));
    assertEquals(137, first.exitValue());

    Process second = launch(null, args);
    assertEquals("READY-TO-SERVE " + socket, stdout(second).readLine(), () -> "stderr: " + stderrQuietly(1));
    try (Csi csi = new Csi(socket)) {
      assertEquals(Status.Code.ALREADY_EXISTS, Csi.codeOf(() -> csi.node().nodePublishVolume(
          publish.setReadonly(true).build())), "the restarted driver knows the read-write publish");
      csi.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
          .setTargetPath(target.toString()).build());
      assertFalse(Files.exists(target), "and removes the target it knew");
    }
  }

  /** {@code csi-mock-plugin cloud-report ARGS} as a child JVM: its exit code and stdout. */
  private Map.Entry<Integer, String> cloudReport(String... args) throws Exception {
    List<String> all = new ArrayList<>(List.of("cloud-report"));
    all.addAll(List.of(args));
    Process report = launch(null, all.toArray(String[]::new));
    String out = new String(report.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(report.waitFor(20, TimeUnit.SECONDS));
    return Map.entry(report.exitValue(), out);
  }

  @Test
  void cloudOracle_acrossTwoPluginProcesses_readByTheReportCommand() throws Exception {
    Path cloud = dir.resolve("cloud");
    Path sa = dir.resolve("a.sock");
    Path sb = dir.resolve("b.sock");
    Process a = launch(null, "--endpoint", "unix://" + sa, "--node-id", "na", "--cloud", cloud.toString());
    Process b = launch(null, "--endpoint", "unix://" + sb, "--node-id", "nb", "--cloud", cloud.toString());
    assertEquals("READY-TO-SERVE " + sa, stdout(a).readLine(), () -> "stderr: " + stderrQuietly(0));
    assertEquals("READY-TO-SERVE " + sb, stdout(b).readLine(), () -> "stderr: " + stderrQuietly(1));
    VolumeCapability rwo = Csi.singleNodeWriter(VolumeCapability.newBuilder()
        .setMount(VolumeCapability.MountVolume.getDefaultInstance()));
    Path recorded = dir.resolve("recorded");
    String id;
    try (Csi ca = new Csi(sa); Csi cb = new Csi(sb)) {
      id = ca.controller().createVolume(CreateVolumeRequest.newBuilder().setName("d").addVolumeCapabilities(rwo)
          .build()).getVolume().getVolumeId();
      ca.controller().controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
          .setNodeId("nb").setVolumeCapability(rwo).build());
      Files.writeString(recorded, "# what etcd records\n" + id + " nb\n");
      Map.Entry<Integer, String> legal = cloudReport("--cloud", cloud.toString(), "--recorded", recorded.toString(),
          "--check");
      assertEquals(0, legal.getKey(), legal.getValue());
      assertTrue(legal.getValue().contains("\"double_attach\": 0,") && legal.getValue().contains(
          "\"unrecorded_attachment\": 0") && legal.getValue().contains("\"total\": 0,"), legal.getValue());

      // The other process's controller attaches it to na as well: refused, and counted.
      assertEquals(Status.Code.FAILED_PRECONDITION, Csi.codeOf(() -> cb.controller().controllerPublishVolume(
          ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("na").setVolumeCapability(rwo)
              .build())));
    }
    Files.writeString(recorded, "");
    Map.Entry<Integer, String> illegal = cloudReport("--cloud", cloud.toString(), "--recorded", recorded.toString(),
        "--check");
    assertEquals(4, illegal.getKey(), illegal.getValue());
    assertTrue(illegal.getValue().contains("\"double_attach\": 1,") && illegal.getValue().contains(
        "\"unrecorded_attachment\": 1") && illegal.getValue().contains("\"total\": 2,")
        && illegal.getValue().contains("{\"volume\": \"" + id + "\", \"node\": \"nb\", \"multi_node\": false}"),
        illegal.getValue());
    Map.Entry<Integer, String> plain = cloudReport("--cloud", cloud.toString());
    assertEquals(0, plain.getKey(), "without --check the report only prints: " + plain.getValue());
  }

  @Test
  void snapshotsAndRestores_ofTwoPluginProcesses_areTheOneCloudsByName() throws Exception {
    Path cloud = dir.resolve("cloud");
    Path sa = dir.resolve("a.sock");
    Path sb = dir.resolve("b.sock");
    Process a = launch(null, "--endpoint", "unix://" + sa, "--node-id", "na", "--cloud", cloud.toString(),
        "--snapshot-ms", "3000");
    Process b = launch(null, "--endpoint", "unix://" + sb, "--node-id", "nb", "--cloud", cloud.toString(),
        "--snapshot-ms", "3000");
    assertEquals("READY-TO-SERVE " + sa, stdout(a).readLine(), () -> "stderr: " + stderrQuietly(0));
    assertEquals("READY-TO-SERVE " + sb, stdout(b).readLine(), () -> "stderr: " + stderrQuietly(1));
    try (Csi ca = new Csi(sa); Csi cb = new Csi(sb)) {
      String vol = CloudCalls.create(ca, "v", 1 << 20).getVolumeId();
      var first = dev.csisupervisor.csi.v1.ControllerGrpc.newFutureStub(ca.channel)
          .withDeadlineAfter(20, TimeUnit.SECONDS).createSnapshot(dev.csisupervisor.csi.v1.CreateSnapshotRequest
              .newBuilder().setName("s").setSourceVolumeId(vol).build());
      org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10))
          .until(() -> Csi.codeOf(() -> CloudCalls.snapshot(cb, "s", vol)) == Status.Code.ABORTED);
      var cut = first.get(20, TimeUnit.SECONDS).getSnapshot();
      assertTrue(cut.getReadyToUse());
      assertEquals(cut, CloudCalls.snapshot(cb, "s", vol), "the other process answers the same snapshot");
      var restored = CloudCalls.restore(cb, "r", cut.getSnapshotId());
      assertEquals(restored, CloudCalls.restore(ca, "r", cut.getSnapshotId()), "sent again elsewhere: one disk");
      assertEquals(List.of(vol, restored.getVolumeId()), ca.controller().listVolumes(
          dev.csisupervisor.csi.v1.ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
          .map(e -> e.getVolume().getVolumeId()).toList());
    }
  }

  private String stderrQuietly(int index) {
    try {
      return stderr(index);
    } catch (IOException e) {
      return e.toString();
    }
  }
}
