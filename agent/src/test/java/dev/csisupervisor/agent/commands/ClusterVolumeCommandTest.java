package dev.csisupervisor.agent.commands;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.ClaimRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.testing.EtcdProcess;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code csi-agent cluster volume ...} against a real etcd. */
@org.junit.jupiter.api.Timeout(120)
class ClusterVolumeCommandTest {
  @TempDir
  static Path tmp;

  static EtcdProcess etcd;

  @BeforeAll
  static void startEtcd() throws Exception {
    etcd = EtcdProcess.start(tmp);
  }

  @AfterAll
  static void stopEtcd() {
    if (etcd != null) {
      etcd.close();
    }
  }

  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    String[] full = new String[args.length + 4];
    full[0] = "cluster";
    full[1] = "volume";
    System.arraycopy(args, 0, full, 2, args.length);
    full[args.length + 2] = "--endpoints=" + etcd.endpoint();
    full[args.length + 3] = "--prefix=/clivol";
    int code = CsiAgentCommand.commandLine(new PrintWriter(out, true), new PrintWriter(err, true), full).execute(full);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void registerListStatusForceDeregister() throws Exception {
    Run reg = run("register", "disk.csi", "projects/p/disks/d1", "--access-mode", "single-node-writer",
        "--topology", "zone=z1", "--capacity", "1073741824");
    assertEquals(0, reg.code(), reg.err());
    assertEquals("registered disk.csi/projects/p/disks/d1, not validated (no controller of plugin disk.csi in the "
        + "cluster to validate it)\n", reg.out());
    assertEquals(0, run("register", "disk.csi", "projects/p/disks/d1", "--access-mode", "single-node-writer",
        "--topology", "zone=z1", "--capacity", "1073741824").code(), "the same again: no change");

    try (ClusterVolumes v = ClusterVolumes.builder().etcd(EtcdOptions.of(etcd.endpoint())).prefix("/clivol")
        .nodeId("gone-node").build()) {
      v.claim(new ClaimRequest("disk.csi", "projects/p/disks/d1", "gone-node", "a1", VolumeAccessMode.SINGLE_NODE_WRITER,
          false, "csi-gone", Map.of("zone", "z1")));
    }
    Run list = run("list");
    assertTrue(list.out().contains("projects/p/disks/d1") && list.out().contains(" 1 "), list.out());
    Run status = run("status");
    assertTrue(status.out().contains("claim node gone-node, alloc a1 SINGLE_NODE_WRITER"), status.out());
    assertTrue(status.out().contains("(NODE LOST)"), status.out());
    assertTrue(status.out().contains("STUCK: claim of disk.csi/projects/p/disks/d1 by node gone-node, alloc a1: the "
        + "node is lost"), status.out());
    assertTrue(run("status", "--json").out().contains("\"nodeLive\" : false"));
    // What waits is shown for the plugin and the volume it is about, not for every status of another one.
    assertTrue(run("status", "disk.csi").out().contains("STUCK: claim of disk.csi/projects/p/disks/d1"));
    assertTrue(run("status", "disk.csi", "projects/p/disks/d1").out().contains("STUCK: claim of disk.csi/"));
    Run other = run("status", "other.csi");
    assertFalse(other.out().contains("STUCK"), other.out());
    assertFalse(run("status", "disk.csi", "projects/p/disks/d2").out().contains("STUCK"));
    assertFalse(run("status", "other.csi", "--json").out().contains("gone-node"));

    Run inUse = run("deregister", "disk.csi", "projects/p/disks/d1");
    assertEquals(1, inUse.code());
    assertTrue(inUse.err().contains("still in use"), inUse.err());

    Run badWait = run("detach", "--node", "gone-node", "--force", "--wait", "-1");
    assertEquals(2, badWait.code());
    assertTrue(badWait.err().contains("--wait must not be negative, got -1"), badWait.err());
    Run noForce = run("detach", "--node", "gone-node");
    assertEquals(2, noForce.code());
    assertTrue(noForce.err().contains("detach needs --force"), noForce.err());
    Run forced = run("detach", "--node", "gone-node", "--force");
    assertEquals(0, forced.code(), forced.err());
    assertTrue(forced.out().contains("released claim of disk.csi/projects/p/disks/d1 by gone-node alloc a1 WITHOUT "
        + "ControllerUnpublishVolume (no controller agent of disk.csi publishes)"), forced.out());
    Run again = run("detach", "--node", "gone-node", "--force");
    assertEquals(0, again.code(), again.err());
    assertTrue(again.out().contains("node gone-node has no claim: nothing to detach"), again.out());

    assertEquals("deregistered disk.csi/projects/p/disks/d1\n", run("deregister", "disk.csi", "projects/p/disks/d1").out());
  }

