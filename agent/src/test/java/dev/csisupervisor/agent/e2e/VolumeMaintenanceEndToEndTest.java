package dev.csisupervisor.agent.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.testing.ShortTempDir;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What an operator does when a volume's plugin or allocation is gone, against a real agent process: a forced
 * unmount of a node plugin that was stopped for good, the release of every volume of an allocation, and the
 * orphan mounts of {@code volume gc} (a real bind mount, as root only).
 */
class VolumeMaintenanceEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  private ShortTempDir tmp;
  private Path dir;
  private Path config;
  private String socket;
  private final List<Process> processes = new ArrayList<>();
  private final List<Path> mounted = new ArrayList<>();

  @BeforeEach
  void setUp() throws Exception {
    tmp = new ShortTempDir("vm");
    dir = tmp.path();
    config = dir.resolve("agent.yaml");
    socket = dir.resolve("data/agent.sock").toString();
  }

  @AfterEach
  void tearDown() throws Exception {
    AgentProcesses.stop(processes);
    for (Path m : mounted) {
      if (mountInfo().contains(" " + m + " ")) {
        new ProcessBuilder("umount", "-l", m.toString()).inheritIO().start().waitFor(30, TimeUnit.SECONDS);
      }
    }
    tmp.close();
  }

  /** Writes the agent's config: {@code verify_mounts} as given (the mock plugin mounts nothing), and plugins. */
  private void writeConfig(boolean verifyMounts, String plugins) throws Exception {
    Files.writeString(config, "data_dir: " + dir.resolve("data") + "\nmetrics_address: off\nshutdown_grace: 2s\n"
        + "volumes: {verify_mounts: " + verifyMounts + "}\n"
        + "defaults: {probe_interval: 200ms}\nplugins:" + (plugins.isEmpty() ? " []\n" : "\n" + plugins));
  }

  private static String mockPlugin(String id, String type, String stateFile) {
    return "  - {id: " + id + ", type: " + type + ", command: builtin:mock-plugin, args: [--type, " + type
        + ", --all-capabilities, --state-file, \"" + stateFile + "\"]}\n";
  }

  private void startAgent() throws Exception {
    Process p = Cli.start(dir, "agent", "run", "--config", config.toString());
    processes.add(p);
    await().atMost(WAIT).until(() -> cli("status").code() == 0 || !p.isAlive());
    assertTrue(p.isAlive(), Cli.read(dir.resolve("agent.err")));
  }

  private Cli.Result cli(String... args) throws Exception {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--admin-socket", socket));
    return Cli.run(dir, WAIT, all.toArray(String[]::new));
  }

  private String createVolume(String plugin, String name) throws Exception {
    return new ObjectMapper().readTree(cli("volume", "create", "--plugin", plugin, "--name", name, "--json")
        .assertExit(0).out()).get("volume_id").asText();
  }

  @Test
  void forcedUnmount_ofANodePluginStoppedForGood_completes() throws Exception {
    // The volume is made by a monolith; a node-only plugin on the same driver state mounts it (no controller
    // publication to undo), and is then taken out of the config: stopped, deregistered.
    String state = dir.resolve("driver-state").toString();
    writeConfig(false, mockPlugin("maker", "monolith", state));
    startAgent();
    String volume = createVolume("maker", "data");
    writeConfig(false, mockPlugin("disk", "node", state));
    cli("reload").assertExit(0);
    cli("volume", "mount", "--plugin", "disk", "--volume", volume, "--alloc", "web-1").assertExit(0);
    writeConfig(false, "");
    cli("reload").assertExit(0);
    await().atMost(WAIT).until(() -> !cli("plugins").out().contains("disk"));

    Cli.Result r = cli("volume", "unmount", "--plugin", "disk", "--volume", volume, "--alloc", "web-1", "--force");

    r.assertExit(0);
    assertEquals("unmounted " + volume + " from web-1\n", r.out());
    assertTrue(cli("volume", "list").out().contains("no volumes on this node"));
    assertTrue(Cli.read(dir.resolve("agent.err")).contains("is FORCED"), "the agent did the node side itself");
  }

  @Test
  void release_unmountsEveryVolumeOfTheAlloc() throws Exception {
    writeConfig(false, mockPlugin("disk", "monolith", dir.resolve("driver-state").toString()));
    startAgent();
    String v1 = createVolume("disk", "one");
    String v2 = createVolume("disk", "two");
    cli("volume", "mount", "--plugin", "disk", "--volume", v1, "--alloc", "web-1").assertExit(0);
    cli("volume", "mount", "--plugin", "disk", "--volume", v2, "--alloc", "web-1").assertExit(0);

    Cli.Result r = cli("volume", "release", "--alloc", "web-1");

    r.assertExit(0);
    List<String> names = new ArrayList<>(List.of("disk/" + v1, "disk/" + v2));
    names.sort(null);
    assertEquals("released alloc web-1: unmounted " + String.join(", ", names) + "\n", r.out());
    assertTrue(cli("volume", "list").out().contains("no volumes on this node"));
    assertEquals("alloc web-1 holds no volume on this node\n",
        cli("volume", "release", "--alloc", "web-1").assertExit(0).out());
  }

  @Test
  void gc_withoutOrphans_printsNone() throws Exception {
    writeConfig(true, "");
    startAgent();

    Cli.Result r = cli("volume", "gc");

    r.assertExit(0);
    assertTrue(r.out().startsWith("no orphan mounts"), r.toString());
  }

  @Test
  void gc_findsABindMountNoRecordNames_andWithYesUnmountsIt() throws Exception {
    int uid = (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    Assumptions.assumeTrue(uid == 0, "needs root (uid 0, this is uid " + uid + "): the test bind-mounts a"
        + " directory under the agent's CSI root");
    Path source = Files.createDirectories(dir.resolve("source"));
    Files.writeString(source.resolve("left-behind"), "x");
    Path orphan = Files.createDirectories(dir.resolve("data/csi/node/disk/per-alloc/zz/v/mount-single-node-writer-rw"));
    mounted.add(orphan);
    Process bind = new ProcessBuilder("mount", "--bind", source.toString(), orphan.toString())
        .redirectErrorStream(true).start();
    String said = new String(bind.getInputStream().readAllBytes());
    assertTrue(bind.waitFor(30, TimeUnit.SECONDS) && bind.exitValue() == 0, "mount --bind: " + said);
    writeConfig(true, "");
    startAgent();

    Cli.Result listed = cli("volume", "gc");

    listed.assertExit(0);
    assertTrue(listed.out().contains("  " + orphan + "\n"), listed.toString());
    assertTrue(listed.out().contains("csi-agent volume gc --yes"), listed.toString());
    assertTrue(mountInfo().contains(" " + orphan + " "), "without --yes nothing is unmounted");

    Cli.Result removed = cli("volume", "gc", "--yes");

    removed.assertExit(0);
    assertEquals("unmounted " + orphan + "\n", removed.out());
    assertFalse(mountInfo().contains(" " + orphan + " "), "no longer in /proc/self/mountinfo");
    assertTrue(Files.exists(source.resolve("left-behind")), "the mounted directory itself is untouched");
    assertTrue(cli("volume", "gc").out().startsWith("no orphan mounts"));
  }

  private static String mountInfo() throws Exception {
    return Files.readString(Path.of("/proc/self/mountinfo"));
  }
}
