package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a launched plugin's process runs: its {@code command} and {@code args}; for an artifact,
 * the entry in the installed revision; for {@code builtin:mock-plugin}, a small JVM running the
 * mock plugin from the agent's own class path.
 */
final class LaunchCommand {
  static final String MOCK_PLUGIN_MAIN = "dev.csisupervisor.mockplugin.MockCsiPlugin";

  private LaunchCommand() {}

  /** The full command line, the artifact's entry resolved in {@code revisionDir}. */
  static List<String> of(PluginSpec spec, Path revisionDir) {
    List<String> argv = new ArrayList<>();
    if (spec.artifact() != null) {
      requireNonNull(revisionDir, "revisionDir");
      argv.add(revisionDir.resolve(spec.artifact().entry()).normalize().toString());
    } else if (spec.command().equals(ConfigLoader.BUILTIN_MOCK_PLUGIN)) {
      argv.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      // Small and quick to start: the mock plugin needs little.
      argv.add("-XX:+UseSerialGC");
      argv.add("-XX:TieredStopAtLevel=1");
      argv.add("-Xmx64m");
      argv.add("-cp");
      argv.add(absoluteClassPath());
      argv.add(MOCK_PLUGIN_MAIN);
    } else {
      argv.add(spec.command());
    }
    argv.addAll(spec.args());
    return argv;
  }

  private static String absoluteClassPath() {
    List<String> parts = new ArrayList<>();
    for (String p : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!p.isEmpty()) {
        parts.add(Path.of(p).toAbsolutePath().toString());
      }
    }
    return String.join(File.pathSeparator, parts);
  }
}
