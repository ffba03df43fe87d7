package dev.csisupervisor.agent.config;

import static dev.csisupervisor.agent.config.YamlFiles.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.agent.config.LogSettings.Format;
import dev.csisupervisor.agent.config.LogSettings.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LogSettingsTest {
  private static final String BASE = "data_dir: data\nmetrics_address: off\nplugins: []\n";

  @TempDir Path dir;

  @Test
  void logSection_isRead_levelsInOrder() throws Exception {
    Path f = write(dir, BASE + """
        log:
          level: warn
          format: JSON
          levels:
            dev.csisupervisor.registry: debug
            io.grpc: error
        """);
    LogSettings s = ConfigLoader.loadSections(f).log();
    assertEquals(Level.WARN, s.level());
    assertEquals(Format.JSON, s.format());
    assertEquals(List.of("dev.csisupervisor.registry", "io.grpc"), List.copyOf(s.levels().keySet()));
    assertEquals(Level.DEBUG, s.levels().get("dev.csisupervisor.registry"));
  }

  @Test
  void oneReadOfTheFile_givesTheAgentConfig_andItsLogAndClusterSections() throws Exception {
    Path f = write(dir, BASE + "log: {level: debug, format: json}\n");
    ConfigLoader.Sections all = ConfigLoader.loadSections(f);
    assertEquals(f.resolveSibling("data"), all.agent().dataDir());
    assertEquals(new LogSettings(Level.DEBUG, Format.JSON, java.util.Map.of()), all.log());
    assertEquals(java.util.Optional.empty(), all.cluster());
    Path bad = write(dir, BASE + "log: {level: loud}\n");
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.loadSections(bad));
    assertTrue(e.getMessage().contains("log.level"), e.getMessage());
  }

  @Test
  void noLogSection_orAnEmptyOne_isTheDefault() throws Exception {
    assertEquals(LogSettings.DEFAULT, ConfigLoader.loadSections(write(dir, BASE)).log());
    assertEquals(LogSettings.DEFAULT, ConfigLoader.loadSections(write(dir, BASE + "log:\n")).log());
  }

  @Test
  void badValues_areConfigErrors_namingFieldLineAndColumn() throws Exception {
    Path f = write(dir, BASE + """
        log:
          level: verbose
          format: xml
          colour: true
          levels:
            dev.csisupervisor.registry: loud
            "not a package": debug
        """);
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(f));
    List<String> p = e.problems();
    assertEquals(5, p.size(), e.getMessage());
    assertTrue(p.get(0).startsWith("log.level: \"verbose\" is not a log level (use trace, debug, info,"
        + " warn, error or off) (line 5, column 10)"), p.get(0));
    assertTrue(p.get(1).startsWith("log.format: \"xml\" is not a log format (use text or json)"
        + " (line 6, column 11)"), p.get(1));
    assertTrue(p.get(2).startsWith("log.colour: unknown field (line 7, column 3)"
        + " (known fields: format, level, levels)"), p.get(2));
    assertTrue(p.get(3).startsWith("log.levels.dev.csisupervisor.registry: \"loud\" is not a log level"),
        p.get(3));
    assertTrue(p.get(3).endsWith("(line 9, column 33)"), p.get(3));
    assertTrue(p.get(4).startsWith("log.levels: \"not a package\" is not a logger name"), p.get(4));
    assertTrue(p.get(4).endsWith("(line 10, column 5)"), p.get(4));
    // The same problems where the daemon reads the file (at start-up and on reload).
    assertEquals(p,
        assertThrows(ConfigException.class, () -> ConfigLoader.loadSections(f)).problems());
  }

  @Test
  void wrongShapes_areConfigErrors() throws Exception {
    ConfigException e = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(write(dir, BASE + "log: debug\n")));
    assertTrue(e.getMessage().contains("log: expected a mapping (level, format, levels) (line 4, column 6)"),
        e.getMessage());
    e = assertThrows(ConfigException.class,
        () -> ConfigLoader.load(write(dir, BASE + "log:\n  levels: [a, b]\n  level: [info]\n")));
    assertTrue(e.getMessage().contains("log.levels: expected a mapping of logger names to levels"),
        e.getMessage());
    assertTrue(e.getMessage().contains("log.level: expected a single value (a string)"), e.getMessage());
  }

  @Test
  void environment_overridesConfig() {
    LogSettings config = new LogSettings(Level.WARN, Format.TEXT,
        Map.of("dev.csisupervisor.registry", Level.DEBUG, "io.grpc", Level.ERROR));
    LogSettings s = config.overriddenBy(Map.of(
        LogSettings.LEVEL_ENV, " info , dev.csisupervisor.registry=trace,dev.csisupervisor.state=debug",
        LogSettings.FORMAT_ENV, "json"));
    assertEquals(Level.INFO, s.level());
    assertEquals(Format.JSON, s.format());
    assertEquals(Map.of("dev.csisupervisor.registry", Level.TRACE, "io.grpc", Level.ERROR,
        "dev.csisupervisor.state", Level.DEBUG), s.levels());

    // Only logger levels: the default level stays the config's.
    assertEquals(Level.WARN, config.overriddenBy(Map.of(LogSettings.LEVEL_ENV, "io.grpc=info")).level());
    // Unset or blank: the config as it is.
    assertEquals(config, config.overriddenBy(Map.of()));
    assertEquals(config, config.overriddenBy(Map.of(LogSettings.LEVEL_ENV, " ", LogSettings.FORMAT_ENV, "")));
  }

  @Test
  void badEnvironment_isRejected_namingTheVariable() {
    for (var bad : List.of(
        Map.entry(LogSettings.LEVEL_ENV, "loud"),
        Map.entry(LogSettings.LEVEL_ENV, "info,debug"),
        Map.entry(LogSettings.LEVEL_ENV, "info,,io.grpc=warn"),
        Map.entry(LogSettings.LEVEL_ENV, "io grpc=warn"),
        Map.entry(LogSettings.LEVEL_ENV, "io.grpc=sometimes"),
        Map.entry(LogSettings.FORMAT_ENV, "xml"))) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> LogSettings.DEFAULT.overriddenBy(Map.ofEntries(bad)), bad.toString());
      assertTrue(e.getMessage().startsWith(bad.getKey()), e.getMessage());
    }
    assertEquals("CSI_AGENT_LOG_LEVEL (io.grpc): \"sometimes\" is not a log level (use trace, debug,"
        + " info, warn, error or off)", assertThrows(IllegalArgumentException.class,
            () -> LogSettings.DEFAULT.overriddenBy(Map.of(LogSettings.LEVEL_ENV, "io.grpc=sometimes")))
        .getMessage());
  }
}
