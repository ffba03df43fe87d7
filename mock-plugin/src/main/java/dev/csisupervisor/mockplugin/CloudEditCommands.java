package dev.csisupervisor.mockplugin;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * What an operator does to a shared cloud behind the CO's back, for tests of a CO's health checks:
 * {@code csi-mock-plugin cloud-mark-abnormal FILE DISK MESSAGE} (an empty MESSAGE: healthy again) and
 * {@code csi-mock-plugin cloud-remove FILE DISK} (the disk and its bytes are gone). The plugins on the cloud answer
 * it at once: ListVolumes and ControllerGetVolume report the condition, or no longer know the disk. Exit codes: 0
 * done, 1 no such cloud file or disk, 2 bad arguments.
 */
abstract class CloudEditCommands implements Callable<Integer> {
  static final int NOT_FOUND_EXIT_CODE = 1;

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "FILE", description = "The cloud file (--cloud of the plugins).")
  Path file;

  @Parameters(index = "1", paramLabel = "DISK", description = "The disk's (volume's) id.")
  String disk;

  private final PrintStream out;

  CloudEditCommands(PrintStream out) {
    this.out = out;
  }

  /** Changes the cloud; what to print. @throws IllegalArgumentException naming what the cloud does not have */
  abstract String edit(SharedCloud cloud);

  @Override
  public Integer call() {
    String name = spec.name();
    if (!Files.isRegularFile(file)) {
      spec.commandLine().getErr().println("csi-mock-plugin " + name + ": no cloud file " + file);
      return NOT_FOUND_EXIT_CODE;
    }
    SharedCloud cloud = new SharedCloud(file, Duration.ZERO);
    if (cloud.find(disk).isEmpty()) {
      spec.commandLine().getErr().println("csi-mock-plugin " + name + ": the cloud has no disk '" + disk + "'");
      return NOT_FOUND_EXIT_CODE;
    }
    try {
      out.println(edit(cloud));
    } catch (IllegalArgumentException e) { // removed meanwhile
      spec.commandLine().getErr().println("csi-mock-plugin " + name + ": " + e.getMessage());
      return NOT_FOUND_EXIT_CODE;
    }
    out.flush();
    return 0;
  }

  @Command(name = "cloud-mark-abnormal", mixinStandardHelpOptions = true,
      description = {"Marks a disk of a shared cloud abnormal: ListVolumes and ControllerGetVolume answer its",
          "volume_condition abnormal with MESSAGE. An empty MESSAGE ('') marks it healthy again."},
      footer = {"", "Exit codes: 0 marked, 1 no such cloud file or disk, 2 bad arguments."})
  static final class MarkAbnormal extends CloudEditCommands {
    @Parameters(index = "2", paramLabel = "MESSAGE", description = "What is wrong with it ('' for nothing).")
    private String message;

    MarkAbnormal(PrintStream out) {
      super(out);
    }

    @Override
    String edit(SharedCloud cloud) {
      cloud.markAbnormal(disk, message);
      return (message.isEmpty() ? "healthy " : "abnormal ") + disk;
    }
  }

  @Command(name = "cloud-remove", mixinStandardHelpOptions = true,
      description = {"Removes a disk from a shared cloud, and its bytes, as if deleted outside the CO: the plugins",
          "no longer list it and answer NOT_FOUND for it. Its attachments go with it."},
      footer = {"", "Exit codes: 0 removed, 1 no such cloud file or disk, 2 bad arguments."})
  static final class Remove extends CloudEditCommands {
    Remove(PrintStream out) {
      super(out);
    }

    @Override
    String edit(SharedCloud cloud) {
      cloud.removeDisk(disk);
      return "removed " + disk;
    }
  }
}
