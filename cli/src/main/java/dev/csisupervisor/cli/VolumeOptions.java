package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.VolumeAccess;
import dev.csisupervisor.common.SecretsFiles;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.List;
import java.util.Map;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/** The options the {@code volume} subcommands share: which volume, how it is accessed, secrets, waits. */
final class VolumeOptions {
  private VolumeOptions() {}

  /** A required {@code --alloc=ALLOC_ID}. */
  static OptionSpec.Builder allocOption() {
    return CommandSpecs.option("--alloc", "ALLOC_ID", String.class).required(true);
  }

  /** The options every volume command that names a volume has. */
  static final class Target {
    private final OptionSpec plugin;
    private final OptionSpec volume;

    Target(CommandSpec spec) {
      plugin = CommandSpecs.add(spec, CommandSpecs.option("--plugin", "ID", String.class, "The plugin's id.")
          .required(true));
      volume = CommandSpecs.add(spec, CommandSpecs.option("--volume", "VOLUME_ID", String.class,
          "The volume's id.").required(true));
    }

    String plugin() {
      return CommandSpecs.value(plugin);
    }

    String volume() {
      return CommandSpecs.value(volume);
    }
  }

  /** How the volume is accessed. */
  static final class Access {
    private final OptionSpec accessMode;
    private final OptionSpec block;
    private final OptionSpec fsType;
    private final OptionSpec mountFlags;
    private final OptionSpec mountGroup;

    Access(CommandSpec spec) {
      accessMode = CommandSpecs.add(spec, CommandSpecs.option("--access-mode", "MODE", String.class,
          "CSI access mode: single-node-writer (default), single-node-reader-only, "
              + "multi-node-reader-only, multi-node-single-writer, multi-node-multi-writer, "
              + "single-node-single-writer, single-node-multi-writer.").defaultValue("single-node-writer"));
      block = CommandSpecs.add(spec, CommandSpecs.flag("--block", "A raw block device instead of a file system mount."));
      fsType = CommandSpecs.add(spec, CommandSpecs.option("--fs-type", "TYPE", String.class,
          "File system type (mount).").defaultValue(""));
      mountFlags = CommandSpecs.add(spec, CommandSpecs.option("--mount-flag", "FLAG", List.class,
          "A mount flag (repeatable).").auxiliaryTypes(String.class));
      mountGroup = CommandSpecs.add(spec, CommandSpecs.option("--mount-group", "GID", String.class,
          "The group that should own the mounted volume (VOLUME_MOUNT_GROUP).").defaultValue(""));
    }

    VolumeAccess proto() {
      List<String> flags = CommandSpecs.value(mountFlags);
      return VolumeAccess.newBuilder().setAccessType(CommandSpecs.isSet(block) ? "block" : "mount")
          .setFsType(CommandSpecs.value(fsType)).addAllMountFlags(flags == null ? List.of() : flags)
          .setAccessMode(CommandSpecs.value(accessMode)).setVolumeMountGroup(CommandSpecs.value(mountGroup)).build();
    }
  }

  /** {@code --secrets-file}. */
  static final class SecretsFile {
    private final OptionSpec file;

    SecretsFile(CommandSpec spec) {
      file = CommandSpecs.add(spec, CommandSpecs.option("--secrets-file", "FILE", Path.class,
          "Secrets for the plugin: one key=value per line (# comments). Never on the command line."));
    }

    /** The file given, or null. */
    Path file() {
      return CommandSpecs.value(file);
    }

    Map<String, String> read(PrintWriter err) {
      return file() == null ? Map.of() : readSecrets(file(), err);
    }
  }

  /** {@code --wait}: how long an unmount or a release waits before it answers "pending". */
  static final class Wait {
    private final OptionSpec seconds;

    Wait(CommandSpec spec) {
      seconds = CommandSpecs.add(spec, CommandSpecs.option("--wait", "SECONDS", int.class,
          "How long to wait for it to finish (default ${DEFAULT-VALUE}).").defaultValue("30"));
    }

    /** The wait, checked. */
    int seconds(CommandSpec spec) {
      int seconds = CommandSpecs.value(this.seconds);
      if (seconds < 1) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--wait must be >= 1, got " + seconds);
      }
      return seconds;
    }
  }

  /**
   * A secrets file: {@code key=value} per line, blank lines and {@code #} comments ignored; the
   * value is everything after the first {@code =}. Warns (never shows a value) if others may read it.
   *
   * @throws CommandLine.ParameterException naming the file and line
   */
  static Map<String, String> readSecrets(Path file, PrintWriter err) {
    try {
      Set<PosixFilePermission> mode = Files.getPosixFilePermissions(file);
      if (mode.contains(PosixFilePermission.OTHERS_READ) || mode.contains(PosixFilePermission.GROUP_READ)) {
        err.println("csi-agent: warning: secrets file " + file + " is readable by others; chmod 600 it");
      }
    } catch (IOException | UnsupportedOperationException e) {
      // not readable (said below) or not a POSIX file system: nothing to warn about
    }
    try {
      return SecretsFiles.read(file);
    } catch (IOException e) {
      throw new IllegalArgumentException("--secrets-file " + file + ": cannot read it: " + e.getCause().getMessage());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--secrets-file: " + e.getMessage());
    }
  }

  /** {@code k=v} options into a map. */
  static Map<String, String> pairs(Map<String, String> given) {
    return given == null ? Map.of() : given;
  }
}
