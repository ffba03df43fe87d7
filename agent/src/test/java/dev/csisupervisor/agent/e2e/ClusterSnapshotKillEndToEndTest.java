package dev.csisupervisor.agent.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.testing.EtcdProcess;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A snapshot whose controller agent is killed (with its plugin, as a lost machine) mid-CreateSnapshot: three real
 * agents (child JVMs) on a real etcd, a1 and a2 each with a controller of {@code ebs} (mock plugins on one shared
 * cloud whose cut takes 4 s), a3 with a node plugin only. The CLI asks through a3 and waits; the successor sends
 * CreateSnapshot again by name, and the CLI gets the one snapshot the cloud has of that name.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class ClusterSnapshotKillEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String PREFIX = "/e2e-snapshot";

  @TempDir Path dir;
  private final Map<String, Process> agents = new TreeMap<>();
  private final List<Process> cliProcesses = new ArrayList<>();
  private EtcdProcess etcd;

  @AfterEach
  void cleanUp() throws Exception {
    for (Process p : cliProcesses) {
      p.destroyForcibly();
    }
    AgentProcesses.stop(new ArrayList<>(agents.values()));
    if (etcd != null) {
      etcd.close();
    }
  }

  private void startAgent(String node, String type) throws Exception {
    Path config = CloudAgents.config(dir, etcd.endpoint(), PREFIX, node, type, "--snapshot-ms", "4000");
    agents.put(node, Cli.start(dir, node, "run", "--config", config.toString()));
  }

  private Cli.Result cli(String... args) throws Exception {
    return Cli.run(dir, WAIT, args);
  }

  private String status() throws Exception {
    Cli.Result r = cli("cluster", "volume", "status", "--config", dir.resolve("a3.yaml").toString());
    assertEquals(0, r.code(), r.toString());
    return r.out();
  }

  private String controllerAgent() throws Exception {
    Matcher m = Pattern.compile("controller agents: \\{ebs=(a\\d)}").matcher(status());
    return m.find() ? m.group(1) : "";
  }

  /** The cloud's snapshots of a name (the mock's file: {@code snapshot ID SOURCE SIZE ... NAME}). */
  private long snapshotsNamed(String name) throws Exception {
    return Files.readAllLines(dir.resolve("cloud")).stream().map(l -> l.split(" "))
        .filter(f -> f.length == 8 && f[0].equals("snapshot")
            && URLDecoder.decode(f[7], StandardCharsets.UTF_8).equals(name))
        .count();
  }

  @Test
  void aSnapshotWhoseControllerAgentIsKilledMidCut_isFinishedByTheSuccessor_oneInTheCloud() throws Exception {
    etcd = EtcdProcess.start(dir);
    startAgent("a1", "monolith");
    startAgent("a2", "monolith");
    startAgent("a3", "node");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> cli("cluster", "plugins", "--config",
        dir.resolve("a3.yaml").toString()).out().matches("(?s).*ebs\\s+2/2\\s+3/3\\s.*"));
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> !controllerAgent().isEmpty());
    String first = controllerAgent();
    String second = first.equals("a1") ? "a2" : "a1";
    Cli.Result created = cli("cluster", "volume", "create", "ebs", "db", "--size", "1MiB", "--config",
        dir.resolve("a3.yaml").toString());
    assertEquals(0, created.code(), created.toString());
    Matcher m = Pattern.compile("created volume (\\S+) ").matcher(created.out());
    assertTrue(m.find(), created.toString());
    String volume = m.group(1);

    Process asking = Cli.start(dir, "snap", "cluster", "volume", "snapshot", "create", "ebs", "nightly", "--volume",
        volume, "--config", dir.resolve("a3.yaml").toString());
    cliProcesses.add(asking);
    // The plugin records the snapshot when the call arrives and answers 4 s later: the kill lands inside that call.
    // (A CLI's `status` per look, a JVM each, could take longer than the call on a loaded machine.)
    await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> snapshotsNamed("nightly") == 1);
    Process killed = agents.remove(first);
    killed.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
    killed.destroyForcibly().waitFor();

    assertTrue(asking.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS), "the snapshot's CLI did not finish");
    Cli.Result snap = new Cli.Result(asking.exitValue(), Cli.read(dir.resolve("snap.out")),
        Cli.read(dir.resolve("snap.err")));
    assertEquals(0, snap.code(), snap.toString());
    assertTrue(snap.out().contains("cut from volume " + volume + " as nightly") && snap.out()
        .contains("through controller agent " + second), snap.toString());
    assertEquals(1, snapshotsNamed("nightly"), Files.readString(dir.resolve("cloud")));
    Cli.Result list = cli("cluster", "volume", "snapshot", "list", "ebs", "--config",
        dir.resolve("a3.yaml").toString());
    assertEquals(0, list.code(), list.toString());
    assertTrue(list.out().contains("nightly"), list.toString());
  }
}
