package dev.csisupervisor.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The admin commands on a command line: {@code --config} goes to the program's config reader given to
 * {@link AdminCommands} (also for the volume command's own subcommands), its refusal is a usage error.
 */
class AdminCommandsTest {
  @TempDir Path dir;
  private final List<Path> read = new ArrayList<>();
  private final StringWriter err = new StringWriter();

  private int run(Object command, String... args) {
    CommandLine cl = new CommandLine(command);
    cl.setErr(new PrintWriter(err, true)).setOut(new PrintWriter(new StringWriter(), true));
    return cl.execute(args);
  }

  private AgentConfigReader socketIn(Path socketDir) {
    return file -> {
      read.add(file);
      return socketDir.resolve("agent.sock");
    };
  }

  @Test
  void config_isReadByTheProgramsReader_andItsSocketIsTheOneTried() {
    Path config = dir.resolve("agent.yaml");
    int code = run(AdminCommands.plugins(socketIn(dir)), "--config", config.toString());
    assertEquals(List.of(config), read);
    assertEquals(ExitCodes.FAILURE, code, err.toString());
    assertTrue(err.toString().contains("no agent is running at " + dir.resolve("agent.sock")), err.toString());
  }

  @Test
  void config_reachesTheVolumeCommandsOwnSubcommands() {
    Path config = dir.resolve("agent.yaml");
    int code = run(AdminCommands.volume(socketIn(dir)), "list", "--config", config.toString());
    assertEquals(List.of(config), read);
    assertEquals(ExitCodes.FAILURE, code, err.toString());
    assertTrue(err.toString().contains("no agent is running at " + dir.resolve("agent.sock")), err.toString());
  }

  @Test
  void aConfigTheReaderRefuses_isAUsageErrorWithItsMessage() {
    int code = run(AdminCommands.status(file -> {
      throw new IllegalArgumentException(file + ": data_dir: must not be empty");
    }), "--config", "/etc/x.yaml");
    assertEquals(ExitCodes.USAGE, code);
    assertTrue(err.toString().contains("/etc/x.yaml: data_dir: must not be empty"), err.toString());
  }
}