  @Test
  void badInput_namesTheOption() {
    Run mode = run("register", "disk.csi", "v", "--access-mode", "sometimes");
    assertEquals(2, mode.code());
    assertTrue(mode.err().contains("--access-mode must be one of"), mode.err());
    Run topo = run("register", "disk.csi", "v", "--topology", "zone");
    assertEquals(2, topo.code());
    assertTrue(topo.err().contains("--topology must be KEY=VALUE"), topo.err());
    Run plugin = run("register", "bad plugin", "v");
    assertEquals(2, plugin.code());
    assertTrue(plugin.err().contains("pluginId"), plugin.err());
  }

  @Test
  void create_badInput_namesEachField_andAsksNothing() throws Exception {
    assertBad(run("create", "disk.csi", ""), "NAME must not be empty");
    assertBad(run("create", "nope.csi", "web"), "PLUGIN: no controller plugin 'nope.csi' is registered");
    assertBad(run("create", "bad plugin", "web"), "PLUGIN");
    assertBad(run("create", "disk.csi", "web", "--size", "lots"), "--size: 'lots' is not a size");
    assertBad(run("create", "disk.csi", "web", "--size", "0"), "--size must be positive");
    assertBad(run("create", "disk.csi", "web", "--size", "2GiB", "--limit", "1GiB"),
        "--size must not be more than --limit");
    assertBad(run("create", "disk.csi", "web", "--access-mode", "everyone-writes"), "--access-mode must be one of");
    assertBad(run("create", "disk.csi", "web", "--block", "--fs-type", "ext4"), "--fs-type is for a file system");
    assertBad(run("create", "disk.csi", "web", "--topology", "zone"), "--topology must be KEY=VALUE");
    assertBad(run("create", "disk.csi", "web", "--secrets-file", "relative/file"),
        "--secrets-file must be an absolute path");
    assertBad(run("create", "disk.csi", "web", "--wait", "-1"), "--wait must not be negative");
    assertBad(run("delete", "disk.csi", ""), "VOLUME_ID must not be empty");
    assertBad(run("cancel", "rename", "disk.csi", "web"), "KIND must be one of create, delete, snapshot");
    try (ClusterVolumes v = ClusterVolumes.builder().etcd(EtcdOptions.of(etcd.endpoint())).prefix("/clivol")
        .nodeId("reader").build()) {
      assertTrue(v.read().requests().isEmpty(), "nothing asked: " + v.read().requests());
    }
    Run none = run("delete", "disk.csi", "never-registered");
    assertEquals(0, none.code(), none.err());
    assertTrue(none.out().contains("is not registered: nothing to delete"), none.out());
  }

  @Test
  void status_showsAPendingCreate_asStuck_whileNoControllerAgentActsOnIt() throws Exception {
    try (ClusterVolumes v = ClusterVolumes.builder().etcd(EtcdOptions.of(etcd.endpoint())).prefix("/clivol")
        .nodeId("asker").build()) {
      v.requestCreate(dev.csisupervisor.catalog.ClusterVolumeRequest.create("orphan.csi", "web-data",
          new dev.csisupervisor.catalog.ClusterVolumeRequest.Spec(1 << 20, 0,
              java.util.Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), java.util.List.of(),
              java.util.List.of()), java.util.Optional.empty(), java.time.Instant.now()));
    }
    Run status = run("status");
    assertTrue(status.out().contains("requests:\n  create of orphan.csi/web-data asked "), status.out());
    assertTrue(status.out().contains("STUCK: create of orphan.csi/web-data: waiting: no controller agent for plugin "
        + "orphan.csi"), status.out());
    assertTrue(run("list").out().contains("create of orphan.csi/web-data"));
    assertTrue(run("status", "--json").out().contains("\"kind\" : \"CREATE\""));
    Run cancel = run("cancel", "create", "orphan.csi", "web-data");
    assertEquals("withdrew the create of orphan.csi/web-data\n", cancel.out());
    assertTrue(!run("status").out().contains("orphan.csi"));
  }

  private static void assertBad(Run r, String message) {
    assertEquals(2, r.code(), r.out() + r.err());
    assertTrue(r.err().contains(message), r.err());
  }
}
