package dev.csisupervisor.agent.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.cli.AdminCommands;
import dev.csisupervisor.cli.AgentConfigReader;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.volumes.OrphanMount;
import dev.csisupervisor.volumes.UnmountRequest;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeRecord;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code csi-agent volume unmount|release|gc|list} and {@code status} in this JVM, against the admin API over a
 * real unix socket and a volume manager double: what the commands send (a secrets file's absolute path and its
 * secrets, force) and what they print and exit with.
 */
class VolumeCliTest {
  private static final String SECRET = "cli-secret-777";
  private static final AgentConfigReader NO_CONFIG = file -> {
    throw new IllegalArgumentException("no config in this test");
  };

  @TempDir Path dir;
  private final FakeVolumeManager volumes = new FakeVolumeManager();
  private ScheduledExecutorService scheduler;
  private PluginRegistry registry;
  private AdminServer server;
  private volatile GetAgentStatusResponse status = GetAgentStatusResponse.getDefaultInstance();

  @BeforeEach
  void serve() throws Exception {
    scheduler = Executors.newSingleThreadScheduledExecutor();
    registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
    server = AdminServer.start(dir.resolve("agent.sock"),
        new AdminService(registry, () -> status, scheduler, 10), new VolumeAdminService(volumes, scheduler));
  }

  @AfterEach
  void stop() {
    server.close();
    registry.close();
    scheduler.shutdownNow();
  }

  private record Result(int code, String out, String err) {}

