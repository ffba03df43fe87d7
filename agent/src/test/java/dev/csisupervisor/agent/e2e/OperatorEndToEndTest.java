package dev.csisupervisor.agent.e2e;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code csi-agent} as an operator runs it, as real child processes: stop signals exit 0,
 * {@code reload} without a signal, a SIGHUP ignored since start-up is reported, start-up and
 * config errors with their exit codes.
 *
 * <p>Each agent is started through coreutils' {@code env --default-signal} /
 * {@code --ignore-signal}, so the signal dispositions are the ones the test means whatever the
 * build runs under (nohup, a CI runner, a shell's background job).
 */
class OperatorEndToEndTest {
  private static final Duration WAIT = Duration.ofSeconds(60);

  @TempDir Path dir;
  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void killLeftovers() throws InterruptedException {
    AgentProcesses.stop(processes);
  }

  private Path config(String plugins) throws Exception {
    Path f = dir.resolve("agent.yaml");
    Files.writeString(f, "data_dir: " + dir.resolve("data") + "\nmetrics_address: off\n"
        + "shutdown_grace: 2s\n" + plugins + "\n");
    return f;
  }

  private Process agent(String signals, Path config) throws Exception {
    List<String> cmd = new ArrayList<>(List.of("env", signals));
    cmd.addAll(Cli.command("run", "--config", config.toString()));
    Process p = new ProcessBuilder(cmd)
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
        .redirectOutput(dir.resolve("agent.out").toFile())
        .redirectError(dir.resolve("agent.err").toFile())
        .start();
    processes.add(p);
    await().atMost(WAIT).until(() -> Cli.read(dir.resolve("agent.out"))
        .contains("csi-agent running") || !p.isAlive());
    assertTrue(p.isAlive(), Cli.read(dir.resolve("agent.err")));
    return p;
  }

  private String agentLog() {
    return Cli.read(dir.resolve("agent.err"));
  }

  private void signal(Process p, String sig) throws Exception {
    assertEquals(0, new ProcessBuilder("kill", "-" + sig, Long.toString(p.pid())).start()
        .waitFor());
  }

  /** Starts an agent (no plugins) and sends it {@code sig}: it exits, with code 0. */
  private void stopsCleanlyOn(String sig) throws Exception {
    Process p = agent("--default-signal=TERM,INT,HUP", config("plugins: []"));
    signal(p, sig);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), agentLog());
  }

  @Test
  void sigterm_stopsCleanly_exitZero() throws Exception {
    stopsCleanlyOn("TERM");
    assertTrue(agentLog().contains("agent stopped"), agentLog());
  }

  @Test
  void sigint_stopsCleanly_exitZero() throws Exception {
    stopsCleanlyOn("INT");
  }

  @Test
  void sighupIgnoredAtStart_isReported_andReloadCommandStillWorks() throws Exception {
    Path cfg = config("plugins: []");
    Process p = agent("--ignore-signal=HUP", cfg);
    assertTrue(agentLog().contains("SIGHUP is ignored by this process"), agentLog());
    assertTrue(agentLog().contains("use 'csi-agent reload' instead"), agentLog());

    Files.writeString(cfg, Files.readString(cfg).replace("plugins: []",
        "plugins: [{id: ext, type: node, socket: " + dir.resolve("ext.sock") + "}]"));
    Cli.Result r = Cli.run(dir, WAIT, "reload", "--config", cfg.toString());
    assertEquals(0, r.code(), r.toString());
    assertTrue(r.out().contains("reloaded " + cfg + ":"), r.toString());
    assertTrue(r.out().contains("  ext: added"), r.toString());
    Cli.Result same = Cli.run(dir, WAIT, "reload", "--config", cfg.toString());
    assertTrue(same.out().contains("  no plugin changed"), same.toString());

    // An invalid file changes nothing: every problem, exit 2 (the admin socket comes from the
    // flag here, since the file itself is broken).
    Files.writeString(cfg, Files.readString(cfg).replace("type: node", "type: nod, colour: x"));
    Path socket = dir.resolve("data/agent.sock");
    Cli.run(dir, WAIT, "reload", "--admin-socket", socket.toString()).assertExit(2,
        "invalid config, nothing changed: " + cfg + ": 2 problems:",
        "  plugins[0].colour: unknown field",
        "  plugins[0].type: \"nod\" is not a plugin type");
    Cli.Result status = Cli.run(dir, WAIT, "status", "--admin-socket", socket.toString());
    assertTrue(status.out().contains("ext"), "ext is still configured: " + status);
  }

  @Test
  void sighup_reloads_whenNotIgnored() throws Exception {
    Path cfg = config("plugins: []");
    Process p = agent("--default-signal=HUP", cfg);
    assertFalse(agentLog().contains("SIGHUP is ignored"), agentLog());
    Files.writeString(cfg, Files.readString(cfg).replace("plugins: []",
        "plugins: [{id: ext, type: node, socket: " + dir.resolve("ext.sock") + "}]"));
    signal(p, "HUP");
    await().atMost(WAIT).until(() -> agentLog().contains("reload: ext: added"));
    assertTrue(p.isAlive());
  }

  @Test
  void startupError_isPrintedOnce_exitOne() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1,
        java.net.InetAddress.getLoopbackAddress())) {
      Path f = dir.resolve("agent.yaml");
      Files.writeString(f, "data_dir: " + dir.resolve("data") + "\nmetrics_address: 127.0.0.1:"
          + taken.getLocalPort() + "\nplugins: []\n");
      Cli.Result r = Cli.run(dir, WAIT, "run", "--config", f.toString()).assertExit(1,
          "csi-agent: cannot start: ");
      String msg = r.err().substring(r.err().indexOf("csi-agent: cannot start: ") + 25).lines()
          .findFirst().orElseThrow();
      assertEquals(1, occurrences(r.err(), msg), "printed once: " + r);
    }
  }

  @Test
  void dataDirThatIsAFile_exitsTwo() throws Exception {
    Files.writeString(dir.resolve("data"), "not a directory");
    Cli.Result r = Cli.run(dir, WAIT, "run", "--config", config("plugins: []").toString())
        .assertExit(2, "data_dir: " + dir.resolve("data") + " exists and is not a directory");
    assertFalse(r.err().contains("FileAlreadyExistsException"), r.toString());
  }

  @Test
  void readmeExample_reportsEveryProblem_exitTwo() throws Exception {
    Path f = config("""
        plugins:
          - {id: hostpath, type: monolith, command: /bin/true, colour: red}
          - {id: ebs, type: node, socket: /run/csi/ebs/csi.sock}
          - {id: ebs, type: node, command: /bin/true}
        """);
    Cli.run(dir, WAIT, "run", "--config", f.toString()).assertExit(2,
        "csi-agent: invalid config: " + f + ": 2 problems:",
        "  plugins[0].colour: unknown field",
        "  plugins[2].id: duplicate id \"ebs\" (also plugins[1])");
  }

  @Test
  void hugeConfig_exitsTwo() throws Exception {
    Path f = dir.resolve("huge.yaml");
    Files.write(f, new byte[10 * 1024 * 1024]);
    Cli.run(dir, WAIT, "run", "--config", f.toString()).assertExit(2,
        "over the limit of 1048576 bytes");
  }

  @Test
  void launchFailure_isShownInStatusAndJson_andMonolithIsAType() throws Exception {
    Path cfg = config("""
        plugins:
          - id: gone
            type: node
            command: /does/not/exist
            restart: {attempts: 100, interval: 1h, delay: 200ms}
          - id: m
            type: monolith
            command: builtin:mock-plugin
            args: [--type, monolith, --name, "${CSI_PLUGIN_ID}.csi.dev"]
        """);
    agent("--default-signal=TERM,INT,HUP", cfg);
    Path socket = dir.resolve("data/agent.sock");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> {
      Cli.Result st = Cli.run(dir, WAIT, "status", "--admin-socket", socket.toString());
      return st.out().contains("gone: last failure at ");
    });
    Cli.Result st = Cli.run(dir, WAIT, "status", "--admin-socket", socket.toString());
    assertTrue(st.out().contains(": cannot start /does/not/exist: no such file"), st.toString());
    Cli.Result json = Cli.run(dir, WAIT, "status", "--json", "--admin-socket", socket.toString());
    com.fasterxml.jackson.databind.JsonNode tasks = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(json.out()).get("tasks");
    com.fasterxml.jackson.databind.JsonNode gone = tasks.get(0);
    assertEquals("gone", gone.get("id").asText());
    assertTrue(gone.get("last_failure").asText().contains("cannot start /does/not/exist: no"
        + " such file"), json.out());
    assertTrue(gone.has("last_failure_time"), json.out());
    assertEquals("", gone.get("log_file").asText(), "no log file was ever written: " + json);

    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> Cli.run(dir, WAIT,
        "plugin", "monolith", "m", "--admin-socket", socket.toString()).code() == 0);
    Cli.Result m = Cli.run(dir, WAIT, "plugin", "monolith", "m", "--admin-socket",
        socket.toString());
    assertTrue(m.out().contains("controller") && m.out().contains("node")
        && m.out().contains("m.csi.dev"), "both registrations, name interpolated: " + m);
    Cli.Result mj = Cli.run(dir, WAIT, "plugin", "monolith", "m", "--json", "--admin-socket",
        socket.toString());
    assertTrue(mj.out().contains("\"type\" : \"controller\"")
        && mj.out().contains("\"type\" : \"node\"") && !mj.out().contains("CSI_"),
        mj.toString());
    Cli.run(dir, WAIT, "plugin", "block", "m", "--admin-socket", socket.toString())
        .assertExit(2, "use controller, node or monolith");
  }

  @Test
  void afterAKill_oldProcessesStopInParallel_andAMonolithNowANodeLosesItsControllerEntryAtOnce()
      throws Exception {
    String stubborn = "command: /bin/sh, health_timeout: 0s, args: [-c, \"trap '' TERM; while :;"
        + " do sleep 1; done\"]";
    Path cfg = config("""
        plugins:
          - {id: s1, type: node, %s}
          - {id: s2, type: node, %s}
          - {id: m, type: monolith, command: builtin:mock-plugin, args: [--type, monolith]}
        """.formatted(stubborn, stubborn));
    Files.writeString(cfg, Files.readString(cfg).replace("shutdown_grace: 2s",
        "shutdown_grace: 3s"));
    Process first = agent("--default-signal=TERM,INT,HUP", cfg);
    Path socket = dir.resolve("data/agent.sock");
    await().atMost(WAIT).pollInterval(Duration.ofMillis(200)).until(() -> {
      Cli.Result l = Cli.run(dir, WAIT, "plugins", "--admin-socket", socket.toString());
      return l.out().contains("controller  m") && l.out().contains("node        m");
    });
    first.destroyForcibly();
    assertTrue(first.waitFor(30, TimeUnit.SECONDS));

    // s1 and s2 are gone from the config, m is now a node plugin.
    Files.writeString(cfg, Files.readString(cfg).replaceAll("(?m)^  - \\{id: s[12],.*\n", "")
        .replace("type: monolith", "type: node"));
    Files.move(dir.resolve("agent.err"), dir.resolve("agent1.err"));
    Files.move(dir.resolve("agent.out"), dir.resolve("agent1.out"));
    agent("--default-signal=TERM,INT,HUP", cfg);
    String log = agentLog();
    // Both ignore SIGTERM: each takes the 3 s grace, together, not one after the other.
    List<java.time.Instant> stops = log.lines()
        .filter(l -> l.contains("is no longer configured: stopping its process pid"))
        .map(l -> java.time.OffsetDateTime.parse(l.substring(0, l.indexOf(' '))).toInstant())
        .toList();
    assertEquals(2, stops.size(), log);
    // Both were signalled before either's grace ran out: stopped together, not one after the
    // other (one after the other, the second stop comes only after the first one's SIGKILL).
    List<java.time.Instant> kills = log.lines()
        .filter(l -> l.contains("after SIGTERM: sending SIGKILL"))
        .map(l -> java.time.OffsetDateTime.parse(l.substring(0, l.indexOf(' '))).toInstant())
        .toList();
    assertEquals(2, kills.size(), log);
    assertTrue(stops.get(1).isBefore(kills.get(0)), "both stopped at once:\n" + log);
    // The restored controller entry of m is gone at start-up, not after the restore grace.
    assertTrue(log.contains("plugin=m: dropped its restored controller registration: it is now a"
        + " node plugin"), log);
    Cli.Result controllers = Cli.run(dir, WAIT, "plugins", "--type", "controller",
        "--admin-socket", socket.toString());
    assertTrue(controllers.out().contains("(no plugins registered)"), controllers.toString());
  }

  @Test
  void adminSocketInADirectoryTheUserMayNotSearch_saysPermissionDenied() throws Exception {
    Path locked = dir.resolve("locked");
    Files.createDirectories(locked);
    Files.createFile(locked.resolve("agent.sock"));
    List<String> cmd = new ArrayList<>();
    boolean root = "root".equals(System.getProperty("user.name"));
    if (root) {
      // Root passes every permission check through two capabilities: run the CLI without them,
      // on a directory of another user.
      assertEquals(0, new ProcessBuilder("chown", "65534:65534", locked.toString()).start()
          .waitFor());
      cmd.addAll(List.of("setpriv", "--bounding-set=-dac_override,-dac_read_search"));
    }
    Files.setPosixFilePermissions(locked,
        java.nio.file.attribute.PosixFilePermissions.fromString(root ? "rwx------" : "---------"));
    try {
      cmd.addAll(Cli.command("status", "--admin-socket", locked.resolve("agent.sock").toString()));
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
      String out = new String(p.getInputStream().readAllBytes(),
          java.nio.charset.StandardCharsets.UTF_8);
      assertTrue(p.waitFor(60, TimeUnit.SECONDS));
      assertEquals(1, p.exitValue(), out);
      assertTrue(out.contains("cannot reach the agent at " + locked.resolve("agent.sock")
          + ": permission denied"), out);
      assertFalse(out.contains("no agent is running"), out);
    } finally {
      Files.setPosixFilePermissions(locked,
          java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }
  }

  private static int occurrences(String s, String what) {
    int n = 0;
    for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) {
      n++;
    }
    return n;
  }
}
