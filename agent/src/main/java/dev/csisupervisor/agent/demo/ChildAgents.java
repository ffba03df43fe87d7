package dev.csisupervisor.agent.demo;

import dev.csisupervisor.admin.v1.VolumeInfo;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.cli.AdminClient;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.ProcessRecord;
import dev.csisupervisor.tasks.process.ProcessRecords;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The csi-agent processes of one demo step, children of the demo (the way the agent runs in
 * production), one after the other on the same data dir: their config, their start, and what the
 * demo asks them over their admin socket.
 *
 * <p>Under {@code dir}: {@code agent.yaml}, {@code data/} (the data dir, with the admin socket),
 * and each agent's stdout and log as {@code <name>.out} and {@code <name>.log}. Used by one
 * thread.
 */
final class ChildAgents {
  /** The agents' {@code shutdown_grace}: how long a stopping agent gives its plugins. */
  private static final Duration GRACE = Duration.ofSeconds(2);

  private final Path dir;
  /** The agents' data dir, {@code data} under {@code dir} (relative in the config, which lies in {@code dir}). */
  private final Path dataDir;
  private final Path config;
  private final Path socket;
  private final List<Process> started = new ArrayList<>();

  ChildAgents(Path dir) {
    this.dir = dir;
    this.config = dir.resolve("agent.yaml");
    this.dataDir = dir.resolve("data");
    this.socket = dataDir.resolve("agent.sock");
  }

  /** The agents' admin socket. */
  Path socket() {
    return socket;
  }

  /** Where the agent started as {@code name} logs. */
  Path log(String name) {
    return dir.resolve(name + ".log");
  }

  /**
   * Creates the directory and writes the agents' config: a quiet agent (no metrics, a
   * {@link #GRACE} shutdown grace) probing every 200 ms ({@code fast}) or 500 ms, its volumes' mounts not
   * checked against the mount table (the mock plugin mounts nothing), with {@code plugins} (YAML list items,
   * one a line).
   */
  void writeConfig(boolean fast, String plugins) throws IOException {
    Files.createDirectories(dir);
    Files.writeString(config, "data_dir: " + dir.relativize(dataDir) + "\nmetrics_address: off\nshutdown_grace: "
        + GRACE.toSeconds() + "s\n"
        + "volumes: {verify_mounts: false}   # the mock plugin mounts nothing: no mount to check\n"
        + "defaults: {probe_interval: " + (fast ? "200ms" : "500ms") + "}\nplugins:\n"
        + plugins);
  }

  /** Starts an agent on the config; it is killed by {@link #destroyAll} if still running. */
  Process start(String name) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", absoluteClassPath(),
        "dev.csisupervisor.agent.commands.Main", "run", "--config", config.toString()));
    Process p = new ProcessBuilder(cmd)
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
        .redirectOutput(dir.resolve(name + ".out").toFile())
        .redirectError(log(name).toFile())
        .start();
    started.add(p);
    return p;
  }

  /**
   * Ends every agent started here and every plugin process they launched, so that a step that fails
   * half-way leaves nothing running. An agent still running gets SIGTERM (it stops its plugins, re-attached
   * ones too) and its shutdown grace plus a few seconds, then SIGKILL. A plugin launched by an agent that was
   * killed outlives it (re-parented) and is named in the data dir's {@code processes.json}: each process
   * recorded there that is still the same process (pid and start time) gets SIGKILL.
   */
  void destroyAll() {
    for (Process p : started) {
      if (p.isAlive()) {
        p.destroy();
        try {
          if (!p.waitFor(GRACE.plusSeconds(3).toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
          }
        } catch (InterruptedException e) {
          p.destroyForcibly();
          Thread.currentThread().interrupt();
        }
      }
    }
    try {
      for (ProcessRecord r : ProcessRecords.read(dataDir.resolve(AgentConfig.PROCESSES_FILE)).values()) {
        LaunchedProcess.reattach(r).flatMap(lp -> ProcessHandle.of(lp.pid())).ifPresent(ProcessHandle::destroyForcibly);
      }
    } catch (IOException e) {
      // Unreadable: nothing more to find; the demo says its step failed either way.
    }
  }

  private static String absoluteClassPath() {
    List<String> parts = new ArrayList<>();
    for (String p : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      if (!p.isEmpty()) {
        parts.add(Path.of(p).toAbsolutePath().toString());
      }
    }
    return String.join(java.io.File.pathSeparator, parts);
  }

  /** Healthy registrations at the agent's admin socket (all instances); confirmed ones only. */
  int registered(boolean confirmedOnly) {
    try (var c = AdminClient.connect(socket)) {
      var it = c.watch(dev.csisupervisor.admin.v1.PluginType.PLUGIN_TYPE_UNSPECIFIED, false); // its snapshots only
      int n = 0;
      for (int i = 0; i < 2; i++) {
        for (var p : it.next().getSnapshot().getPluginsList()) {
          if (p.getHealth().getHealthy() && !(confirmedOnly && p.getRestored())) {
            n++;
          }
        }
      }
      return n;
    } catch (Exception e) {
      return -1; // not up (yet)
    }
  }

  /** The agent's plugin processes: pid by plugin id, or none if it does not answer (yet). */
  Map<String, Long> pluginPids() {
    try (var c = AdminClient.connect(socket)) {
      Map<String, Long> pids = new java.util.TreeMap<>();
      for (var t : c.status().getTasksList()) {
        pids.put(t.getId(), t.getPid());
      }
      return pids;
    } catch (Exception e) {
      return Map.of();
    }
  }

  /** The agent's volumes, or none if it does not answer (yet). */
  List<VolumeInfo> volumes() {
    try (AdminClient c = AdminClient.connect(socket)) {
      return c.listVolumes().getVolumesList();
    } catch (AdminClient.AdminException e) {
      return List.of();
    }
  }
}
