package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.CloudCalls.BLOCK_RWO;
import static dev.csisupervisor.mockplugin.CloudCalls.MIB;
import static dev.csisupervisor.mockplugin.CloudCalls.ROX;
import static dev.csisupervisor.mockplugin.CloudCalls.RWO;
import static dev.csisupervisor.mockplugin.CloudCalls.attach;
import static dev.csisupervisor.mockplugin.CloudCalls.create;
import static dev.csisupervisor.mockplugin.CloudCalls.createRequest;
import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static dev.csisupervisor.mockplugin.Csi.statusOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ControllerGetVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerGetVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerModifyVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.GetCapacityRequest;
import dev.csisupervisor.csi.v1.GetPluginCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.ListVolumesResponse;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.TopologyRequirement;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.csisupervisor.csi.v1.VolumeCapability;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What the mock plugin reports of volumes and what it accepts, on a shared cloud (two plugins on one cloud file)
 * and on the in-memory driver alone, over real unix sockets: ListVolumes and ControllerGetVolume over the whole
 * cloud (attachments, disks marked abnormal or removed with the {@code cloud-*} commands), validation by what a disk
 * was made for, mutable parameters, pools and capacity.
 */
@Timeout(60)
class MockCloudVolumesTest extends MockCloudTestBase {

  private static ControllerGetVolumeResponse get(Csi c, String id) {
    return c.controller().controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  private static List<String> ids(ListVolumesResponse r) {
    return r.getEntriesList().stream().map(e -> e.getVolume().getVolumeId()).toList();
  }

  /** Runs a {@code csi-mock-plugin} subcommand in this JVM; its exit code, stdout and stderr. */
  private static String[] command(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    StringWriter err = new StringWriter();
    MockPluginCommand command = new MockPluginCommand(Map.of(), new PrintStream(out, true, StandardCharsets.UTF_8),
        new ByteArrayInputStream(new byte[0]), false, code -> {
          throw new AssertionError("halt(" + code + ")");
        });
    var cl = MockPluginCommand.commandLine(command);
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute(args);
    return new String[] {Integer.toString(code), out.toString(StandardCharsets.UTF_8), err.toString()};
  }

  @Test
  void listVolumes_seesEveryDiskOfTheCloud_withItsAttachmentsAsPublishedNodeIds() throws Exception {
    start(true, b -> b);
    String x = create(ca, "x", MIB).getVolumeId();
    String y = create(cb, "y", 2 * MIB).getVolumeId();
    attach(ca, y, "n7");
    attach(cb, y, "n7");
    for (Csi c : List.of(ca, cb)) {
      ListVolumesResponse all = c.controller().listVolumes(ListVolumesRequest.getDefaultInstance());
      assertEquals(List.of(x, y), ids(all));
      assertEquals(List.of(), all.getEntries(0).getStatus().getPublishedNodeIdsList());
      assertEquals(List.of("n7"), all.getEntries(1).getStatus().getPublishedNodeIdsList());
      assertEquals(2 * MIB, all.getEntries(1).getVolume().getCapacityBytes());
      assertFalse(all.getEntries(1).getStatus().getVolumeCondition().getAbnormal());
    }
    assertEquals(List.of("n7"), get(ca, y).getStatus().getPublishedNodeIdsList(), "made and attached elsewhere");
  }

  @Test
  void anExpansionThroughOneProcess_isTheDisksSizeInEveryProcess() throws Exception {
    start(true, MockCsiPlugin.Builder::allCapabilities);
    String x = create(ca, "x", MIB).getVolumeId();
    get(cb, x); // b knows the disk at 1 MiB
    ca.controller().controllerExpandVolume(dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(x).setCapacityRange(dev.csisupervisor.csi.v1.CapacityRange.newBuilder()
            .setRequiredBytes(3 * MIB)).build());
    assertEquals(3 * MIB, get(cb, x).getVolume().getCapacityBytes());
    assertEquals(3 * MIB, cb.controller().controllerExpandVolume(dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest
        .newBuilder().setVolumeId(x).setCapacityRange(dev.csisupervisor.csi.v1.CapacityRange.newBuilder()
            .setRequiredBytes(2 * MIB)).build()).getCapacityBytes(), "already larger, by the cloud's size");
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void listVolumes_pagesWithItsToken_andABadTokenIsAborted(boolean shared) throws Exception {
    start(shared, b -> b);
    String x = create(ca, "x", MIB).getVolumeId();
    String y = create(cb, "y", MIB).getVolumeId();
    String z = create(ca, "z", MIB).getVolumeId();
    ListVolumesResponse first = cb.controller().listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(2).build());
    assertEquals(List.of(x, y), ids(first));
    ListVolumesResponse rest = ca.controller().listVolumes(ListVolumesRequest.newBuilder()
        .setStartingToken(first.getNextToken()).build());
    assertEquals(List.of(z), ids(rest));
    assertEquals("", rest.getNextToken());
    assertEquals(Status.Code.ABORTED, codeOf(() -> ca.controller().listVolumes(ListVolumesRequest.newBuilder()
        .setStartingToken("9").build())));
  }

  @Test
  void aDiskMarkedAbnormalOrRemovedInTheCloud_isSoReported_byEveryProcess() throws Exception {
    start(true, b -> b);
    String x = create(ca, "x", MIB).getVolumeId();
    String y = create(ca, "y", MIB).getVolumeId();
    String file = cloudFile().toString();

    String[] marked = command("cloud-mark-abnormal", file, x, "disk is read-only: I/O errors");
    assertEquals("0", marked[0], marked[2]);
    assertEquals("abnormal " + x, marked[1].strip());
    var condition = get(cb, x).getStatus().getVolumeCondition();
    assertTrue(condition.getAbnormal());
    assertEquals("disk is read-only: I/O errors", condition.getMessage());
    ListVolumesResponse listed = ca.controller().listVolumes(ListVolumesRequest.getDefaultInstance());
    assertTrue(listed.getEntries(0).getStatus().getVolumeCondition().getAbnormal());
    assertEquals("0", command("cloud-mark-abnormal", file, x, "")[0]);
    assertFalse(get(cb, x).getStatus().getVolumeCondition().getAbnormal(), "healthy again");

    String[] removed = command("cloud-remove", file, y);
    assertEquals("0", removed[0], removed[2]);
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> get(ca, y)), "gone, though this process made it");
    assertEquals(List.of(x), ids(cb.controller().listVolumes(ListVolumesRequest.getDefaultInstance())));

