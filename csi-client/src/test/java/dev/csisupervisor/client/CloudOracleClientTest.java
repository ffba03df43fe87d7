package dev.csisupervisor.client;

import static dev.csisupervisor.client.VolumeRpc.await;
import static dev.csisupervisor.client.VolumeRpc.failureOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.mockplugin.CloudReport;
import dev.csisupervisor.mockplugin.CloudReport.Count;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.testing.ShortTempDir;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The mock cloud's oracle driven through {@link CsiClient}, as the agents drive it: two plugins (nodes na, nb) on
 * one cloud file, real gRPC over unix sockets; each count 0 on the legal sequence and 1 on the illegal one.
 */
@Timeout(30)
class CloudOracleClientTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);

  private ShortTempDir dir;
  private MockCsiPlugin na;
  private MockCsiPlugin nb;
  private CsiClient a;
  private CsiClient b;
  private final List<AutoCloseable> open = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    dir = new ShortTempDir("oracle");
    na = plugin("na");
    nb = plugin("nb");
    a = CsiClient.create(na.socket());
    b = CsiClient.create(nb.socket());
    open.addAll(List.of(a, b, na, nb, dir));
  }

  @AfterEach
  void close() throws Exception {
    for (AutoCloseable c : open) {
      c.close();
    }
  }

  private MockCsiPlugin plugin(String node) throws Exception {
    return MockCsiPlugin.builder().socket(dir.resolve(node + ".sock")).allCapabilities().name("ebs.csi.dev")
        .nodeId(node).cloud(dir.resolve("cloud"), Duration.ZERO).start();
  }

  private CloudReport report() throws Exception {
    return CloudReport.read(dir.resolve("cloud"));
  }

  private static String create(CsiClient c, String name) throws Exception {
    return await(c.createVolumeAsync(new CreateVolumeRequest(name, Optional.empty(), List.of(RWO), Map.of(),
        Secrets.none()))).volumeId();
  }

  private static ControllerPublishRequest attach(String volume, String node) {
    return new ControllerPublishRequest(volume, node, RWO, false, Secrets.none(), Map.of());
  }

  @Test
  void doubleAttach() throws Exception {
    String vol = create(a, "d");
    await(a.controllerPublishVolumeAsync(attach(vol, "na")));
    await(a.controllerUnpublishVolumeAsync(vol, "na", Secrets.none()));
    await(b.controllerPublishVolumeAsync(attach(vol, "nb")));
    assertEquals(0, report().count(Count.DOUBLE_ATTACH));

    CsiStatusException refused = assertInstanceOf(CsiStatusException.class,
        failureOf(a.controllerPublishVolumeAsync(attach(vol, "na"))));
    assertEquals(StatusCode.FAILED_PRECONDITION, refused.code());
    assertEquals(1, report().count(Count.DOUBLE_ATTACH), report().toJson());
  }

  @Test
  void detachInUse() throws Exception {
    String vol = create(a, "d");
    Path staging = Files.createDirectories(dir.resolve("nb-staging"));
    Path target = dir.resolve("nb-target");
    await(a.controllerPublishVolumeAsync(attach(vol, "nb")));
    await(b.nodeStageVolumeAsync(new NodeStageRequest(vol, Map.of(), staging, RWO, Secrets.none(), Map.of())));
    await(b.nodePublishVolumeAsync(new NodePublishRequest(vol, Map.of(), Optional.of(staging), target, RWO, false,
        Secrets.none(), Map.of())));
    await(b.nodeUnpublishVolumeAsync(vol, target));
    await(b.nodeUnstageVolumeAsync(vol, staging));
    await(a.controllerUnpublishVolumeAsync(vol, "nb", Secrets.none()));
    assertEquals(0, report().count(Count.DETACH_IN_USE), report().toJson());

    await(a.controllerPublishVolumeAsync(attach(vol, "nb")));
    await(b.nodeStageVolumeAsync(new NodeStageRequest(vol, Map.of(), staging, RWO, Secrets.none(), Map.of())));
    nb.failCalls("NodeUnstageVolume", io.grpc.Status.Code.INTERNAL, "target is busy", 1);
    assertInstanceOf(CsiStatusException.class, failureOf(b.nodeUnstageVolumeAsync(vol, staging)));
    await(a.controllerUnpublishVolumeAsync(vol, "nb", Secrets.none()));
    assertEquals(1, report().count(Count.DETACH_IN_USE), report().toJson());
  }

  @Test
  void unrecordedAttachment() throws Exception {
    String vol = create(a, "d");
    await(a.controllerPublishVolumeAsync(attach(vol, "nb")));
    CloudReport r = report();
    assertEquals(List.of(), r.unrecorded((v, n) -> v.equals(vol) && n.equals("nb")));
    assertEquals(List.of(new CloudReport.Attachment(vol, "nb", false)), r.unrecorded((v, n) -> false));
  }

  @Test
  void deposedControllerCall() throws Exception {
    String vol = create(a, "d");
    CsiClient a1 = a.withCallerIdentity("a1", 5);
    CsiClient a2 = b.withCallerIdentity("a2", 9);
    await(a1.controllerPublishVolumeAsync(attach(vol, "na")));
    await(a1.controllerUnpublishVolumeAsync(vol, "na", Secrets.none()));
    await(a2.controllerPublishVolumeAsync(attach(vol, "nb"))); // the successor, elected later, in another process
    await(a.controllerCapabilitiesAsync()); // no identity: not counted
    assertEquals(0, report().count(Count.DEPOSED_CONTROLLER_CALL), report().toJson());
    assertEquals(List.of(new CloudReport.Election("ebs.csi.dev", 9, "a2")), report().elections());

    await(a1.controllerUnpublishVolumeAsync(vol, "nb", Secrets.none())); // a1, deposed, acts all the same
    CloudReport r = report();
    assertEquals(1, r.count(Count.DEPOSED_CONTROLLER_CALL), r.toJson());
    assertTrue(r.violations().get(0).contains("from agent 'a1' at election revision 5 after agent 'a2' called at "
        + "revision 9"), r.violations().toString());
  }
}