  private Result cli(Object command, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(command);
    cl.setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true));
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--admin-socket", server.socket().toString()));
    return new Result(cl.execute(all.toArray(String[]::new)), out.toString(), err.toString());
  }

  private Result volume(String... args) {
    return cli(AdminCommands.volume(NO_CONFIG), args);
  }

  @Test
  void unmountWithSecretsFile_sendsItsAbsolutePathAndItsSecrets_andForce() throws Exception {
    Path file = Files.writeString(dir.resolve("controller-secrets"), "token=" + SECRET + "\n");
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
    Path relative = Path.of("").toAbsolutePath().relativize(file);
    volumes.unmount = CompletableFuture.completedFuture(null);
    volumes.records = List.of(FakeVolumeManager.record("v", AllocPhase.PUBLISHED, StageState.STAGED, false));

    Result r = volume("unmount", "--plugin", "disk", "--volume", "v", "--alloc", "a", "--secrets-file",
        relative.toString(), "--force");

    assertEquals(0, r.code(), r.toString());
    assertEquals("unmounted v from a\n", r.out());
    UnmountRequest sent = volumes.unmounts.get(0);
    assertEquals(Optional.of(file), sent.secretsFile(), "the file's absolute path, for the agent to read again");
    assertEquals(Map.of("token", SECRET), sent.controllerSecrets().reveal());
    assertTrue(sent.force());
  }

  @Test
  void mountWithSecretsFile_sendsItsAbsolutePath_soThatTheAgentCanMountAgainAfterAReboot() throws Exception {
    Path file = Files.writeString(dir.resolve("node-secrets"), "token=" + SECRET + "\n");
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
    Path relative = Path.of("").toAbsolutePath().relativize(file);

    Result r = volume("mount", "--plugin", "disk", "--volume", "v", "--alloc", "a", "--secrets-file",
        relative.toString());

    assertEquals(0, r.code(), r.toString());
    VolumeClaim sent = volumes.claims.get(0);
    assertEquals(Optional.of(file), sent.secretsFile(), "the record keeps the path, never the values");
    assertEquals(Map.of("token", SECRET), sent.secrets().reveal());
  }

  @Test
  void unmountWithoutOptions_sendsNoSecretsAndIsNotForced() {
    volumes.unmount = CompletableFuture.completedFuture(null);
    volumes.records = List.of(FakeVolumeManager.record("v", AllocPhase.PUBLISHED, StageState.STAGED, false));

    assertEquals(0, volume("unmount", "--plugin", "disk", "--volume", "v", "--alloc", "a").code());

    UnmountRequest sent = volumes.unmounts.get(0);
    assertEquals(Optional.empty(), sent.secretsFile());
    assertTrue(sent.controllerSecrets().isEmpty());
    assertFalse(sent.force());
  }

  @Test
  void release_printsTheVolumesItUnmounted() {
    volumes.release = CompletableFuture.completedFuture(List.of("disk/v1", "disk/v2"));

    Result r = volume("release", "--alloc", "web-1", "--force");

    assertEquals(0, r.code(), r.toString());
    assertEquals("released alloc web-1: unmounted disk/v1, disk/v2\n", r.out());
    assertEquals(List.of("web-1 forced"), volumes.releases);
  }

  @Test
  void release_ofAnAllocWithoutVolumes_saysSo() {
    volumes.release = CompletableFuture.completedFuture(List.of());

    Result r = volume("release", "--alloc", "gone");

    assertEquals(0, r.code(), r.toString());
    assertEquals("alloc gone holds no volume on this node\n", r.out());
  }

  @Test
  void release_pendingAfterItsWait_exits3_sayingWhatItWaitsFor() {
    volumes.records = List.of(FakeVolumeManager.record("v1", AllocPhase.UNPUBLISHING, StageState.STAGED, false));
    volumes.waiting = Map.of("disk/v1", "node plugin disk is not ready");

    Result r = volume("release", "--alloc", "a", "--wait", "1");

    assertEquals(3, r.code(), r.toString());
    assertEquals("release of alloc a (disk/v1) is pending after 1 s (recorded and retried): disk/v1: node plugin"
        + " disk is not ready; see csi-agent volume list\n", r.out());
  }

  @Test
  void gc_withoutOrphans_saysNone() {
    Result r = volume("gc");

    assertEquals(0, r.code(), r.toString());
    assertTrue(r.out().startsWith("no orphan mounts"), r.out());
    assertEquals(List.of(false), volumes.orphanRemoves, "only listed");
  }

  @Test
  void gc_withoutYes_listsThemAndSaysHowToRemoveThem() {
    volumes.orphans = List.of(new OrphanMount(Path.of("/csi/node/disk/per-alloc/zz/v/m"), false, Optional.empty()));

    Result r = volume("gc");

    assertEquals(0, r.code(), r.toString());
    assertEquals("""
        orphan mounts (no volume record names them):
          /csi/node/disk/per-alloc/zz/v/m
        would unmount 1 orphan mount(s); to do it: csi-agent volume gc --yes
        """, r.out());
    assertEquals(List.of(false), volumes.orphanRemoves);
  }

  @Test
  void gcYes_unmountsThem_andExits1IfOneCouldNotBe() {
    volumes.orphans = List.of(new OrphanMount(Path.of("/csi/a"), true, Optional.empty()),
        new OrphanMount(Path.of("/csi/b"), false, Optional.of("umount: /csi/b: target is busy")));

    Result r = volume("gc", "--yes");

    assertEquals(1, r.code(), r.toString());
    assertEquals("unmounted /csi/a\ncould not unmount /csi/b: umount: /csi/b: target is busy\n", r.out());
    assertEquals(List.of(true), volumes.orphanRemoves);
  }

  @Test
  void list_showsLostAsIs_andAfterTheTableWhatEachPendingVolumeWaitsFor() {
    volumes.records = List.of(FakeVolumeManager.record("lost", AllocPhase.LOST, StageState.LOST, false),
        FakeVolumeManager.record("gone", AllocPhase.UNPUBLISHING, StageState.STAGED, true));
    volumes.waiting = Map.of("disk/lost", "node plugin disk is not ready",
        "disk/gone", "the agent could not unmount /x: busy");

    List<String> lines = volume("list").out().lines().toList();

    assertEquals(5, lines.size(), String.join("\n", lines));
    assertTrue(lines.get(1).matches("disk +lost +mount-single-node-writer-rw +LOST +a +LOST +/.*"), lines.get(1));
    assertEquals("disk/lost is pending: node plugin disk is not ready", lines.get(3));
    assertEquals("disk/gone is pending (forced): the agent could not unmount /x: busy", lines.get(4));
  }

  @Test
  void list_withNothingPending_printsOnlyTheTable() {
    volumes.records = List.of(FakeVolumeManager.record("fine", AllocPhase.PUBLISHED, StageState.STAGED, false));

    Result r = volume("list");

    assertEquals("PLUGIN  VOLUME  USAGE                        STAGE   ALLOC  PHASE      TARGET\n"
        + "disk    fine    mount-single-node-writer-rw  STAGED  a      PUBLISHED"
        + "  /csi/node/disk/per-alloc/a/" + VolumeRecord.directoryName("fine") + "/mount-single-node-writer-rw\n",
        r.out());
  }

  @Test
  void listJson_carriesTheNewFields() {
    volumes.records = List.of(FakeVolumeManager.record("lost", AllocPhase.LOST, StageState.LOST, true));
    volumes.waiting = Map.of("disk/lost", "node plugin disk is not ready");

    String json = volume("list", "--json").out();

    assertTrue(json.contains("\"waiting_for\" : \"node plugin disk is not ready\""), json);
    assertTrue(json.contains("\"forced\" : true") && json.contains("\"lost\" : true"), json);
  }

  @Test
  void list_showsAVolumeOwedANodeExpansion_onItsRowAndInALineAfterTheTable() {
    volumes.records = List.of(FakeVolumeManager.owed("grown", 2L << 30),
        FakeVolumeManager.record("fine", AllocPhase.PUBLISHED, StageState.STAGED, false));

    List<String> lines = volume("list").out().lines().toList();

    assertEquals(4, lines.size(), String.join("\n", lines));
    assertTrue(lines.get(1).matches("disk +grown +- +- +- +expansion owed +-"), lines.get(1));
    assertEquals("disk/grown is owed a node expansion to 2.0 GiB: NodeExpandVolume after its next mount here",
        lines.get(3));
    assertTrue(volume("list", "--json").out().contains("\"node_expansion_pending\" : true"));
  }

  @Test
  void create_withTopology_sendsOneSegmentSet_andPrintsWhereTheVolumeIsAccessibleFrom() {
    volumes.created = new dev.csisupervisor.client.CsiVolume("vol-z", 1L << 30, Map.of(),
        List.of(Map.of("topology.mock/zone", "a", "region", "r1")));

    Result r = volume("create", "--plugin", "disk", "--name", "z", "--topology", "topology.mock/zone=a",
        "--topology", "region=r1");

    assertEquals(0, r.code(), r.err());
    assertEquals(List.of(Optional.of(dev.csisupervisor.client.TopologyRequirement.of(
        Map.of("topology.mock/zone", "a", "region", "r1")))), volumes.createTopologies);
    assertEquals("created volume vol-z (1.0 GiB), accessible from region=r1,topology.mock/zone=a\n", r.out());
    String json = volume("create", "--plugin", "disk", "--name", "z", "--json").out();
    assertTrue(json.contains("\"accessible_topology\"") && json.contains("\"topology.mock/zone\" : \"a\""), json);
  }

  @Test
  void create_withoutTopology_printsAsBefore() {
    Result r = volume("create", "--plugin", "disk", "--name", "plain");
    assertEquals("created volume vol-1 (1.0 GiB)\n", r.out());
    assertEquals(List.of(Optional.empty()), volumes.createTopologies);
  }

  @Test
  void status_showsPendingVolumesWithWhatTheyWaitFor() {
    volumes.waiting = Map.of("disk/v", "NodeUnpublishVolume failed: UNAVAILABLE: plugin down");
    status = GetAgentStatusResponse.newBuilder().addAllPendingVolumes(AdminVolumeProtos.volumes(
        List.of(FakeVolumeManager.record("v", AllocPhase.UNPUBLISHING, StageState.STAGED, false)), volumes))
        .build();

    String out = cli(AdminCommands.status(NO_CONFIG)).out();

    assertTrue(out.contains("volumes with an operation pending (finished when their plugin is ready):\n"), out);
    assertTrue(out.contains("\ndisk/v is pending: NodeUnpublishVolume failed: UNAVAILABLE: plugin down\n"), out);
  }
}
