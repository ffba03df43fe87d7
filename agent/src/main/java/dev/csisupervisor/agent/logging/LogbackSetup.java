package dev.csisupervisor.agent.logging;

import static java.util.Objects.requireNonNull;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import dev.csisupervisor.agent.config.LogSettings;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * One logback context set up as the agent logs: one appender on the root logger writing
 * {@link LogSettings.Format#TEXT text} or {@link LogSettings.Format#JSON JSON} lines to a stream
 * (stderr), the root level, and levels per logger. {@link #apply} changes all of it in place, so a
 * config reload takes effect without a restart. Thread-safe.
 */
final class LogbackSetup {
  /**
   * Close to what slf4j-simple printed before: {@code 2026-01-02T03:04:05.678+01:00 [INFO] Agent -
   * message}, then the stack trace if any.
   */
  static final String TEXT_PATTERN = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} [%level] %logger{0} - %msg%n";
  /** Libraries whose info lines are not the agent's business: warn unless the settings name them. */
  static final List<String> QUIET = List.of("io.grpc", "io.netty", "org.mapdb");

  private static final String KEY = LogbackSetup.class.getName();
  private static final String APPENDER = "csi-agent";

  private final LoggerContext context;
  private final Supplier<OutputStream> sink;
  private OutputStreamAppender<ILoggingEvent> appender; // guarded by this
  private LogSettings current; // guarded by this
  private Map<String, Level> managed = Map.of(); // guarded by this: the levels this set

  LogbackSetup(LoggerContext context, Supplier<OutputStream> sink) {
    this.context = requireNonNull(context, "context");
    this.sink = requireNonNull(sink, "sink");
  }

  /** The setup kept in {@code context}, made (writing to {@code sink}) on first use. */
  static LogbackSetup of(LoggerContext context, Supplier<OutputStream> sink) {
    synchronized (context) {
      Object o = context.getObject(KEY);
      if (o instanceof LogbackSetup s) {
        return s;
      }
      LogbackSetup s = new LogbackSetup(context, sink);
      context.putObject(KEY, s);
      return s;
    }
  }

  /** The settings in force, or null before the first {@link #apply}. */
  synchronized LogSettings current() {
    return current;
  }

  /**
   * Makes {@code settings} the ones in force.
   *
   * @return what changed, one line each ({@code log level: info -> debug}); empty when nothing
   *     did, and on the first call
   */
  synchronized List<String> apply(LogSettings settings) {
    requireNonNull(settings, "settings");
    List<String> changes = new ArrayList<>();
    Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    if (appender == null || current.format() != settings.format()) {
      OutputStreamAppender<ILoggingEvent> next = newAppender(settings.format());
      // The new one first: an event in between is written twice rather than lost.
      root.addAppender(next);
      if (appender != null) {
        root.detachAppender(appender);
        appender.stop();
        changes.add("log format: " + name(current.format()) + " -> " + name(settings.format()));
      }
      appender = next;
    }
    root.setLevel(level(settings.level()));
    if (current != null && current.level() != settings.level()) {
      changes.add("log level: " + name(current.level()) + " -> " + name(settings.level()));
    }

    Map<String, Level> want = new LinkedHashMap<>();
    if (settings.level().compareTo(LogSettings.Level.WARN) < 0) {
      QUIET.forEach(q -> want.put(q, Level.WARN));
    }
    settings.levels().forEach((name, l) -> want.put(name, level(l)));
    for (String name : managed.keySet()) {
      if (!want.containsKey(name)) {
        context.getLogger(name).setLevel(null); // inherits again
      }
    }
    want.forEach((name, l) -> context.getLogger(name).setLevel(l));
    if (current != null) {
      describe(current.levels(), settings.levels(), changes);
    }
    managed = Map.copyOf(want);
    current = settings;
    return changes;
  }

  private static void describe(Map<String, LogSettings.Level> before,
      Map<String, LogSettings.Level> after, List<String> changes) {
    after.forEach((name, l) -> {
      LogSettings.Level was = before.get(name);
      if (was != l) {
        changes.add("log level of " + name + ": " + name(l) + " (was "
            + (was == null ? "the default" : name(was)) + ")");
      }
    });
    before.forEach((name, was) -> {
      if (!after.containsKey(name)) {
        changes.add("log level of " + name + ": the default (was " + name(was) + ")");
      }
    });
  }

  private OutputStreamAppender<ILoggingEvent> newAppender(LogSettings.Format format) {
    OutputStreamAppender<ILoggingEvent> a = new OutputStreamAppender<>();
    a.setContext(context);
    a.setName(APPENDER);
    a.setEncoder(encoder(format));
    a.setOutputStream(Objects.requireNonNull(sink.get(), "sink"));
    a.start();
    return a;
  }

  private Encoder<ILoggingEvent> encoder(LogSettings.Format format) {
    return switch (format) {
      case TEXT -> {
        PatternLayoutEncoder e = new PatternLayoutEncoder();
        e.setContext(context);
        e.setPattern(TEXT_PATTERN);
        e.start();
        yield e;
      }
      case JSON -> {
        // One object per line: timestamp (epoch ms), level, threadName, loggerName, mdc,
        // formattedMessage, throwable (null or class, message, stack frames, cause).
        JsonEncoder e = new JsonEncoder();
        e.setContext(context);
        e.setWithSequenceNumber(false);
        e.setWithNanoseconds(false);
        e.setWithContext(false);
        e.setWithMessage(false);
        e.setWithArguments(false);
        e.setWithFormattedMessage(true);
        e.start();
        yield e;
      }
    };
  }

  private static Level level(LogSettings.Level l) {
    return switch (l) {
      case TRACE -> Level.TRACE;
      case DEBUG -> Level.DEBUG;
      case INFO -> Level.INFO;
      case WARN -> Level.WARN;
      case ERROR -> Level.ERROR;
      case OFF -> Level.OFF;
    };
  }

  private static String name(Enum<?> e) {
    return e.name().toLowerCase(java.util.Locale.ROOT);
  }
}