    String[] unknown = command("cloud-remove", file, y);
    assertEquals("1", unknown[0]);
    assertTrue(unknown[2].contains("the cloud has no disk '" + y + "'"), unknown[2]);
    assertEquals("1", command("cloud-mark-abnormal", dir.resolve("nope").toString(), x, "m")[0]);
    assertEquals("2", command("cloud-mark-abnormal", file, x)[0], "MESSAGE is required");
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void validation_confirmsWhatTheDiskWasMadeFor_andRefusesAnotherModeOrType_withAMessage(boolean shared)
      throws Exception {
    start(shared, b -> b);
    String id = ca.controller().createVolume(createRequest("v", MIB).addVolumeCapabilities(ROX).build())
        .getVolume().getVolumeId();
    ValidateVolumeCapabilitiesResponse ok = validate(cb, id, RWO, ROX);
    assertTrue(ok.hasConfirmed());
    assertEquals(List.of(RWO, ROX), ok.getConfirmed().getVolumeCapabilitiesList());

    ValidateVolumeCapabilitiesResponse otherMode = validate(cb, id,
        CloudCalls.mount(VolumeCapability.AccessMode.Mode.MULTI_NODE_MULTI_WRITER));
    assertFalse(otherMode.hasConfirmed());
    assertTrue(otherMode.getMessage().contains("not for [mount MULTI_NODE_MULTI_WRITER]"), otherMode.getMessage());
    ValidateVolumeCapabilitiesResponse otherType = validate(ca, id, BLOCK_RWO);
    assertFalse(otherType.hasConfirmed());
    assertTrue(otherType.getMessage().contains("not for [block SINGLE_NODE_WRITER]"), otherType.getMessage());
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> validate(ca, "vol-404", RWO)));
  }

  private static ValidateVolumeCapabilitiesResponse validate(Csi c, String id, VolumeCapability... caps) {
    return c.controller().validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
        .setVolumeId(id).addAllVolumeCapabilities(List.of(caps)).build());
  }

  private Map<String, String> mutableOf(boolean shared, String id) {
    if (shared) {
      return cloud().find(id).orElseThrow().mutable();
    }
    synchronized (a.driver.lock()) {
      return Map.copyOf(a.driver.findVolume(id).mutable);
    }
  }

  private static List<ControllerServiceCapability.RPC.Type> controllerCaps(Csi c) {
    return c.controller().controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
        .getCapabilitiesList().stream().map(x -> x.getRpc().getType()).toList();
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void mutableParameters_advertiseModify_mergeTheKeysItAccepts_andRefuseOthersChangingNothing(boolean shared)
      throws Exception {
    start(shared, b -> b.mutableParameters(List.of("iops", "throughput")));
    assertTrue(controllerCaps(ca).contains(ControllerServiceCapability.RPC.Type.MODIFY_VOLUME));
    String id = ca.controller().createVolume(createRequest("v", MIB).putMutableParams("iops", "3000").build())
        .getVolume().getVolumeId();
    assertEquals(Map.of("iops", "3000"), mutableOf(shared, id));

    modify(cb, id, Map.of("throughput", "125"));
    assertEquals(Map.of("iops", "3000", "throughput", "125"), mutableOf(shared, id));
    Status refused = statusOf(() -> modify(cb, id, Map.of("iops", "1", "foo", "bar")));
    assertEquals(Status.Code.INVALID_ARGUMENT, refused.getCode());
    assertTrue(refused.getDescription().contains("[foo]"), refused.getDescription());
    assertEquals(Map.of("iops", "3000", "throughput", "125"), mutableOf(shared, id), "nothing changed");
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> modify(ca, "vol-404", Map.of("iops", "1"))));
    assertEquals(Status.Code.INVALID_ARGUMENT, codeOf(() -> ca.controller().createVolume(createRequest("w", MIB)
        .putMutableParams("foo", "1").build())), "a create under the same rule");
  }

  @Test
  void withoutMutableParameters_noModifyIsAdvertised_andEveryKeyIsRefused() throws Exception {
    start(false, b -> b);
    assertFalse(controllerCaps(ca).contains(ControllerServiceCapability.RPC.Type.MODIFY_VOLUME));
    String id = create(ca, "v", MIB).getVolumeId();
    assertEquals(Status.Code.INVALID_ARGUMENT, codeOf(() -> modify(ca, id, Map.of("iops", "1"))));
    assertEquals(Status.Code.INVALID_ARGUMENT, codeOf(() -> ca.controller().createVolume(createRequest("w", MIB)
        .putMutableParams("iops", "1").build())));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> MockCsiPlugin.builder().mutableParameters(List.of(" ")));
    assertTrue(e.getMessage().startsWith("mutableParameters"), e.getMessage());
  }

  private static void modify(Csi c, String id, Map<String, String> params) {
    c.controller().controllerModifyVolume(ControllerModifyVolumeRequest.newBuilder().setVolumeId(id)
        .putAllMutableParameters(params).build());
  }

  private static Topology pool(String name) {
    return Topology.newBuilder().putSegments(Pools.KEY, name).build();
  }

  private static long capacity(Csi c, Topology t) {
    GetCapacityRequest.Builder r = GetCapacityRequest.newBuilder();
    if (t != null) {
      r.setAccessibleTopology(t);
    }
    return c.controller().getCapacity(r.build()).getAvailableCapacity();
  }

  @ParameterizedTest(name = "shared cloud: {0}")
  @ValueSource(booleans = {true, false})
  void pools_placeEachVolumeWhereItMayGoAndFits_fullIsResourceExhausted_andCapacityIsPerSegment(boolean shared)
      throws Exception {
    start(shared, b -> b.pools("fast=4Mi,slow=8Mi"));
    assertTrue(controllerCaps(ca).contains(ControllerServiceCapability.RPC.Type.GET_CAPACITY));
    assertTrue(ca.identity().getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance())
        .getCapabilitiesList().stream().anyMatch(c -> c.hasService() && c.getService().getType()
            == PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS));
    assertEquals(4 * MIB, capacity(cb, pool("fast")));
    assertEquals(12 * MIB, capacity(cb, null), "all pools");
    assertEquals(0, capacity(cb, Topology.newBuilder().putSegments("zone", "z1").build()), "no pool there");

    var any = create(ca, "any", 2 * MIB);
    assertEquals(List.of(pool("slow")), any.getAccessibleTopologyList(), "no requirement: the pool with most room");
    var fast = ca.controller().createVolume(createRequest("f", 3 * MIB).setAccessibilityRequirements(
        TopologyRequirement.newBuilder().addPreferred(pool("fast"))).build()).getVolume();
    assertEquals(List.of(pool("fast")), fast.getAccessibleTopologyList());
    assertEquals(1 * MIB, capacity(cb, pool("fast")), "falls with each create, in every process");
    assertEquals(6 * MIB, capacity(cb, pool("slow")));

    Status full = statusOf(() -> cb.controller().createVolume(createRequest("g", 2 * MIB)
        .setAccessibilityRequirements(TopologyRequirement.newBuilder().addRequisite(pool("fast"))).build()));
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, full.getCode(), "not today's OUT_OF_RANGE");
    assertTrue(full.getDescription().contains("fast has 1048576 bytes free"), full.getDescription());
    var spilled = cb.controller().createVolume(createRequest("h", 2 * MIB).setAccessibilityRequirements(
        TopologyRequirement.newBuilder().addRequisite(pool("fast")).addRequisite(pool("slow"))
            .addPreferred(pool("fast"))).build()).getVolume();
    assertEquals(List.of(pool("slow")), spilled.getAccessibleTopologyList(), "preferred full: another requisite");
    assertEquals(Status.Code.RESOURCE_EXHAUSTED, codeOf(() -> cb.controller().createVolume(createRequest("i", MIB)
        .setAccessibilityRequirements(TopologyRequirement.newBuilder().addRequisite(Topology.newBuilder()
            .putSegments("zone", "z1"))).build())), "a requisite naming none of its pools");
    CloudCalls.deleteVolume(ca, fast.getVolumeId());
    assertEquals(4 * MIB, capacity(ca, pool("fast")), "a delete gives the room back");
  }

  @Test
  void badPools_areNamed() {
    for (String bad : List.of("fast", "fast=", "=1Gi", "fast=1Zi", "fast=1Gi,fast=2Gi")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> MockCsiPlugin.builder().pools(bad));
      assertTrue(e.getMessage().startsWith("pools:"), bad + ": " + e.getMessage());
    }
    assertEquals(Map.of("a", 1536L, "b", 3L << 30), Pools.parse("a=1536,b=3Gi").sizes());
  }

  @Test
  void theCommandsFlags_reachThePlugin() throws Exception {
    java.nio.file.Files.createDirectories(dir.resolve("cmd"));
    String socket = dir.resolve("cmd").resolve("csi.sock").toString();
    StringWriter err = new StringWriter();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    java.io.PipedOutputStream stdin = new java.io.PipedOutputStream();
    MockPluginCommand command = new MockPluginCommand(Map.of(), new PrintStream(out, true, StandardCharsets.UTF_8),
        new java.io.PipedInputStream(stdin), false, code -> {
          throw new AssertionError("halt(" + code + ")");
        });
    var cl = MockPluginCommand.commandLine(command);
    cl.setErr(new PrintWriter(err, true));
    java.util.concurrent.CompletableFuture<Integer> exit = new java.util.concurrent.CompletableFuture<>();
    Thread t = new Thread(() -> exit.complete(cl.execute("--endpoint", socket, "--cloud", cloudFile().toString(),
        "--pools", "fast=4Mi", "--mutable-parameters", "iops,tier", "--dependent-snapshots",
        "--snapshot-ready-ms", "600000", "--topology", Pools.KEY + "=fast", "--stdin-control")));
    t.setDaemon(true);
    t.start();
    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10))
        .until(() -> out.toString(StandardCharsets.UTF_8).contains("READY-TO-SERVE"));
    try (Csi c = new Csi(java.nio.file.Path.of(socket))) {
      assertTrue(controllerCaps(c).containsAll(List.of(ControllerServiceCapability.RPC.Type.MODIFY_VOLUME,
          ControllerServiceCapability.RPC.Type.GET_CAPACITY, ControllerServiceCapability.RPC.Type.CLONE_VOLUME)));
      assertEquals(Map.of(Pools.KEY, "fast"), c.node().nodeGetInfo(dev.csisupervisor.csi.v1.NodeGetInfoRequest
          .getDefaultInstance()).getAccessibleTopology().getSegmentsMap());
      String v = create(c, "v", MIB).getVolumeId();
      modify(c, v, Map.of("tier", "gold"));
      assertFalse(CloudCalls.snapshot(c, "s", v).getReadyToUse(), "--snapshot-ready-ms");
      assertEquals(Status.Code.FAILED_PRECONDITION, codeOf(() -> CloudCalls.deleteVolume(c, v)),
          "--dependent-snapshots");
      assertEquals(Set.of("tier"), cloud().find(v).orElseThrow().mutable().keySet());
    } finally {
      stdin.write("stop\n".getBytes(StandardCharsets.UTF_8));
      stdin.flush();
    }
    assertEquals(0, exit.get(10, java.util.concurrent.TimeUnit.SECONDS), err.toString());
    String[] bad = command("--endpoint", socket + "2", "--pools", "fast=lots");
    assertEquals("2", bad[0]);
    assertTrue(bad[2].contains("--pools: pools: expected SEGMENT=SIZE"), bad[2]);
  }
}
