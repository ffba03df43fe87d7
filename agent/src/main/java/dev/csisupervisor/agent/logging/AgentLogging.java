package dev.csisupervisor.agent.logging;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.core.joran.spi.ConsoleTarget;
import dev.csisupervisor.agent.config.LogSettings;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * The agent process's logging: logback, configured in code from {@link LogSettings} (no XML). Every
 * JVM started from the agent's class path (the agent, its CLI, the bundled mock plugin) starts at
 * {@link LogSettings#DEFAULT} through {@link DefaultConfigurator}; {@link #apply} then sets what
 * the command, the config file and the environment ask for, and again on a config reload.
 *
 * <p>An operator who points {@code -Dlogback.configurationFile} at a logback XML file takes over:
 * {@link #apply} then changes nothing. Thread-safe.
 */
public final class AgentLogging {
  /** logback's own system property naming an XML configuration file. */
  static final String CONFIG_FILE_PROPERTY = "logback.configurationFile";

  private AgentLogging() {}

  /**
   * Makes {@code settings} the ones in force: levels and format change in place, no restart.
   *
   * @return what changed, one line each; empty if nothing did, or if logging is not this
   *     class's to change (slf4j not bound to logback, or an XML file in charge)
   */
  public static List<String> apply(LogSettings settings) {
    if (System.getProperty(CONFIG_FILE_PROPERTY) != null
        || !(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
      return List.of();
    }
    return setup(context).apply(settings);
  }

  static LogbackSetup setup(LoggerContext context) {
    return LogbackSetup.of(context, ConsoleTarget.SystemErr::getStream);
  }
}
