package dev.csisupervisor.agent.cli;

/**
 * The {@code csi-agent} program: {@code run}, {@code plugins}, {@code plugin}, {@code events},
 * {@code status}, {@code state inspect}, {@code demo}. Exit codes: 0 ok, 1 failure, 2 usage or
 * config error.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    configureLogging(args);
    System.exit(CsiAgentCommand.execute(args));
  }

  /**
   * slf4j-simple reads its settings when the first logger is made: set them first. The daemon
   * logs at info to stderr; the CLI commands only warnings, so their output stays readable.
   */
  static void configureLogging(String[] args) {
    String command = args.length > 0 ? args[0] : "";
    boolean verbose = false;
    for (String a : args) {
      verbose |= a.equals("--verbose") || a.equals("-v");
    }
    // The demo prints its own progress: the agent's log would interleave with it.
    String level = command.equals("run") || verbose ? "info"
        : command.equals("demo") ? "error" : "warn";
    setDefault("org.slf4j.simpleLogger.defaultLogLevel", level);
    setDefault("org.slf4j.simpleLogger.logFile", "System.err");
    setDefault("org.slf4j.simpleLogger.showDateTime", "true");
    setDefault("org.slf4j.simpleLogger.dateTimeFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX");
    setDefault("org.slf4j.simpleLogger.showThreadName", "false");
    setDefault("org.slf4j.simpleLogger.showShortLogName", "true");
    setDefault("org.slf4j.simpleLogger.levelInBrackets", "true");
    // gRPC's and Netty's own chatter is not the agent's business at info.
    setDefault("org.slf4j.simpleLogger.log.io.grpc", "warn");
    setDefault("org.slf4j.simpleLogger.log.io.netty", "warn");
    setDefault("org.slf4j.simpleLogger.log.org.mapdb", "warn");
  }

  private static void setDefault(String key, String value) {
    if (System.getProperty(key) == null) {
      System.setProperty(key, value);
    }
  }
}
