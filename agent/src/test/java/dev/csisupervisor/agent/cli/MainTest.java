package dev.csisupervisor.agent.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
}
