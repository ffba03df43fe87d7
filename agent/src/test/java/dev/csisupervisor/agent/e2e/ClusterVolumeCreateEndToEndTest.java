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
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Volumes created and deleted through the elected controller agent: three real agents (child JVMs) on a real etcd,
 * a1 and a2 each with a controller of {@code ebs} (mock plugins on one shared cloud whose CreateVolume takes 4 s), a3
 * with a node plugin only. A create asked through a3's config is made by the controller agent; a create whose
 * controller agent is killed (with its plugin, as a lost machine) mid-CreateVolume is finished by its successor with
 * the same name, and the cloud has exactly one disk of it; a delete is refused while the volume is claimed, naming
 * the claim, and done once it is not.
 */
class ClusterVolumeCreateEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String PREFIX = "/e2e-create";

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

  private Path config(String node, String type) throws Exception {
    return CloudAgents.config(dir, etcd.endpoint(), PREFIX, node, type, "--create-ms", "4000");
  }

  private void startAgent(String node, String type) throws Exception {
    agents.put(node, Cli.start(dir, node, "run", "--config", config(node, type).toString()));
  }

  private Cli.Result cli(String... args) throws Exception {
    return Cli.run(dir, WAIT, args);
  }

  private String status(String via) throws Exception {
    Cli.Result r = cli("cluster", "volume", "status", "--config", dir.resolve(via + ".yaml").toString());
    assertEquals(0, r.code(), r.toString());
    return r.out();
  }

  /** The elected controller agent of ebs, from status. */
  private String controllerAgent(String via) throws Exception {
    Matcher m = Pattern.compile("controller agents: \\{ebs=(a\\d)}").matcher(status(via));
    return m.find() ? m.group(1) : "";
  }

  private long disksNamed(String name) throws Exception {
    return Files.readAllLines(dir.resolve("cloud")).stream()
        .filter(l -> l.startsWith("disk ") && l.endsWith(" " + name)).count();
  }

  private static String volumeId(Cli.Result created) {
    Matcher m = Pattern.compile("created volume (\\S+) ").matcher(created.out());
    assertTrue(m.find(), created.toString());
    return m.group(1);
  }

  @Test
  void createdThroughAnyAgent_finishedByTheSuccessorOfAKilledController_deletedOnlyWhenUnclaimed() throws Exception {
    etcd = EtcdProcess.start(dir);
    startAgent("a1", "monolith");
    startAgent("a2", "monolith");
    startAgent("a3", "node");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> cli("cluster", "plugins", "--config",
        dir.resolve("a3.yaml").toString()).out().matches("(?s).*ebs\\s+2/2\\s+3/3\\s.*"));
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> !controllerAgent("a3").isEmpty());
    String first = controllerAgent("a3");
    String second = first.equals("a1") ? "a2" : "a1";

    // 1. Created through a3, which runs no controller: the request goes to etcd, the controller agent makes it.
    Cli.Result created = cli("cluster", "volume", "create", "ebs", "web-data", "--size", "1MiB", "--access-mode",
        "single-node-writer", "--config", dir.resolve("a3.yaml").toString());
    assertEquals(0, created.code(), created.toString());
    assertTrue(created.out().contains("(1.0 MiB) of plugin ebs as web-data through controller agent " + first),
        created.toString());
    String web = volumeId(created);
    assertEquals(1, disksNamed("web-data"));
    assertTrue(status("a3").contains("ebs/" + web + " [SINGLE_NODE_WRITER] (created as web-data)"), status("a3"));

    // 2. The controller agent is killed mid-CreateVolume, with its plugin (the machine is lost): the successor sends
    //    CreateVolume again with the same name, and the waiting CLI gets the one volume.
    Process asking = Cli.start(dir, "create-db", "cluster", "volume", "create", "ebs", "db-data", "--size", "2MiB",
        "--config", dir.resolve("a3.yaml").toString());
    cliProcesses.add(asking);
    // The plugin makes the disk when the call arrives and answers 4 s later: the kill lands inside that call. (A
    // CLI's `status` per look, a JVM each, could take longer than the call on a loaded machine.)
    await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> disksNamed("db-data") == 1);
    Process killed = agents.remove(first);
    killed.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
    killed.destroyForcibly().waitFor();
    assertTrue(asking.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS), "the create's CLI did not finish");
    Cli.Result db = new Cli.Result(asking.exitValue(), Cli.read(dir.resolve("create-db.out")),
        Cli.read(dir.resolve("create-db.err")));
    assertEquals(0, db.code(), db.toString());
    assertTrue(db.out().contains("as db-data through controller agent " + second), db.toString());
    assertEquals(1, disksNamed("db-data"), Files.readString(dir.resolve("cloud")));
    Cli.Result json = cli("cluster", "volume", "status", "--json", "--config", dir.resolve("a3.yaml").toString());
    assertTrue(json.out().contains("\"volume\" : \"" + volumeId(db) + "\""), json.toString());

    // 3. A delete is refused while the volume is claimed, naming the claim; done once it is unmounted and detached.
    Cli.Result mounted = cli("volume", "mount", "--config", dir.resolve("a3.yaml").toString(), "--plugin", "ebs",
        "--volume", web, "--alloc", "web-1");
    assertEquals(0, mounted.code(), mounted.toString());
    Cli.Result refused = cli("cluster", "volume", "delete", "ebs", web, "--config", dir.resolve("a3.yaml").toString());
    assertEquals(1, refused.code(), refused.toString());
    assertTrue(refused.err().contains("the volume is in use: claim by node a3, alloc web-1"), refused.toString());
    Cli.Result unmounted = cli("volume", "unmount", "--config", dir.resolve("a3.yaml").toString(), "--plugin", "ebs",
        "--volume", web, "--alloc", "web-1");
    assertEquals(0, unmounted.code(), unmounted.toString());
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> !status("a3").contains("attachment node a3"));
    Cli.Result deleted = cli("cluster", "volume", "delete", "ebs", web, "--config", dir.resolve("a3.yaml").toString());
    assertEquals(0, deleted.code(), deleted.toString());
    assertTrue(deleted.out().contains("deleted volume " + web + " of plugin ebs"), deleted.toString());
    assertEquals(0, disksNamed("web-data"), Files.readString(dir.resolve("cloud")));
    String end = status("a3");
    assertTrue(!end.contains(web + " ") && !end.contains("web-data") && end.contains("(created as db-data)"), end);
  }
}
