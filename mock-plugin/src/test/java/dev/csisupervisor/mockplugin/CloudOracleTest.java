package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static dev.csisupervisor.mockplugin.Csi.statusOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.NodeGrpc;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.VolumeCapability;
import dev.csisupervisor.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.csisupervisor.mockplugin.CloudReport.Count;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.stub.MetadataUtils;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shared cloud as an oracle: two plugins (nodes na and nb) on one cloud file, real gRPC over their unix sockets;
 * each count stays 0 on the legal sequence and becomes 1 on the illegal one.
 */
@Timeout(30)
class CloudOracleTest {
  private static final Mode RWO = Mode.SINGLE_NODE_WRITER;

  @TempDir
  Path dir;

  private final List<AutoCloseable> open = new java.util.ArrayList<>();

  @AfterEach
  void close() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
  }

  private Path cloudFile() {
    return dir.resolve("cloud");
  }

  private MockCsiPlugin plugin(String node) throws Exception {
    Files.createDirectories(dir.resolve(node));
    MockCsiPlugin p = MockCsiPlugin.builder().socket(dir.resolve(node).resolve("csi.sock")).allCapabilities()
        .name("ebs.csi.dev").nodeId(node).cloud(cloudFile(), Duration.ZERO).start();
    open.add(p);
    return p;
  }

  private Csi client(MockCsiPlugin p) {
    Csi c = new Csi(p.socket());
    open.add(c);
    return c;
  }

  private CloudReport report() throws Exception {
    return CloudReport.read(cloudFile());
  }

  private static VolumeCapability cap(Mode m) {
    return VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.getDefaultInstance())
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(m)).build();
  }

  private static String create(Csi c, String name, Mode m) {
    return c.controller().createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap(m))
        .build()).getVolume().getVolumeId();
  }

  private static ControllerPublishVolumeRequest attach(String vol, String node, Mode m) {
    return ControllerPublishVolumeRequest.newBuilder().setVolumeId(vol).setNodeId(node).setVolumeCapability(cap(m))
        .setReadonly(m == Mode.MULTI_NODE_READER_ONLY).build();
  }

  private static ControllerUnpublishVolumeRequest detach(String vol, String node) {
    return ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(vol).setNodeId(node).build();
  }

  private NodeStageVolumeRequest stage(String vol, String node) throws Exception {
    return NodeStageVolumeRequest.newBuilder().setVolumeId(vol).setVolumeCapability(cap(RWO))
        .setStagingTargetPath(Files.createDirectories(dir.resolve(node + "-staging")).toString()).build();
  }

  private NodePublishVolumeRequest publish(String vol, String node) {
    return NodePublishVolumeRequest.newBuilder().setVolumeId(vol).setVolumeCapability(cap(RWO))
        .setStagingTargetPath(dir.resolve(node + "-staging").toString())
        .setTargetPath(dir.resolve(node + "-target").toString()).build();
  }

  // ---- (a) a single-node disk attached to a second node ----

  @Test
  void doubleAttach_handOverIsZero_secondNodeWhileAttachedIsOne_evenRefused() throws Exception {
    Csi a = client(plugin("na"));
    Csi b = client(plugin("nb"));
    String vol = create(a, "d", RWO);
    String shared = create(a, "shared", Mode.MULTI_NODE_READER_ONLY);

    // Legal: attached to na, detached, then attached to nb (through another process); a multi-node disk on both.
    a.controller().controllerPublishVolume(attach(vol, "na", RWO));
    a.controller().controllerPublishVolume(attach(vol, "na", RWO)); // idempotent
    a.controller().controllerUnpublishVolume(detach(vol, "na"));
    b.controller().controllerPublishVolume(attach(vol, "nb", RWO));
    a.controller().controllerPublishVolume(attach(shared, "na", Mode.MULTI_NODE_READER_ONLY));
    b.controller().controllerPublishVolume(attach(shared, "nb", Mode.MULTI_NODE_READER_ONLY));
    assertEquals(0, report().count(Count.DOUBLE_ATTACH), report().toJson());

    // Illegal: the single-node disk to na while nb has it. Refused, and counted.
    assertEquals(Status.Code.FAILED_PRECONDITION,
        codeOf(() -> a.controller().controllerPublishVolume(attach(vol, "na", RWO))));
    CloudReport r = report();
    assertEquals(1, r.count(Count.DOUBLE_ATTACH), r.toJson());
    assertEquals(1, r.total());
    assertTrue(r.violations().get(0).startsWith("double_attach: disk '" + vol + "' is attached to node 'nb'"),
        r.violations().toString());
    assertEquals(Set.of("nb"), new SharedCloud(cloudFile(), Duration.ZERO).attachedTo(vol), "the refusal stands");
  }

  // ---- (b) a detach while the node has the disk staged or published ----

  @Test
  void detachInUse_afterUnpublishAndUnstageIsZero_whileStagedIsOne() throws Exception {
    Csi a = client(plugin("na"));
    MockCsiPlugin nb = plugin("nb");
    Csi b = client(nb);
    String vol = create(a, "d", RWO);

    // Legal: attach, stage, publish on nb; unpublish, unstage, then detach.
    a.controller().controllerPublishVolume(attach(vol, "nb", RWO));
    b.node().nodeStageVolume(stage(vol, "nb"));
    b.node().nodePublishVolume(publish(vol, "nb"));
    CloudReport mid = report();
    assertEquals(List.of(new CloudReport.NodeUse(vol, "nb", dir.resolve("nb-staging").toString())), mid.staged());
    assertEquals(List.of(new CloudReport.NodeUse(vol, "nb", dir.resolve("nb-target").toString())), mid.published());
    b.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setTargetPath(dir.resolve("nb-target").toString()).build());
    b.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(dir.resolve("nb-staging").toString()).build());
    a.controller().controllerUnpublishVolume(detach(vol, "nb"));
    CloudReport legal = report();
    assertEquals(0, legal.count(Count.DETACH_IN_USE), legal.toJson());
    assertEquals(List.of(), legal.staged());
    assertEquals(List.of(), legal.attachments());

    // Illegal (issue 35's first report): the unstage fails "target is busy", the controller detaches all the same.
    a.controller().controllerPublishVolume(attach(vol, "nb", RWO));
    b.node().nodeStageVolume(stage(vol, "nb"));
    nb.failCalls(NodeGrpc.getNodeUnstageVolumeMethod(), Status.Code.INTERNAL, "target is busy", 1);
    assertEquals(Status.Code.INTERNAL, codeOf(() -> b.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
        .setVolumeId(vol).setStagingTargetPath(dir.resolve("nb-staging").toString()).build())));
    a.controller().controllerUnpublishVolume(detach(vol, "nb"));
    CloudReport r = report();
    assertEquals(1, r.count(Count.DETACH_IN_USE), r.toJson());
    assertTrue(r.violations().get(0).contains("detached from node 'nb' which has it staged at"), r.violations().toString());
    assertEquals(List.of(), r.attachments(), "detached, as a cloud would");
    assertEquals(1, r.staged().size(), "and still staged on nb");
  }

  @Test
  void detachInUse_whilePublished_countsOnce_andAnIdempotentDetachAgainDoesNot() throws Exception {
    Csi a = client(plugin("na"));
    String vol = create(a, "d", RWO);
    a.controller().controllerPublishVolume(attach(vol, "na", RWO));
    a.node().nodeStageVolume(stage(vol, "na"));
    a.node().nodePublishVolume(publish(vol, "na"));
    a.controller().controllerUnpublishVolume(detach(vol, "na"));
    a.controller().controllerUnpublishVolume(detach(vol, "na")); // nothing attached any more: nothing detached
    CloudReport r = report();
    assertEquals(1, r.count(Count.DETACH_IN_USE), r.toJson());
    assertTrue(r.violations().get(0).contains("staged at") && r.violations().get(0).contains("published at"),
        r.violations().toString());
  }

  // ---- (c) at settle: an attachment nothing records ----

  @Test
  void unrecordedAttachment_isWhatTheRecordsLack() throws Exception {
    Csi a = client(plugin("na"));
    String v1 = create(a, "one", RWO);
    String v2 = create(a, "two", RWO);
    a.controller().controllerPublishVolume(attach(v1, "na", RWO));
    a.controller().controllerPublishVolume(attach(v2, "nb", RWO));
    CloudReport r = report();
    assertEquals(List.of(new CloudReport.Attachment(v1, "na", false), new CloudReport.Attachment(v2, "nb", false)),
        r.attachments());
    Set<Map.Entry<String, String>> records = Set.of(Map.entry(v1, "na"), Map.entry(v2, "nb"));
    assertEquals(List.of(), r.unrecorded((v, n) -> records.contains(Map.entry(v, n))), "both recorded");
    Set<Map.Entry<String, String>> lacking = Set.of(Map.entry(v1, "na"), Map.entry(v2, "na"));
    assertEquals(List.of(new CloudReport.Attachment(v2, "nb", false)),
        r.unrecorded((v, n) -> lacking.contains(Map.entry(v, n))), "v2 on nb: attached, recorded on another node");
  }

  // ---- (d) a controller call from a deposed controller agent ----

  private static ControllerGrpc.ControllerBlockingStub as(Csi c, String agent, String revision) {
    Metadata h = new Metadata();
    if (agent != null) {
      h.put(Metadata.Key.of(Caller.AGENT_HEADER, Metadata.ASCII_STRING_MARSHALLER), agent);
    }
    if (revision != null) {
      h.put(Metadata.Key.of(Caller.ELECTION_HEADER, Metadata.ASCII_STRING_MARSHALLER), revision);
    }
    return c.controller().withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h));
  }

  @Test
  void deposedControllerCall_successorsAreZero_anOlderRevisionAfterANewerIsOne() throws Exception {
    Csi a = client(plugin("na"));
    Csi b = client(plugin("nb"));
    ListVolumesRequest list = ListVolumesRequest.getDefaultInstance();

    // Legal: a1 elected at revision 5 calls; then a2 at 9 (its successor), through another process; a1 re-elected
    // at 12; calls without the headers (csi-sanity, an operator) are never counted.
    as(a, "a1", "5").listVolumes(list);
    as(a, "a1", "5").listVolumes(list);
    as(b, "a2", "9").listVolumes(list);
    as(a, "a2", "9").listVolumes(list);
    as(b, "a1", "12").listVolumes(list);
    a.controller().listVolumes(list);
    a.node().nodeGetCapabilities(dev.csisupervisor.csi.v1.NodeGetCapabilitiesRequest.getDefaultInstance());
    CloudReport legal = report();
    assertEquals(0, legal.count(Count.DEPOSED_CONTROLLER_CALL), legal.toJson());
    assertEquals(List.of(new CloudReport.Election("ebs.csi.dev", 12, "a1")), legal.elections());

    // Illegal: a2, deposed at 9, still acts after a1 called at 12 (answered all the same, as a cloud would).
    as(b, "a2", "9").controllerPublishVolume(attach(create(b, "d", RWO), "nb", RWO));
    CloudReport r = report();
    assertEquals(1, r.count(Count.DEPOSED_CONTROLLER_CALL), r.toJson());
    assertTrue(r.violations().get(0).contains("ControllerPublishVolume to plugin 'ebs.csi.dev' from agent 'a2' at "
        + "election revision 9 after agent 'a1' called at revision 12"), r.violations().toString());
  }

  @Test
  void deposedControllerCall_theSameRevisionFromAnotherAgent_isCounted() throws Exception {
    Csi a = client(plugin("na"));
    as(a, "a1", "7").listVolumes(ListVolumesRequest.getDefaultInstance());
    assertEquals(0, report().total());
    as(a, "a2", "7").listVolumes(ListVolumesRequest.getDefaultInstance());
    assertEquals(1, report().count(Count.DEPOSED_CONTROLLER_CALL));
  }

  @Test
  void callerHeaders_areReadPerCall_andMalformedOnesAreRefusedNamingTheHeader() throws Exception {
    MockCsiPlugin p = plugin("na");
    Csi a = client(p);
    ListVolumesRequest list = ListVolumesRequest.getDefaultInstance();
    as(a, "node%20a1", "42").listVolumes(list);
    assertEquals(java.util.Optional.of(new Caller("node a1", 42)), p.lastCaller(ControllerGrpc.getListVolumesMethod()));
    a.controller().listVolumes(list);
    assertEquals(java.util.Optional.empty(), p.lastCaller(ControllerGrpc.getListVolumesMethod()));

    Status onlyAgent = statusOf(() -> as(a, "a1", null).listVolumes(list));
    assertEquals(Status.Code.INVALID_ARGUMENT, onlyAgent.getCode());
    assertTrue(onlyAgent.getDescription().contains("header csi-supervisor-election is missing"), onlyAgent.toString());
    for (String bad : new String[] {"0", "-3", "x7"}) {
      Status s = statusOf(() -> as(a, "a1", bad).listVolumes(list));
      assertEquals(Status.Code.INVALID_ARGUMENT, s.getCode());
      assertTrue(s.getDescription().contains("csi-supervisor-election"), s.toString());
    }
    assertEquals(2, p.callCount(ControllerGrpc.getListVolumesMethod()), "refused calls reach nothing");
    assertEquals(0, report().total());
  }

  // ---- the counts last ----

  @Test
  void counts_surviveAPluginRestart_andAnOldCloudFileStillReads() throws Exception {
    // A file as the cloud wrote it before the oracle: disks, an attachment, the id counter.
    Files.writeString(cloudFile(), "disk vol-1 1073741824 d\ndisk vol-2 1073741824 e\nattached vol-1 nb 0\nnext 2\n");
    MockCsiPlugin first = plugin("na");
    Csi a = client(first);
    assertEquals(List.of(new CloudReport.Attachment("vol-1", "nb", false)), report().attachments());
    assertEquals(0, report().total());
    assertEquals(Status.Code.FAILED_PRECONDITION,
        codeOf(() -> a.controller().controllerPublishVolume(attach("vol-1", "na", RWO))));
    as(a, "a1", "3").listVolumes(ListVolumesRequest.getDefaultInstance());
    first.crash();

    MockCsiPlugin again = MockCsiPlugin.builder().socket(dir.resolve("na").resolve("again.sock")).allCapabilities()
        .name("ebs.csi.dev").nodeId("na").cloud(cloudFile(), Duration.ZERO).start();
    open.add(again);
    Csi c = client(again);
    as(c, "a0", "2").listVolumes(ListVolumesRequest.getDefaultInstance());
    CloudReport r = report();
    assertEquals(1, r.count(Count.DOUBLE_ATTACH), r.toJson());
    assertEquals(1, r.count(Count.DEPOSED_CONTROLLER_CALL), "revision 3 remembered across the restart: " + r.toJson());
    String text = Files.readString(cloudFile());
    assertTrue(text.startsWith("disk vol-1 1073741824 d\ndisk vol-2 1073741824 e\nattached vol-1 nb 0\nnext 2\n"), text);
    assertTrue(text.contains("\ncount double_attach 1\n") && text.contains("\nelection ebs.csi.dev 3 a1\n"), text);
  }
  @Test
  void manyPluginsInOneJvm_changeTheCloudAtOnce_withoutLosingACount() throws Exception {
    // Two SharedCloud instances on one file, as two in-process plugins have: a FileLock is the JVM's, so without a
    // JVM-wide lock per file their threads would collide (OverlappingFileLockException) instead of taking turns.
    SharedCloud one = new SharedCloud(cloudFile(), Duration.ZERO);
    SharedCloud two = new SharedCloud(cloudFile(), Duration.ZERO);
    one.controllerCall("p", new Caller("a2", 2), "csi.v1.Controller/ListVolumes");
    int perThread = 100;
    List<Thread> threads = new java.util.ArrayList<>();
    List<Throwable> failures = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
    for (SharedCloud c : new SharedCloud[] {one, two, one, two}) {
      threads.add(new Thread(() -> {
        try {
          for (int i = 0; i < perThread; i++) {
            c.controllerCall("p", new Caller("a1", 1), "csi.v1.Controller/ListVolumes");
          }
        } catch (Throwable t) {
          failures.add(t);
        }
      }));
    }
    threads.forEach(Thread::start);
    for (Thread t : threads) {
      t.join();
    }
    assertEquals(List.of(), failures);
    assertEquals(4L * perThread, report().count(Count.DEPOSED_CONTROLLER_CALL));
  }
}
