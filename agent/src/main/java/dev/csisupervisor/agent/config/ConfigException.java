package dev.csisupervisor.agent.config;

import dev.csisupervisor.common.Printable;
import java.nio.file.Path;
import java.util.List;

/**
 * The config file could not be read or is invalid. The message names the file and, for each
 * problem, the field (as a path like {@code plugins[1].type}) and what is wrong with it.
 */
public final class ConfigException extends Exception {
  private static final long serialVersionUID = 1L;

  private final transient Path file;
  private final List<String> problems;

  public ConfigException(Path file, List<String> problems) {
    this(file, problems.stream().map(Printable::escape).toList(), true);
  }

  private ConfigException(Path file, List<String> printable, boolean escaped) {
    super(message(file, printable));
    this.file = file;
    this.problems = List.copyOf(printable);
  }

  public ConfigException(Path file, String problem) {
    this(file, List.of(problem));
  }

  /** The config file. */
  public Path file() {
    return file;
  }

  /** One line per problem, each starting with the field it is about. */
  public List<String> problems() {
    return problems;
  }

  private static String message(Path file, List<String> problems) {
    if (problems.size() == 1) {
      return file + ": " + problems.get(0);
    }
    StringBuilder sb = new StringBuilder(file + ": " + problems.size() + " problems:");
    for (String p : problems) {
      sb.append("\n  ").append(p);
    }
    return sb.toString();
  }
}
