package dev.csisupervisor.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;

/** Describes the machine for the results tables: date, cores, JDK, CPU model, load, memory. */
final class Env {
  private Env() {}

  public static void main(String[] args) {
    System.out.println(describe());
  }

  static String describe() {
    Runtime rt = Runtime.getRuntime();
    return String.join("\n",
        "date:    " + Instant.now().truncatedTo(ChronoUnit.SECONDS),
        "cores:   " + rt.availableProcessors() + " (availableProcessors)",
        "jdk:     " + System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version")
            + " (" + System.getProperty("java.vendor") + ")",
        "cpu:     " + cpuModel(),
        "load:    " + loadAverage() + " (1/5/15 min)",
        "memory:  " + memTotal(),
        "os:      " + System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
            + System.getProperty("os.arch"));
  }

  static String loadAverage() {
    try {
      String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return f[0] + " " + f[1] + " " + f[2];
    } catch (IOException | RuntimeException e) {
      return "unknown";
    }
  }

  private static String cpuModel() {
    return procLine("/proc/cpuinfo", "model name");
  }

  private static String memTotal() {
    return procLine("/proc/meminfo", "MemTotal");
  }

  private static String procLine(String file, String key) {
    try {
      List<String> lines = Files.readAllLines(Path.of(file));
      for (String l : lines) {
        if (l.startsWith(key)) {
          return l.substring(l.indexOf(':') + 1).trim();
        }
      }
    } catch (IOException e) {
      // not Linux: say so below
    }
    return "unknown";
  }
}
