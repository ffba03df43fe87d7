package dev.csisupervisor.dist;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The package as an operator gets it: {@code dpkg -i} of the .deb this build made (as root; skipped with the
 * reason where the build is not root or has no dpkg), then the installed {@code /usr/bin/csi-agent} against a
 * config, the unit checked by {@code systemd-analyze verify}, and the tarball unpacked and run. The package is
 * purged afterwards.
 */
class PackageInstallTest {
  private static final Path TARGET = Path.of("target");
  private static final Path CLI = Path.of("/usr/bin/csi-agent");
  private static final Path UNIT = Path.of("/lib/systemd/system/csi-agent.service");

  @TempDir Path tmp;

  record Result(int code, String out) {}

  static Result run(Map<String, String> env, String... command) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
    pb.environment().putAll(env);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(5, TimeUnit.MINUTES), String.join(" ", command) + " did not end");
    return new Result(p.exitValue(), out);
  }

  static Result run(String... command) throws IOException, InterruptedException {
    return run(Map.of(), command);
  }

  static Path built(String glob) throws IOException {
    try (Stream<Path> files = Files.list(TARGET)) {
      return files.filter(f -> f.getFileSystem().getPathMatcher("glob:" + glob).matches(f.getFileName()))
          .findFirst().orElseThrow(() -> new AssertionError("the build made no " + glob + " in " + TARGET));
    }
  }

  @BeforeAll
  static void install() throws Exception {
    assumeTrue("root".equals(System.getProperty("user.name")), "installing a package needs root");
    assumeTrue(Files.isExecutable(Path.of("/usr/bin/dpkg")), "no dpkg on this machine");
    Result provided = run("dpkg-query", "-W", "-f=${Provides}\n");
    assumeTrue(provided.out().contains("java17-runtime-headless"),
        "no installed Debian package provides java17-runtime-headless, which the package depends on");
    Path deb = built("csi-agent_*_all.deb");
    Result r = run("dpkg", "-i", deb.toAbsolutePath().toString());
    assertEquals(0, r.code(), "dpkg -i " + deb + ":\n" + r.out());
  }

  @AfterAll
  static void purge() throws Exception {
    if ("root".equals(System.getProperty("user.name")) && Files.exists(CLI)) {
      Result r = run("dpkg", "--purge", "csi-agent");
      assertEquals(0, r.code(), "dpkg --purge csi-agent:\n" + r.out());
    }
  }

  @Test
  void installsTheLauncherJarConfigAndUnit_andMakesTheClassDataArchives() throws Exception {
    assertTrue(Files.isExecutable(CLI));
    assertTrue(Files.isRegularFile(Path.of("/usr/share/csi-agent/csi-agent.jar")));
    assertTrue(Files.isRegularFile(Path.of("/etc/csi-agent/agent.yaml")));
    assertTrue(Files.isRegularFile(UNIT));
    // The alert rules, their tests and the dashboard, for Prometheus and Grafana (README "Monitoring").
    for (String f : List.of("alerts.yaml", "alerts_test.yaml", "csi-agent-dashboard.json")) {
      assertTrue(Files.isRegularFile(Path.of("/usr/share/csi-agent/monitoring", f)), f);
    }
    // postinst made them with this machine's JVM.
    assertTrue(Files.size(Path.of("/var/cache/csi-agent/cli.jsa")) > 0);
    assertTrue(Files.size(Path.of("/var/cache/csi-agent/run.jsa")) > 0);
    Result help = run(CLI.toString(), "--help");
    assertEquals(0, help.code(), help.out());
    assertTrue(help.out().startsWith("Usage: csi-agent"), help.out());
    Result version = run(CLI.toString(), "--version");
    assertTrue(version.out().startsWith("csi-agent "), version.out());
    // The shipped config is valid as it is: the unit starts from it.
    Result check = run(CLI.toString(), "status", "--config", "/etc/csi-agent/agent.yaml");
    assertTrue(check.out().contains("no agent is running at /var/lib/csi-agent/agent.sock"), check.out());
    // Without flags, the installed CLI asks the agent of the installed config.
    Result plain = run(CLI.toString(), "status");
    assertTrue(plain.out().contains("no agent is running at /var/lib/csi-agent/agent.sock"), plain.out());
  }

  @Test
  void theUnit_passesSystemdAnalyzeVerify_andLetsPluginsOutliveTheAgent() throws Exception {
    String unit = Files.readString(UNIT);
    assertTrue(unit.contains("\nKillMode=process\n"), "plugins must survive an agent restart:\n" + unit);
    assertTrue(unit.contains("\nExecReload=/usr/bin/csi-agent reload --config /etc/csi-agent/agent.yaml\n"), unit);
    assertTrue(unit.contains("\nExecStart=/usr/bin/csi-agent run --config /etc/csi-agent/agent.yaml\n"), unit);
    assumeTrue(Files.isExecutable(Path.of("/usr/bin/systemd-analyze")), "no systemd-analyze on this machine");
    Result verify = run("systemd-analyze", "verify", UNIT.toString());
    assertEquals(0, verify.code(), verify.out());
    assertEquals("", verify.out().strip(), "systemd-analyze verify warns");
  }

  @Test
  void installedCli_runsAnAgent_talksToIt_reloadsIt_andStopsItWithExitZero() throws Exception {
    Path data = tmp.resolve("data");
    Path config = tmp.resolve("agent.yaml");
    Files.writeString(config, String.join("\n",
        "data_dir: " + data,
        "metrics_address: \"off\"",
        "plugins:",
        "  - id: mock",
        "    type: node",
        "    command: builtin:mock-plugin",
        ""));
    Process agent = new ProcessBuilder(CLI.toString(), "run", "--config", config.toString())
        .redirectErrorStream(true).redirectOutput(tmp.resolve("agent.log").toFile()).start();
    try {
      String socket = "--admin-socket=" + data.resolve("agent.sock");
      await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> {
        Result plugins = run(CLI.toString(), "plugins", socket);
        return plugins.code() == 0 && plugins.out().contains("mock") && plugins.out().contains("healthy");
      });
      Result status = run(CLI.toString(), "status", "--json", socket);
      assertEquals(0, status.code(), status.out());
      Files.writeString(config, Files.readString(config).replace("id: mock", "id: mock2"));
      Result reload = run(CLI.toString(), "reload", "--config", config.toString());
      assertEquals(0, reload.code(), reload.out());
      await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500))
          .until(() -> run(CLI.toString(), "plugins", socket).out().contains("mock2"));
      agent.destroy(); // SIGTERM, as systemctl stop sends
      assertTrue(agent.waitFor(90, TimeUnit.SECONDS), "the agent did not stop");
      assertEquals(0, agent.exitValue(), Files.readString(tmp.resolve("agent.log")));
    } finally {
      agent.destroyForcibly();
    }
  }

  @Test
  void tarball_unpacksAndRuns_findingItsJarBesideItsLauncher() throws Exception {
    Path tarball = built("csi-agent-*.tar.gz");
    Result untar = run("tar", "-xzf", tarball.toAbsolutePath().toString(), "-C", tmp.toString());
    assertEquals(0, untar.code(), untar.out());
    List<Path> roots = new ArrayList<>();
    try (Stream<Path> s = Files.list(tmp)) {
      s.forEach(roots::add);
    }
    assertEquals(1, roots.size(), roots.toString());
    Path root = roots.get(0);
    for (String f : List.of("bin/csi-agent", "lib/csi-agent.jar", "etc/agent.yaml", "systemd/csi-agent.service",
        "monitoring/alerts.yaml", "monitoring/alerts_test.yaml", "monitoring/csi-agent-dashboard.json")) {
      assertTrue(Files.exists(root.resolve(f)), f);
    }
    Result version = run(Map.of("CSI_AGENT_CDS", "off"), root.resolve("bin/csi-agent").toString(), "--version");
    assertEquals(0, version.code(), version.out());
    assertTrue(version.out().startsWith("csi-agent "), version.out());
  }
}
