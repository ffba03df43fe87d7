package dev.csisupervisor.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * picocli command models built with its programmatic API rather than read from annotations. Reading a command's
 * annotations by reflection (and the annotation proxies the JDK makes for it at run time, which no class-data
 * archive holds) was the largest part of a CLI command's start: 50 ms for {@code plugins}, 70 ms for
 * {@code volume mount}, against 20 ms for the same models built here (benchmarks/README.md section 14). The models
 * say what the annotations said; {@code CliTextTest} holds every help text and usage error to what they were.
 *
 * <p>An option's value lives in its {@link OptionSpec} (picocli's default binding), read back with {@link #value}
 * and {@link #isSet}: no setter lambdas on picocli's interfaces (the class-data archive cannot hold those).
 */
public final class CommandSpecs {
  private CommandSpecs() {}

  /**
   * A command whose user object is {@code command} (picocli calls it: a {@link java.util.concurrent.Callable} or
   * {@link Runnable}), with picocli's standard {@code -h, --help} and {@code -V, --version}, as
   * {@code mixinStandardHelpOptions = true} gives them.
   */
  public static CommandSpec command(Object command, String name, String... description) {
    CommandSpec spec = CommandSpec.wrapWithoutInspection(command);
    spec.name(name);
    spec.usageMessage().description(description);
    spec.addOption(OptionSpec.builder("-h", "--help").usageHelp(true)
        .description("Show this help message and exit.").build());
    spec.addOption(OptionSpec.builder("-V", "--version").versionHelp(true)
        .description("Print version information and exit.").build());
    return spec;
  }

  /** An option taking one value of {@code type}, shown as {@code --name=PARAM}. */
  static OptionSpec.Builder option(String name, String paramLabel, Class<?> type, String... description) {
    return OptionSpec.builder(name).paramLabel(paramLabel).type(type).description(description);
  }

  /** A repeatable {@code --name=K=V} option: a map of strings. */
  static OptionSpec.Builder map(String name, String paramLabel, String... description) {
    return option(name, paramLabel, java.util.Map.class, description).auxiliaryTypes(String.class, String.class);
  }

  /** An option without a value: false unless given. */
  static OptionSpec.Builder flag(String[] names, String... description) {
    return OptionSpec.builder(names).type(boolean.class).initialValue(false).description(description);
  }

  /** {@link #flag(String[], String...)} of one name. */
  static OptionSpec.Builder flag(String name, String... description) {
    return flag(new String[] {name}, description);
  }

  /** Builds {@code option} into {@code spec}; the option, to read its value after parsing. */
  static OptionSpec add(CommandSpec spec, OptionSpec.Builder option) {
    OptionSpec built = option.build();
    spec.addOption(built);
    return built;
  }

  /** The value parsed (or defaulted) into {@code option}; null if it has none. */
  static <T> T value(OptionSpec option) {
    return option.getValue();
  }

  /** Whether the flag {@code option} was given. */
  static boolean isSet(OptionSpec option) {
    return Boolean.TRUE.equals(option.getValue());
  }
}
