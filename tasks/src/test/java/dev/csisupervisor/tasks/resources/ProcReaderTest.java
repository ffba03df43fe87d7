package dev.csisupervisor.tasks.resources;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.tasks.resources.ProcReader.ProcCounters;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Parsing {@code /proc/<pid>/stat} and {@code status}: fixtures, then this very process. */
class ProcReaderTest {
  /** A real line (a JVM), with a command name holding spaces and parentheses. */
  static final String STAT = "4242 (java (csi) x) S 1 4242 4242 0 -1 4194560 29110 0 12 0 "
      + "1234 567 0 0 20 0 31 0 987654 3861151744 12345 18446744073709551615 1 1 0 0 0 0 "
      + "0 4096 16796879 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
  static final String STATUS = """
      Name:\tjava
      Umask:\t0022
      State:\tS (sleeping)
      Pid:\t4242
      VmPeak:\t 3900000 kB
      VmSize:\t 3770656 kB
      VmRSS:\t   51200 kB
      RssAnon:\t   40000 kB
      Threads:\t31
      """;

  @TempDir Path proc;

  static void fixture(Path proc, long pid, String stat, String status) throws IOException {
    Path d = Files.createDirectories(proc.resolve(Long.toString(pid)));
    Files.writeString(d.resolve("stat"), stat);
    if (status != null) {
      Files.writeString(d.resolve("status"), status);
    } else {
      Files.deleteIfExists(d.resolve("status"));
    }
  }

  @Test
  void stat_fieldsCountedFromTheLastParenthesis() {
    ProcCounters c = ProcReader.parseStat(4242, STAT, 4096);
    assertEquals(1234 + 567, c.cpuTicks(), "utime + stime");
    assertEquals(987654, c.startTicks());
    assertEquals(12345L * 4096, c.rssBytes());
  }

  @Test
  void status_vmRssInKibibytes() {
    assertEquals(51200L * 1024, ProcReader.parseStatusRss(STATUS));
    assertEquals(-1, ProcReader.parseStatusRss("Name:\tkthreadd\nState:\tS\n"),
        "kernel threads have no VmRSS");
  }

  @Test
  void read_prefersStatusRss_fallsBackToStat() throws Exception {
    ProcReader r = new ProcReader(proc, 100, 4096);
    fixture(proc, 4242, STAT, STATUS);
    ProcCounters c = r.read(4242).orElseThrow();
    assertEquals(51200L * 1024, c.rssBytes());
    assertEquals(1801, c.cpuTicks());
    fixture(proc, 4242, STAT, null);
    assertEquals(12345L * 4096, r.read(4242).orElseThrow().rssBytes());
  }

  @Test
  void read_missingProcess_isEmpty() {
    assertTrue(new ProcReader(proc, 100, 4096).read(99999).isEmpty());
  }

  @Test
  void malformedStat_isAnErrorNamingTheFile() {
    IllegalArgumentException noName = assertThrows(IllegalArgumentException.class,
        () -> ProcReader.parseStat(7, "7 java S 1 2 3", 4096));
    assertTrue(noName.getMessage().contains("/proc/7/stat has no command name"),
        noName.getMessage());
    IllegalArgumentException shortLine = assertThrows(IllegalArgumentException.class,
        () -> ProcReader.parseStat(7, "7 (java) S 1 2 3", 4096));
    assertTrue(shortLine.getMessage().contains("expected at least 24"), shortLine.getMessage());
    IllegalArgumentException text = assertThrows(IllegalArgumentException.class,
        () -> ProcReader.parseStat(7, STAT.replace(" 1234 ", " lots "), 4096));
    assertTrue(text.getMessage().contains("non-numeric"), text.getMessage());
  }

  @Test
  void system_readsThisProcess() {
    long self = ProcessHandle.current().pid();
    ProcCounters c = ProcReader.system().read(self).orElseThrow();
    assertTrue(c.rssBytes() > 10L * 1024 * 1024, "a JVM has more than 10 MiB resident: " + c);
    assertTrue(c.cpuTicks() > 0, "and has used some CPU: " + c);
    assertTrue(c.startTicks() > 0);
  }
}
