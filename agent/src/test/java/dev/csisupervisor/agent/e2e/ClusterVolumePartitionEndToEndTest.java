package dev.csisupervisor.agent.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.testing.EtcdProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node partitioned while it holds a single-writer volume: three real agents (child JVMs, mock plugins on one
 * shared cloud that refuses a second attachment) on a real etcd; the holder's agent is frozen with SIGSTOP until its
 * lease expires. No other node gets the volume while it is lost (its claim stays, the disk stays attached to it);
 * once it is thawed (SIGCONT) it is back, releases the volume by its own unmount, and then another node mounts it.
 */
class ClusterVolumePartitionEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String PREFIX = "/e2e-part";

  @TempDir Path dir;
  private final List<Process> processes = new ArrayList<>();
  private Process frozen;
  private EtcdProcess etcd;

  @AfterEach
  void cleanUp() throws Exception {
    if (frozen != null) {
      signal(frozen, "CONT"); // a stopped agent hears no SIGTERM
    }
    AgentProcesses.stop(processes);
    if (etcd != null) {
      etcd.close();
    }
  }

  /** {@code cluster:} lines every agent of the test gets. */
  private String clusterLines = "";

  private Path config(String node, String type) throws Exception {
    return CloudAgents.configWith(dir, etcd.endpoint(), PREFIX, node, type, clusterLines);
  }

  private Process startAgent(String node, String type) throws Exception {
    Process p = Cli.start(dir, node, "run", "--config", config(node, type).toString());
    processes.add(p);
    return p;
  }

  /** Three agents, the plugin everywhere; a single-node-writer disk made and registered; mounted on a2. */
  private String volumeMountedOnA2() throws Exception {
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> cli("cluster", "plugins", "--config",
        dir.resolve("a1.yaml").toString()).out().matches("(?s).*ebs\\s+1/1\\s+3/3\\s.*"));
    Cli.Result created = cli("volume", "create", "--config", dir.resolve("a1.yaml").toString(), "--plugin", "ebs",
        "--name", "web-data", "--size", "1MiB");
    assertEquals(0, created.code(), created.toString());
    Matcher m = Pattern.compile("created volume (\\S+) ").matcher(created.out());
    assertTrue(m.find(), created.toString());
    String vol = m.group(1);
    Cli.Result registered = cli("cluster", "volume", "register", "ebs", vol, "--access-mode", "single-node-writer",
        "--capacity", "1048576", "--config", dir.resolve("a1.yaml").toString());
    assertEquals(0, registered.code(), registered.toString());
    Cli.Result onA2 = mount("a2", vol, "web-1");
    assertEquals(0, onA2.code(), onA2.toString());
    assertTrue(cloud().contains("attached " + vol + " a2"), cloud());
    return vol;
  }

  /**
   * An agent stopped cleanly (SIGTERM) keeps its mounts (its tasks run on): it is not a lost node, and is never
   * fenced, however long past {@code detach_after}; back, it releases by its own unmount. Before, it was "fenced"
   * {@code detach_after} after the stop: the disk detached from under its mount and handed to a3.
   */
  @Test
  void aCleanlyStoppedHolder_isNotLost_andNeverFenced_pastDetachAfter() throws Exception {
    etcd = EtcdProcess.start(dir);
    clusterLines = "  detach_after: 1s\n";
    startAgent("a1", "monolith");
    Process a2 = startAgent("a2", "node");
    startAgent("a3", "node");
    String vol = volumeMountedOnA2();

    a2.destroy(); // SIGTERM: a clean stop
    assertTrue(a2.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "a2 stopped");
    assertEquals(0, a2.exitValue());
    await().atMost(WAIT).pollInterval(Duration.ofMillis(500)).until(() -> status().contains("NODE STOPPED"));
    // Well past detach_after (1 s) and many controller rounds: the claim, the attachment and the disk stay a2's.
    await().during(Duration.ofSeconds(4)).atMost(WAIT).pollInterval(Duration.ofMillis(500))
        .until(() -> cloud().contains("attached " + vol + " a2") && status().contains("claim node a2, alloc web-1")
            && status().contains("attachment node a2 ATTACHED"));
    Cli.Result onA3 = mount("a3", vol, "web-2");
    assertEquals(1, onA3.code(), onA3.toString());
    assertTrue(onA3.err().contains("held by node a2, alloc web-1"), onA3.toString());

    // a2 runs again: not stopped any more; its own unmount releases the volume, and a3 gets it.
    startAgent("a2", "node");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(500)).until(() -> !status().contains("NODE STOPPED")
        && !status().contains("NODE LOST"));
    Cli.Result unmounted = cli("volume", "unmount", "--config", dir.resolve("a2.yaml").toString(), "--plugin", "ebs",
        "--volume", vol, "--alloc", "web-1");
    assertEquals(0, unmounted.code(), unmounted.toString());
    Cli.Result again = mount("a3", vol, "web-2");
    assertEquals(0, again.code(), again.toString());
    assertTrue(cloud().contains("attached " + vol + " a3") && !cloud().contains("attached " + vol + " a2"), cloud());
  }

  /** Issue 35 (5): detach --force goes through the controller agent's unpublish when there is one. */
  @Test
  void aGoneHolder_detachedByTheOperator_isUnpublishedByTheControllerAgentFirst() throws Exception {
    etcd = EtcdProcess.start(dir);
    startAgent("a1", "monolith");
    Process a2 = startAgent("a2", "node");
    startAgent("a3", "node");
    String vol = volumeMountedOnA2();
    String a1 = dir.resolve("a1.yaml").toString();
    Cli.Result alive = cli("cluster", "volume", "detach", "--config", a1, "--node", "a2", "--force");
    assertEquals(1, alive.code(), alive.toString());
    assertTrue(alive.err().contains("node a2 is alive"), alive.toString());

    a2.destroy(); // stopped for good, as far as the operator knows
    assertTrue(a2.waitFor(30, java.util.concurrent.TimeUnit.SECONDS), "a2 stopped");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(500)).until(() -> status().contains("NODE STOPPED"));
    Cli.Result detached = cli("cluster", "volume", "detach", "--config", a1, "--node", "a2", "--force");
    assertEquals(0, detached.code(), detached.toString());
    assertTrue(detached.out().contains("released claim of ebs/" + vol + " by a2 alloc web-1 after "
        + "ControllerUnpublishVolume to a2 by controller agent a1"), detached.toString());
    assertTrue(!cloud().contains("attached " + vol + " a2"), cloud());
    Cli.Result onA3 = mount("a3", vol, "web-2");
    assertEquals(0, onA3.code(), onA3.toString());
    assertTrue(cloud().contains("attached " + vol + " a3"), cloud());
  }

  private static void signal(Process p, String sig) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).inheritIO().start();
    assertEquals(0, kill.waitFor(), "kill -" + sig + " " + p.pid());
  }

  private Cli.Result cli(String... args) throws Exception {
    return Cli.run(dir, WAIT, args);
  }

  private String status() throws Exception {
    Cli.Result r = cli("cluster", "volume", "status", "--config", dir.resolve("a1.yaml").toString());
    assertEquals(0, r.code(), r.toString());
    return r.out();
  }

  private String cloud() throws Exception {
    return Files.readString(dir.resolve("cloud"));
  }

  private Cli.Result mount(String node, String volume, String alloc) throws Exception {
    return cli("volume", "mount", "--config", dir.resolve(node + ".yaml").toString(), "--plugin", "ebs", "--volume",
        volume, "--alloc", alloc);
  }

  @Test
  void aFrozenHolder_keepsItsSingleWriterVolume_untilItIsBackAndReleasesIt() throws Exception {
    etcd = EtcdProcess.start(dir);
    startAgent("a1", "monolith"); // the controller (agent) of ebs
    frozen = startAgent("a2", "node");
    startAgent("a3", "node");
    // A single-node-writer disk, created through a1's controller and registered in the cluster; a2 mounts it: its
    // claim, then a1 attaches the disk to a2.
    String vol = volumeMountedOnA2();

    // a2 is frozen (a partition of its own making) until its lease expires: lost, not gone.
    signal(frozen, "STOP");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(500)).until(() -> status().contains("(NODE LOST)"));
    String lost = status();
    assertTrue(lost.contains("claim node a2, alloc web-1") && lost.contains("STUCK: claim of ebs/" + vol
        + " by node a2"), lost);

    // No other node gets it while a2 is lost: refused, naming the holder; the disk stays attached to a2 alone.
    Cli.Result onA3 = mount("a3", vol, "web-2");
    assertEquals(1, onA3.code(), onA3.toString());
    assertTrue(onA3.err().contains("held by node a2, alloc web-1"), onA3.toString());
    assertTrue(cloud().contains("attached " + vol + " a2") && !cloud().contains("attached " + vol + " a3"), cloud());
    assertTrue(status().contains("attachment node a2 ATTACHED"), status());

    // a2 thaws: back in the cluster, its claim as it was; its own unmount releases it; then a3 mounts.
    signal(frozen, "CONT");
    frozen = null;
    await().atMost(WAIT).pollInterval(Duration.ofMillis(500)).until(() -> !status().contains("NODE LOST"));
    Cli.Result unmounted = cli("volume", "unmount", "--config", dir.resolve("a2.yaml").toString(), "--plugin", "ebs",
        "--volume", vol, "--alloc", "web-1");
    assertEquals(0, unmounted.code(), unmounted.toString());
    Cli.Result again = mount("a3", vol, "web-2");
    assertEquals(0, again.code(), again.toString());
    String after = cloud();
    assertTrue(after.contains("attached " + vol + " a3") && !after.contains("attached " + vol + " a2"), after);
    String end = status();
    assertTrue(end.contains("claim node a3, alloc web-2") && !end.contains("node a2"), end);
  }
}
