package dev.csisupervisor.agent.demo;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.ProcessRecord;
import dev.csisupervisor.tasks.process.ProcessRecords;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A demo step that fails half-way leaves nothing running: the plugin processes an agent killed with SIGKILL
 * left behind (named in its data dir's processes.json) are killed, and only when they are still the same
 * process.
 */
class ChildAgentsTest {
  @TempDir Path dir;
  private LaunchedProcess orphan;
  private LaunchedProcess stranger;

  @AfterEach
  void killLeftovers() {
    for (LaunchedProcess p : new LaunchedProcess[] {orphan, stranger}) {
      if (p != null) {
        ProcessHandle.of(p.pid()).ifPresent(ProcessHandle::destroyForcibly);
      }
    }
  }

  @Test
  void destroyAll_killsThePluginsAKilledAgentLeft_butNotAProcessThatTookARecordedPid() throws Exception {
    Path data = dir.resolve("data");
    orphan = LaunchedProcess.launch(List.of("sleep", "600"), Map.of(), dir.resolve("orphan.log"));
    stranger = LaunchedProcess.launch(List.of("sleep", "601"), Map.of(), dir.resolve("stranger.log"));
    ProcessRecords records = ProcessRecords.open(data.resolve(AgentConfig.PROCESSES_FILE), Clock.systemUTC());
    records.put(orphan.record("disk", data.resolve("disk.sock")));
    ProcessRecord real = stranger.record("other", data.resolve("other.sock"));
    // The stranger's pid as if recorded for an earlier process: another start time.
    records.put(new ProcessRecord("other", real.pid(), real.startMillis() - 60_000, real.commandLine(), real.socket()));

    new ChildAgents(dir).destroyAll();

    await().atMost(Duration.ofSeconds(30)).until(() -> !orphan.isAlive());
    assertTrue(stranger.isAlive(), "a process that is not the recorded one is left alone");
  }
}
