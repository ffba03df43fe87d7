package dev.csisupervisor.tasks.process;

import static java.util.Objects.requireNonNull;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One plugin process: launched by this agent, or re-attached to after an agent restart.
 *
 * <p>A launched process gets its own session ({@code setsid}, where the system has it), so a
 * Ctrl-C at the agent's terminal reaches only the agent, which then stops its plugins in order.
 * stdin is {@code /dev/null}; stdout and stderr append to the plugin's log file (never a pipe: a
 * plugin keeps running, and logging, when the agent is gone).
 *
 * <p>Thread-safe. Exit notifications complete on a JDK process-reaper thread; callers hop to their
 * own executor.
 */
public final class LaunchedProcess {
  /** Starts the line written to the log before each launch. */
  static final String LOG_HEADER = "---- csi-agent";

  private static final Logger log = LoggerFactory.getLogger(LaunchedProcess.class);
  private static final List<Path> SETSID = List.of(Path.of("/usr/bin/setsid"),
      Path.of("/bin/setsid"));

  private final ProcessHandle handle;
  private final Process process; // null when re-attached: no exit code then
  private final List<String> commandLine;
  private final boolean reattached;

  private LaunchedProcess(ProcessHandle handle, Process process, List<String> commandLine,
      boolean reattached) {
    this.handle = handle;
    this.process = process;
    this.commandLine = List.copyOf(commandLine);
    this.reattached = reattached;
  }

  /**
   * Starts {@code commandLine} with the agent's environment plus {@code env}, output appended to
   * {@code logFile} (its directory is created, mode 0700).
   *
   * @throws IOException naming the command if it cannot be started (not found, not executable)
   */
  public static LaunchedProcess launch(List<String> commandLine, Map<String, String> env,
      Path logFile) throws IOException {
    requireNonNull(commandLine, "commandLine");
    requireNonNull(env, "env");
    requireNonNull(logFile, "logFile");
    if (commandLine.isEmpty()) {
      throw new IllegalArgumentException("commandLine must not be empty");
    }
    // setsid would start and then fail to exec: check first, so the error names the command.
    checkExecutable(commandLine.get(0), env);
    Path logDir = logFile.toAbsolutePath().getParent();
    if (!Files.isDirectory(logDir)) {
      Files.createDirectories(logDir);
      Files.setPosixFilePermissions(logDir, PosixFilePermissions.fromString("rwx------"));
    }
    Files.writeString(logFile, LOG_HEADER + " " + Instant.now() + ": starting "
        + String.join(" ", commandLine) + "\n", StandardCharsets.UTF_8,
        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    List<String> argv = new ArrayList<>();
    setsid().ifPresent(p -> argv.add(p.toString()));
    argv.addAll(commandLine);
    ProcessBuilder pb = new ProcessBuilder(argv)
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
        .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
        .redirectErrorStream(true);
    pb.environment().putAll(env);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new IOException("cannot start " + commandLine.get(0) + ": " + e.getMessage(), e);
    }
    return new LaunchedProcess(p.toHandle(), p, commandLine, false);
  }

  /**
   * The process of {@code record}, if it is still alive and is the same process (its start time
   * matches, so a reused pid is not mistaken for it).
   */
  public static Optional<LaunchedProcess> reattach(ProcessRecord record) {
    requireNonNull(record, "record");
    Optional<ProcessHandle> h = ProcessHandle.of(record.pid());
    if (h.isEmpty() || !h.get().isAlive()) {
      return Optional.empty();
    }
    long start = startMillis(h.get());
    if (record.startMillis() >= 0 && start >= 0 && record.startMillis() != start) {
      log.info("plugin={} pid {} now belongs to another process (started {} not {}): not"
          + " re-attaching", record.id(), record.pid(), start, record.startMillis());
      return Optional.empty();
    }
    if (record.startMillis() >= 0 && start >= 0) {
      // The same pid started at the same time: the same process, even if it has exec'd into
      // another program since (a wrapper script's exec).
      return Optional.of(new LaunchedProcess(h.get(), null, record.commandLine(), true));
    }
    // The start time is unknown: the process must run what was launched. When that cannot be
    // read, refuse: adopting a stranger would mean signalling it on stop.
    Optional<List<String>> argv = commandLineOf(record.pid());
    if (argv.isEmpty()) {
      log.warn("plugin={} pid {}: its command line cannot be read, so it cannot be told from"
          + " another process: not re-attaching (and not signalling it)", record.id(),
          record.pid());
      return Optional.empty();
    }
    if (!runs(argv.get(), record.commandLine())) {
      log.info("plugin={} pid {} now runs something else ({}): not re-attaching", record.id(),
          record.pid(), String.join(" ", argv.get()));
      return Optional.empty();
    }
    return Optional.of(new LaunchedProcess(h.get(), null, record.commandLine(), true));
  }

