package dev.csisupervisor.agent.commands;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.config.LogSettings.Format;
import dev.csisupervisor.agent.config.LogSettings.Level;
import java.util.Map;
import org.junit.jupiter.api.Test;

class MainTest {
  @Test
  void eachCommandStartsAtItsLevel_theEnvironmentOverrides() {
    assertEquals(Level.INFO, Main.logSettings(new String[] {"run", "--config", "x"}, Map.of()).level());
    assertEquals(Level.WARN, Main.logSettings(new String[] {"plugins"}, Map.of()).level());
    assertEquals(Level.INFO, Main.logSettings(new String[] {"plugins", "-v"}, Map.of()).level());
    assertEquals(Level.ERROR, Main.logSettings(new String[] {"demo"}, Map.of()).level());
    assertEquals(Level.WARN, Main.logSettings(new String[0], Map.of()).level());

    LogSettings s = Main.logSettings(new String[] {"demo"}, Map.of(
        LogSettings.LEVEL_ENV, "debug,io.grpc=info", LogSettings.FORMAT_ENV, "json"));
    assertEquals(new LogSettings(Level.DEBUG, Format.JSON, Map.of("io.grpc", Level.INFO)), s);
    assertThrows(IllegalArgumentException.class,
        () -> Main.logSettings(new String[] {"run"}, Map.of(LogSettings.LEVEL_ENV, "chatty")));
  }

  @Test
  void adminCommands_runWithoutLogging_unlessAskedFor() {
    assertTrue(Main.quiet(new String[] {"plugins", "--json"}, Map.of()));
    assertTrue(Main.quiet(new String[] {"status"}, Map.of()));
    assertTrue(Main.quiet(new String[] {"volume", "list"}, Map.of()));
    assertTrue(Main.quiet(new String[] {"--help"}, Map.of()));
    assertFalse(Main.quiet(new String[] {"run", "--config", "x"}, Map.of()), "the daemon logs");
    assertFalse(Main.quiet(new String[] {"demo"}, Map.of()));
    assertFalse(Main.quiet(new String[] {"state", "inspect"}, Map.of()), "it opens the store, which logs");
    assertFalse(Main.quiet(new String[] {"plugins", "--verbose"}, Map.of()));
    assertFalse(Main.quiet(new String[] {"plugins"}, Map.of("CSI_AGENT_LOG_LEVEL", "debug")));
  }

  @Test
  void aCommandLine_buildsOnlyTheSubcommandItNames_helpListsThemAll_butNotTheHiddenTraining() {
    java.io.PrintWriter nowhere = new java.io.PrintWriter(java.io.OutputStream.nullOutputStream());
    assertEquals(java.util.Set.of("plugins"),
        CsiAgentCommand.commandLine(nowhere, nowhere, new String[] {"plugins", "--json"}).getSubcommands().keySet());
    var all = CsiAgentCommand.commandLine(nowhere, nowhere, new String[] {"--help"});
    assertTrue(all.getSubcommands().keySet().containsAll(java.util.List.of("run", "reload", "plugins", "plugin",
        "events", "status", "state", "demo", "cluster", "volume", "help")), all.getSubcommands().keySet().toString());
    String usage = all.getUsageMessage();
    assertTrue(usage.contains("plugins") && !usage.contains("class-data-training"), usage);
  }
}
