package dev.csisupervisor.agent.logging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.config.LogSettings.Format;
import dev.csisupervisor.agent.config.LogSettings.Level;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

/** Each test has a logback context of its own, writing to a buffer: the JVM's logging is not touched. */
class LogbackSetupTest {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final LoggerContext context = new LoggerContext();
  private LogbackSetup setup;

  @BeforeEach
  void setUp() {
    context.setMDCAdapter(new LogbackMDCAdapter());
    context.start();
    setup = new LogbackSetup(context, () -> out);
  }

  private Logger logger(String name) {
    return context.getLogger(name);
  }

  private List<String> lines() {
    String s = out.toString(StandardCharsets.UTF_8);
    out.reset();
    return s.isEmpty() ? List.of() : List.of(s.split("\n"));
  }

  @Test
  void levelsApplyPerPackage_mostSpecificWins() {
    setup.apply(new LogSettings(Level.WARN, Format.TEXT, Map.of(
        "dev.csisupervisor.registry", Level.DEBUG,
        "dev.csisupervisor.registry.Noisy", Level.ERROR)));
    logger("dev.csisupervisor.registry.Broadcaster").debug("registry debug");
    logger("dev.csisupervisor.registry.Noisy").warn("noisy warn");
    logger("dev.csisupervisor.agent.Agent").info("agent info");
    logger("dev.csisupervisor.agent.Agent").warn("agent warn");
    List<String> lines = lines();
    assertEquals(2, lines.size(), lines.toString());
    assertTrue(lines.get(0).endsWith(" [DEBUG] Broadcaster - registry debug"), lines.get(0));
    assertTrue(lines.get(1).endsWith(" [WARN] Agent - agent warn"), lines.get(1));
  }

  @Test
  void textLines_lookLikeTheOldSimpleLoggerOnes() {
    setup.apply(LogSettings.DEFAULT);
    logger("dev.csisupervisor.agent.Agent").info("registry restored {} registration(s)", 4);
    logger("dev.csisupervisor.agent.Agent").warn("failed", new IllegalStateException("boom"));
    List<String> lines = lines();
    assertTrue(lines.get(0).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d)"
        + " \\[INFO\\] Agent - registry restored 4 registration\\(s\\)"), lines.get(0));
    assertTrue(lines.get(1).endsWith(" [WARN] Agent - failed"), lines.get(1));
    assertEquals("java.lang.IllegalStateException: boom", lines.get(2));
    assertTrue(lines.get(3).startsWith("\tat "), lines.get(3));
  }

  @Test
  void librariesStayQuiet_unlessNamed() {
    setup.apply(LogSettings.DEFAULT);
    logger("io.grpc.internal.ManagedChannelImpl").info("grpc chatter");
    logger("io.netty.channel.Foo").info("netty chatter");
    logger("org.mapdb.StoreWAL").warn("mapdb warn");
    assertEquals(1, lines().size());

    setup.apply(new LogSettings(Level.INFO, Format.TEXT, Map.of("io.grpc", Level.DEBUG)));
    logger("io.grpc.internal.ManagedChannelImpl").debug("grpc debug");
    logger("io.netty.channel.Foo").info("netty chatter");
    assertEquals(1, lines().size());

    // Quieter than warn overall: the libraries are too.
    setup.apply(new LogSettings(Level.ERROR, Format.TEXT, Map.of()));
    logger("io.grpc.internal.ManagedChannelImpl").warn("grpc warn");
    assertEquals(List.of(), lines());
  }

  @Test
  void jsonLines_parse_withLevelLoggerThreadMessageMdcAndException() throws Exception {
    setup.apply(new LogSettings(Level.INFO, Format.JSON, Map.of()));
    context.getMDCAdapter().put("plugin", "ebs");
    try {
      logger("dev.csisupervisor.agent.Agent").info("plugin={} \"quoted\"\nsecond line", "ebs");
    } finally {
      context.getMDCAdapter().clear();
    }
    logger("dev.csisupervisor.agent.Agent").error("failed", new IllegalStateException("boom",
        new java.io.IOException("disk full")));
    List<String> lines = lines();
    assertEquals(2, lines.size(), "one line per event: " + lines);
    ObjectMapper json = new ObjectMapper();
    long before = System.currentTimeMillis() - 60_000;

    JsonNode first = json.readTree(lines.get(0));
    assertEquals("INFO", first.get("level").asText());
    assertEquals("dev.csisupervisor.agent.Agent", first.get("loggerName").asText());
    assertEquals(Thread.currentThread().getName(), first.get("threadName").asText());
    assertEquals("plugin=ebs \"quoted\"\nsecond line", first.get("formattedMessage").asText());
    assertEquals("ebs", first.get("mdc").get("plugin").asText());
    assertTrue(first.get("timestamp").asLong() > before, first.toString());
    assertTrue(first.get("throwable").isNull(), first.toString());

    JsonNode second = json.readTree(lines.get(1));
    assertEquals("ERROR", second.get("level").asText());
    JsonNode t = second.get("throwable");
    assertEquals("java.lang.IllegalStateException", t.get("className").asText());
    assertEquals("boom", t.get("message").asText());
    assertTrue(t.get("stepArray").size() > 0, t.toString());
    assertEquals("java.io.IOException", t.get("cause").get("className").asText());
    assertEquals(0, second.get("mdc").size());
  }

  @Test
  void applyAgain_changesInPlace_andSaysWhat() throws Exception {
    assertEquals(List.of(), setup.apply(new LogSettings(Level.INFO, Format.TEXT,
        Map.of("dev.csisupervisor.registry", Level.DEBUG, "dev.csisupervisor.state", Level.WARN))));
    assertTrue(logger("dev.csisupervisor.registry.X").isDebugEnabled());

    List<String> changes = setup.apply(new LogSettings(Level.WARN, Format.JSON,
        Map.of("dev.csisupervisor.state", Level.TRACE)));
    assertEquals(List.of("log format: text -> json", "log level: info -> warn",
        "log level of dev.csisupervisor.state: trace (was warn)",
        "log level of dev.csisupervisor.registry: the default (was debug)"), changes);
    assertFalse(logger("dev.csisupervisor.registry.X").isInfoEnabled(), "back to the default, warn");
    assertTrue(logger("dev.csisupervisor.state.Y").isTraceEnabled());
    assertEquals(1, countAppenders(), "the text appender is gone");

    logger("dev.csisupervisor.agent.Agent").warn("now json");
    List<String> lines = lines();
    assertEquals(1, lines.size(), "written once, by the new appender only: " + lines);
    assertEquals("now json", new ObjectMapper().readTree(lines.get(0)).get("formattedMessage").asText());

    assertEquals(List.of(), setup.apply(setup.current()), "the same again changes nothing");
  }

  private int countAppenders() {
    List<Object> all = new ArrayList<>();
    context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).iteratorForAppenders().forEachRemaining(all::add);
    return all.size();
  }
}
