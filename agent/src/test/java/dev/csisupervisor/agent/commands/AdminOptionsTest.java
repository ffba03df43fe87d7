package dev.csisupervisor.agent.commands;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.cli.AdminOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/** Where an admin command finds the agent: flags first, then $CSI_AGENT_ADMIN_SOCKET, then $CSI_AGENT_CONFIG read by the daemon's config loader. */
class AdminOptionsTest {
  @TempDir Path dir;
  private final CommandLine cmd = new CommandLine(CommandSpec.create());

  private Path config(String dataDir) throws Exception {
    return Files.writeString(dir.resolve("agent.yaml"), "data_dir: " + dataDir + "\nplugins: []\n");
  }

  @Test
  void configEnv_givesTheSocketOfItsDataDir() throws Exception {
    Path file = config("/var/lib/x");
    Path socket = new AdminOptions(CsiAgentCommand::adminSocketOf).socket(cmd, Map.of(AdminOptions.CONFIG_ENV, file.toString())::get);
    assertEquals(Path.of("/var/lib/x/agent.sock"), socket);
  }

  @Test
  void socketEnv_winsOverConfigEnv() throws Exception {
    Path file = config("/var/lib/x");
    Path socket = new AdminOptions(CsiAgentCommand::adminSocketOf).socket(cmd,
        Map.of(AdminOptions.ENV, "/run/a.sock", AdminOptions.CONFIG_ENV, file.toString())::get);
    assertEquals(Path.of("/run/a.sock"), socket);
  }

  @Test
  void configEnv_namingAMissingFile_isAUsageErrorNamingIt() {
    Path missing = dir.resolve("nowhere.yaml");
    CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class,
        () -> new AdminOptions(CsiAgentCommand::adminSocketOf).socket(cmd, Map.of(AdminOptions.CONFIG_ENV, missing.toString())::get));
    assertTrue(e.getMessage().startsWith(missing.toString()), e.getMessage());
  }

  @Test
  void nothingSaysWhere_namesEveryWayToSayIt() {
    CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class,
        () -> new AdminOptions(CsiAgentCommand::adminSocketOf).socket(cmd, Map.<String, String>of()::get));
    assertEquals("Which agent? Give --admin-socket PATH or --config FILE (or set CSI_AGENT_ADMIN_SOCKET or"
        + " CSI_AGENT_CONFIG)", e.getMessage());
  }
}
