package dev.csisupervisor.agent.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.testing.EtcdProcess;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The controller agent's checks in a real agent (a child JVM, {@code cluster.controller_check_interval: 1s}) on a real
 * etcd, its mock plugin on a shared cloud: a disk the cloud marks abnormal shows in {@code cluster volume status} in
 * the mock's words, and recovers; {@code cluster volume capacity} shows what GetCapacity answered.
 */
@Timeout(180)
class ClusterVolumeChecksEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String PREFIX = "/e2e-checks";

  @TempDir Path dir;
  private final List<Process> agents = new ArrayList<>();
  private EtcdProcess etcd;

  @AfterEach
  void cleanUp() throws Exception {
    AgentProcesses.stop(agents);
    if (etcd != null) {
      etcd.close();
    }
  }

  private Cli.Result cli(String... args) throws Exception {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--config", dir.resolve("a1.yaml").toString()));
    return Cli.run(dir, WAIT, all.toArray(String[]::new));
  }

  /** {@code csi-mock-plugin cloud-...} on the agents' cloud file, as an operator runs it. */
  private void cloud(String command, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        "dev.csisupervisor.mockplugin.MockCsiPlugin", command, dir.resolve("cloud").toString()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    assertTrue(p.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS), command + " finished");
    assertEquals(0, p.exitValue(), new String(p.getInputStream().readAllBytes()));
  }

  @Test
  void anAbnormalDisk_showsInStatusInThePluginsWords_andRecovers_andCapacityIsShown() throws Exception {
    etcd = EtcdProcess.start(dir);
    CloudAgents.configWith(dir, etcd.endpoint(), PREFIX, "a1", "monolith", "  controller_check_interval: 1s\n",
        "--all-capabilities");
    agents.add(Cli.start(dir, "a1", "run", "--config", dir.resolve("a1.yaml").toString()));
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200))
        .until(() -> cli("cluster", "volume", "status").out().contains("controller agents: {ebs=a1}"));
    Cli.Result created = cli("cluster", "volume", "create", "ebs", "web-data", "--size", "1MiB");
    assertEquals(0, created.code(), created.toString());
    Matcher m = Pattern.compile("created volume (\\S+) ").matcher(created.out());
    assertTrue(m.find(), created.toString());
    String vol = m.group(1);

    cloud("cloud-mark-abnormal", vol, "disk is read-only: I/O errors");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> cli("cluster", "volume", "status").out()
        .contains("ebs/" + vol + " [SINGLE_NODE_WRITER] (created as web-data) ABNORMAL since "));
    assertTrue(cli("cluster", "volume", "status").out().contains(": disk is read-only: I/O errors"));
    cloud("cloud-mark-abnormal", vol, "");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200))
        .until(() -> !cli("cluster", "volume", "status").out().contains("ABNORMAL"));

    Cli.Result capacity = cli("cluster", "volume", "capacity", "ebs", "--json");
    assertEquals(0, capacity.code(), capacity.toString());
    assertTrue(capacity.out().contains("\"segment\" : \"-\""), capacity.toString());
    assertTrue(capacity.out().contains("\"available_bytes\""), capacity.toString());
  }
}
