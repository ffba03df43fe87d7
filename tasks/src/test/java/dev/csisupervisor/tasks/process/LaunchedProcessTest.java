package dev.csisupervisor.tasks.process;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Real child processes ({@code /bin/sh}): launch, output, exit codes, grace, re-attach. */
class LaunchedProcessTest {
  @TempDir Path dir;
  private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor();
  private LaunchedProcess running;

  @AfterEach
  void tearDown() throws Exception {
    if (running != null && running.isAlive()) {
      ProcessHandle.of(running.pid()).ifPresent(ProcessHandle::destroyForcibly);
    }
    scheduler.shutdownNow();
  }

  private LaunchedProcess sh(String script, Map<String, String> env) throws IOException {
    running = LaunchedProcess.launch(List.of("/bin/sh", "-c", script), env,
        dir.resolve("logs/p.log"));
    return running;
  }

  @Test
  void launch_writesOutputAndEnvToLog_andReportsExitCode() throws Exception {
    LaunchedProcess p = sh("echo out-$GREETING; echo err >&2; exit 7", Map.of("GREETING", "hi"));
    assertEquals(7, p.onExit().get(10, TimeUnit.SECONDS));
    String log = Files.readString(dir.resolve("logs/p.log"));
    assertTrue(log.contains("csi-agent"), "a header line per start: " + log);
    assertTrue(log.contains("out-hi"), log);
    assertTrue(log.contains("err"), log);
  }

  @Test
  void launch_appendsAcrossStarts() throws Exception {
    sh("echo first", Map.of()).onExit().get(10, TimeUnit.SECONDS);
    sh("echo second", Map.of()).onExit().get(10, TimeUnit.SECONDS);
    String log = Files.readString(dir.resolve("logs/p.log"));
    assertTrue(log.indexOf("first") < log.indexOf("second"), log);
  }

  @Test
  void missingCommand_failsNamingIt() {
    IOException e = assertThrows(IOException.class, () -> LaunchedProcess.launch(
        List.of("/no/such/plugin"), Map.of(), dir.resolve("p.log")));
    assertTrue(e.getMessage().contains("/no/such/plugin"), e.getMessage());
  }

  @Test
  void terminate_stopsWithSigterm() throws Exception {
    LaunchedProcess p = sh("trap 'exit 0' TERM; echo ready; while true; do sleep 0.1; done",
        Map.of());
    assertTrue(p.isAlive());
    // Only once the trap is installed: a SIGTERM before that kills the shell with 143.
    await().atMost(Duration.ofSeconds(10)).until(() ->
        Files.readString(dir.resolve("logs/p.log")).contains("ready"));
    int code = p.terminate(Duration.ofSeconds(10), scheduler).get(10, TimeUnit.SECONDS);
    assertEquals(0, code, "exited by its own TERM trap, not killed");
    assertFalse(p.isAlive());
  }

  @Test
  void terminate_killsAfterGrace_whenSigtermIsIgnored() throws Exception {
    LaunchedProcess p = sh("trap '' TERM; echo ready; while true; do sleep 0.1; done",
        Map.of());
    await().atMost(Duration.ofSeconds(10)).until(() ->
        Files.readString(dir.resolve("logs/p.log")).contains("ready"));
    long start = System.nanoTime();
    int code = p.terminate(Duration.ofMillis(300), scheduler).get(10, TimeUnit.SECONDS);
    assertEquals(137, code, "SIGKILL");
    assertTrue(System.nanoTime() - start >= Duration.ofMillis(300).toNanos());
  }

  @Test
  void reattach_findsLiveProcess_andSeesItsExit() throws Exception {
    LaunchedProcess p = sh("sleep 30", Map.of());
    ProcessRecord rec = p.record("p", dir.resolve("csi.sock"));
    Optional<LaunchedProcess> again = LaunchedProcess.reattach(rec);
    assertTrue(again.isPresent());
    assertTrue(again.get().reattached());
    assertEquals(p.pid(), again.get().pid());
    assertEquals(-1, again.get().terminate(Duration.ofSeconds(5), scheduler)
        .get(10, TimeUnit.SECONDS), "a re-attached process has no exit code");
  }

  @Test
  void reattach_refusesReusedPid() throws Exception {
    LaunchedProcess p = sh("sleep 30", Map.of());
    ProcessRecord rec = p.record("p", dir.resolve("csi.sock"));
    ProcessRecord otherStart = new ProcessRecord("p", rec.pid(), rec.startMillis() - 60_000,
        rec.commandLine(), rec.socket());
    assertTrue(LaunchedProcess.reattach(otherStart).isEmpty());
  }

  @Test
  void reattach_withUnknownStartTime_comparesTheCommandLine_andRefusesWhenItDiffers()
      throws Exception {
    // Two commands: the shell stays (a single one it would exec).
    LaunchedProcess p = sh("echo ready; sleep 30; true", Map.of());
    // Only once the shell runs: read right after the fork, /proc/PID/cmdline is still the JVM's (this flaked under
    // load); an agent re-attaching after a restart never sees a process that young.
    await().atMost(Duration.ofSeconds(10)).until(() ->
        Files.readString(dir.resolve("logs/p.log")).contains("ready"));
    ProcessRecord rec = p.record("p", dir.resolve("csi.sock"));
    ProcessRecord unknownStart = new ProcessRecord("p", rec.pid(), -1, rec.commandLine(),
        rec.socket());
    assertTrue(LaunchedProcess.reattach(unknownStart).isPresent(), "same command line");
    ProcessRecord other = new ProcessRecord("p", rec.pid(), -1,
        List.of("/usr/bin/hostpath", "--endpoint=x"), rec.socket());
    assertTrue(LaunchedProcess.reattach(other).isEmpty(), "another program: never adopted");
    assertTrue(p.isAlive(), "and not signalled");
  }

  @Test
  void runs_matchesTheLaunchedProgramAndArguments() {
    assertTrue(LaunchedProcess.runs(List.of("/bin/sh", "/opt/p.sh", "--a"),
        List.of("/opt/p.sh", "--a")), "a script under its interpreter");
    assertTrue(LaunchedProcess.runs(List.of("/usr/bin/p", "--a"), List.of("/usr/bin/p", "--a")));
    assertFalse(LaunchedProcess.runs(List.of("/usr/bin/p", "--b"), List.of("/usr/bin/p", "--a")));
    assertFalse(LaunchedProcess.runs(List.of("/usr/bin/q", "--a"), List.of("/usr/bin/p", "--a")));
    assertFalse(LaunchedProcess.runs(List.of("--a"), List.of("/usr/bin/p", "--a")));
  }

  @Test
  void reattach_ofDeadProcess_isEmpty() throws Exception {
    LaunchedProcess p = sh("exit 0", Map.of());
    ProcessRecord rec = p.record("p", dir.resolve("csi.sock"));
    p.onExit().get(10, TimeUnit.SECONDS);
    assertTrue(LaunchedProcess.reattach(rec).isEmpty());
  }
}