  /** {@code /proc/<pid>/cmdline}, or empty if it cannot be read. */
  static Optional<List<String>> commandLineOf(long pid) {
    try {
      byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
      if (raw.length == 0) {
        return Optional.empty(); // a zombie or a kernel thread
      }
      String s = new String(raw, StandardCharsets.UTF_8);
      if (s.endsWith("\0")) {
        s = s.substring(0, s.length() - 1);
      }
      return Optional.of(List.of(s.split("\0", -1)));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  /**
   * Whether a process with {@code actual} argv runs {@code launched}: the launched arguments end
   * its argv, and the launched program is named in it (an interpreter such as {@code /bin/sh}
   * may come first, for a script).
   */
  static boolean runs(List<String> actual, List<String> launched) {
    if (launched.isEmpty() || actual.size() < launched.size()) {
      return false;
    }
    List<String> args = launched.subList(1, launched.size());
    if (!actual.subList(actual.size() - args.size(), actual.size()).equals(args)) {
      return false;
    }
    Path program = Path.of(launched.get(0)).getFileName();
    for (String a : actual.subList(0, actual.size() - args.size())) {
      if (a.equals(launched.get(0)) || (program != null && !a.isEmpty()
          && program.equals(Path.of(a).getFileName()))) {
        return true;
      }
    }
    return false;
  }

  private static void checkExecutable(String command, Map<String, String> env)
      throws IOException {
    if (command.contains("/")) {
      Path p = Path.of(command);
      if (!Files.exists(p)) {
        throw new IOException("cannot start " + command + ": no such file");
      }
      if (Files.isDirectory(p) || !Files.isExecutable(p)) {
        throw new IOException("cannot start " + command + ": not an executable file");
      }
      return;
    }
    String path = env.getOrDefault("PATH", System.getenv().getOrDefault("PATH", ""));
    for (String dir : path.split(File.pathSeparator)) {
      if (dir.isEmpty()) {
        continue;
      }
      Path p = Path.of(dir, command);
      if (Files.isExecutable(p) && !Files.isDirectory(p)) {
        return;
      }
    }
    throw new IOException("cannot start " + command + ": not found on PATH");
  }

  private static Optional<Path> setsid() {
    return SETSID.stream().filter(Files::isExecutable).findFirst();
  }

  static long startMillis(ProcessHandle h) {
    return h.info().startInstant().map(Instant::toEpochMilli).orElse(-1L);
  }

  public long pid() {
    return handle.pid();
  }

  public boolean reattached() {
    return reattached;
  }

  public boolean isAlive() {
    return handle.isAlive();
  }

  public List<String> commandLine() {
    return commandLine;
  }

  /** The record to persist for this process. */
  public ProcessRecord record(String id, Path socket) {
    return new ProcessRecord(id, pid(), startMillis(handle), commandLine, socket.toString());
  }

  /**
   * Completes when the process has exited, with its exit code, or -1 when it is unknown (a
   * re-attached process is not this JVM's child).
   */
  public CompletableFuture<Integer> onExit() {
    if (process != null) {
      return process.onExit().thenApply(Process::exitValue);
    }
    return handle.onExit().thenApply(h -> -1);
  }

  /**
   * Stops the process: SIGTERM now; if it is still alive after {@code grace}, SIGKILL to it and
   * its descendants. Completes when it has exited. Idempotent.
   */
  public CompletableFuture<Integer> terminate(Duration grace, ScheduledExecutorService scheduler) {
    CompletableFuture<Integer> exit = onExit();
    if (!handle.isAlive()) {
      return exit;
    }
    List<ProcessHandle> descendants = handle.descendants().toList();
    handle.destroy();
    if (grace.isZero()) {
      kill(descendants);
    } else {
      var timer = scheduler.schedule(() -> {
        if (handle.isAlive()) {
          log.warn("pid {} still running {} after SIGTERM: sending SIGKILL", pid(), grace);
          kill(descendants);
        }
      }, grace.toNanos(), TimeUnit.NANOSECONDS);
      exit.whenComplete((code, error) -> timer.cancel(false));
    }
    return exit;
  }

  private void kill(List<ProcessHandle> descendants) {
    handle.destroyForcibly();
    for (ProcessHandle d : descendants) {
      d.destroyForcibly();
    }
    handle.descendants().forEach(ProcessHandle::destroyForcibly);
  }

  @Override
  public String toString() {
    return "pid " + pid() + (reattached ? " (re-attached)" : "");
  }
}
