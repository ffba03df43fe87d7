package dev.csisupervisor.agent.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.testing.ShortTempDir;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code csi-agent volume ...} against a real agent process running a monolith mock plugin: the
 * single-node lifecycle (create, mount, list, stats, unmount, delete) as an operator types it,
 * bad input and an access conflict answered before any call, and the secret given in a file never
 * on the command line, in the agent's state or in any log.
 */
class VolumeEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final String SECRET = "e2e-secret-value-31337";

  private ShortTempDir tmp;
  private Path dir;
  private String socket;
  private final List<Process> processes = new ArrayList<>();

  @BeforeEach
  void startAgent() throws Exception {
    tmp = new ShortTempDir("ve");
    dir = tmp.path();
    socket = dir.resolve("data/agent.sock").toString();
    Path config = dir.resolve("agent.yaml");
    Files.writeString(config, "data_dir: " + dir.resolve("data") + "\nmetrics_address: off\nshutdown_grace: 2s\n"
        + "volumes: {verify_mounts: false}\n" // the mock plugin mounts nothing
        + "defaults: {probe_interval: 200ms}\nplugins:\n"
        + "  - {id: disk, type: monolith, command: builtin:mock-plugin, args: [--type, monolith, --all-capabilities]}\n");
    Process p = new ProcessBuilder(Cli.command("run", "--config", config.toString()))
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
        .redirectOutput(dir.resolve("agent.out").toFile())
        .redirectError(dir.resolve("agent.err").toFile())
        .start();
    processes.add(p);
    await().atMost(WAIT).until(() -> Cli.run(dir, WAIT, "plugins", "--json", "--admin-socket", socket).out()
        .contains("\"healthy\" : true") || !p.isAlive());
    assertTrue(p.isAlive(), Cli.read(dir.resolve("agent.err")));
  }

  @AfterEach
  void stop() throws Exception {
    AgentProcesses.stop(processes);
    tmp.close();
  }

  private Cli.Result cli(String... args) throws Exception {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--admin-socket", socket));
    return Cli.run(dir, WAIT, all.toArray(String[]::new));
  }

  @Test
  void createMountListStatsUnmountDelete_asAnOperatorTypesIt() throws Exception {
    Path secrets = dir.resolve("secrets");
    Files.writeString(secrets, "# for the plugin\ntoken=" + SECRET + "\n");
    Files.setPosixFilePermissions(secrets, PosixFilePermissions.fromString("rw-------"));

    JsonNode created = new ObjectMapper().readTree(cli("volume", "create", "--plugin", "disk", "--name", "data",
        "--size", "64MiB", "--json").assertExit(0).out());
    String volume = created.get("volume_id").asText();
    assertEquals(64L << 20, created.get("capacity_bytes").asLong());

    Cli.Result mount = cli("volume", "mount", "--plugin", "disk", "--volume", volume, "--alloc", "web-1",
        "--fs-type", "ext4", "--secrets-file", secrets.toString()).assertExit(0);
    Path target = Path.of(mount.out().strip());
    assertTrue(target.endsWith("per-alloc/web-1/" + dev.csisupervisor.volumes.VolumeRecord.directoryName(volume)
        + "/mount-single-node-writer-rw"), mount.out());
    assertTrue(Files.isDirectory(target), "the plugin made the target");

    JsonNode list = new ObjectMapper().readTree(cli("volume", "list", "--json").assertExit(0).out());
    JsonNode usage = list.get("volumes").get(0).get("usages").get(0);
    assertEquals("STAGED", usage.get("stage").asText());
    assertEquals("PUBLISHED", usage.get("allocs").get(0).get("phase").asText());
    assertTrue(cli("volume", "list").out().contains("web-1"));
    assertTrue(cli("volume", "stats", "--plugin", "disk", "--volume", volume).assertExit(0).out()
        .contains("condition: normal"));

    cli("volume", "mount", "--plugin", "disk", "--volume", volume, "--alloc", "web-2").assertExit(1,
        "FAILED_PRECONDITION", "held by alloc web-1");
    cli("volume", "delete", "--plugin", "disk", "--volume", volume).assertExit(1, "in use on this node");

    cli("volume", "unmount", "--plugin", "disk", "--volume", volume, "--alloc", "web-1").assertExit(0);
    assertFalse(Files.exists(target));
    cli("volume", "delete", "--plugin", "disk", "--volume", volume).assertExit(0);
    assertTrue(cli("volume", "list").out().contains("no volumes on this node"));

    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.filter(Files::isRegularFile).filter(f -> !f.equals(secrets)).toList()) {
        assertFalse(Files.readString(f, java.nio.charset.StandardCharsets.ISO_8859_1).contains(SECRET),
            "the secret is in " + f);
      }
    }
  }

  @Test
  void badInput_isRefusedNamingTheField_andSecretsComeOnlyFromAFile() throws Exception {
    cli("volume", "mount", "--plugin", "disk", "--volume", "v", "--alloc", "../etc").assertExit(1,
        "INVALID_ARGUMENT", "allocId must not contain '/'");
    // A volume id is whatever CSI allows ('/' included: it never becomes a path); this one does not exist.
    cli("volume", "mount", "--plugin", "disk", "--volume", "../etc", "--alloc", "a").assertExit(1,
        "NOT_FOUND", "volume '../etc' does not exist");
    cli("volume", "mount", "--plugin", "disk", "--volume", "v", "--alloc", "a", "--access-mode", "sometimes")
        .assertExit(1, "INVALID_ARGUMENT", "access_mode");
    cli("volume", "mount", "--plugin", "disk", "--volume", "v", "--alloc", "a", "--secret", "x=y").assertExit(2,
        "--secret");
    Path loose = dir.resolve("loose");
    Files.writeString(loose, "no equals sign " + SECRET + "\n");
    Cli.Result bad = cli("volume", "mount", "--plugin", "disk", "--volume", "v", "--alloc", "a", "--secrets-file",
        loose.toString()).assertExit(2, "line 1: expected key=value");
    assertFalse(bad.err().contains(SECRET), "a malformed line is not shown: " + bad);
    cli("volume", "create", "--plugin", "disk", "--name", "x", "--size", "lots").assertExit(2, "is not a size");
    cli("volume", "stats", "--plugin", "disk", "--volume", "nothing").assertExit(1, "NOT_FOUND", "not mounted");
  }
}
