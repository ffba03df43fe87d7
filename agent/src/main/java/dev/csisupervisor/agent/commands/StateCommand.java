package dev.csisupervisor.agent.commands;

import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.tasks.process.ProcessRecord;
import dev.csisupervisor.tasks.process.ProcessRecords;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.RestoreProblem;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateFileCorruptException;
import dev.csisupervisor.state.StateFileLockedException;
import dev.csisupervisor.state.StateStoreException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code csi-agent state inspect --data-dir D}. */
@Command(name = "state", mixinStandardHelpOptions = true,
    description = "Work with an agent's state files offline.",
    subcommands = StateCommand.Inspect.class)
final class StateCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing command: inspect");
  }

  @Command(name = "inspect", mixinStandardHelpOptions = true,
      description = {"Show what the state holds (the registrations the next agent start"
          + " restores: checkpoint plus journal) and the recorded plugin processes. Read-only;"
          + " the agent must not be running (it locks the state directory)."})
  static final class Inspect implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--data-dir", required = true, paramLabel = "DIR",
        description = "The agent's data_dir.")
    Path dataDir;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      Path dir = dataDir.toAbsolutePath().normalize();
      Path file = dir.resolve(JournalStateStore.DIRECTORY);
      if (!Files.isDirectory(file) && !Files.exists(dir.resolve("registry.db"))) {
        err.println("csi-agent: no state at " + file);
        return ExitCodes.FAILURE;
      }
      // Read-only and strict: an inspection never repairs, migrates, checkpoints or moves anything aside.
      try (JournalStateStore store = JournalStateStore.open(dir,
          JournalStateStore.Options.defaults().withStrict(true).withReadOnly(true));
          PluginRegistry registry = PluginRegistry.builder().stateStore(store).build()) {
        out.println("state " + (Files.isDirectory(file) ? file + " (journal sequence " + store.lastSequence() + ")"
            : dir.resolve("registry.db") + " (an earlier version's format: the next agent start converts it)"));
        int total = 0;
        for (PluginType t : PluginType.values()) {
          List<PluginInfo> all = registry.listAll(t);
          total += all.size();
          out.println();
          out.println(t + ": " + all.size() + " registration(s)");
          for (PluginInfo p : all) {
            out.println("  " + p.name() + "  alloc=" + p.allocId() + "  version=" + p.version()
                + "  " + (p.health().healthy() ? "healthy" : "unhealthy: "
                + p.health().message()) + "  since=" + p.health().since() + "  socket="
                + p.socketPath());
          }
        }
        List<RestoreProblem> problems = registry.restoreProblems();
        if (!problems.isEmpty()) {
          out.println();
          out.println(problems.size() + " record(s) could not be read:");
          for (RestoreProblem p : problems) {
            out.println("  " + p.key() + ": " + p.reason());
          }
        }
        out.println();
        out.println(total + " registration(s) in total");
      } catch (StateFileLockedException e) {
        err.println("csi-agent: the state in " + file + " is locked: an agent is running with"
            + " this data dir (use 'csi-agent plugins' to ask it, or stop it first)");
        return ExitCodes.FAILURE;
      } catch (StateFileCorruptException e) {
        err.println("csi-agent: the state is damaged: " + e.getMessage());
        return ExitCodes.FAILURE;
      } catch (StateStoreException e) {
        err.println("csi-agent: cannot read the state: " + e.getMessage());
        return ExitCodes.FAILURE;
      }
      Path processes = dir.resolve("processes.json");
      if (Files.exists(processes)) {
        try {
          var recs = ProcessRecords.read(processes);
          out.println();
          out.println("processes recorded in " + processes + ": " + recs.size());
          for (ProcessRecord r : recs.values()) {
            boolean alive = ProcessHandle.of(r.pid()).map(ProcessHandle::isAlive).orElse(false);
            out.println("  " + r.id() + "  pid=" + r.pid() + (alive ? " (running)" : " (gone)")
                + "  socket=" + r.socket());
          }
        } catch (IOException e) {
          err.println("csi-agent: cannot read " + processes + ": " + e.getMessage());
          return ExitCodes.FAILURE;
        }
      }
      return ExitCodes.OK;
    }
  }
}
