package dev.csisupervisor.agent.commands;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * SIGHUP reaches the installed action, unless this process was started with SIGHUP ignored
 * (under nohup): then {@link Signals#handle} says so. Which case applies is read from the kernel
 * ({@code /proc/self/status}), so the test checks the right thing wherever the build runs; the
 * agent's child-process tests ({@code SignalsEndToEndTest}) start both cases explicitly.
 */
class HangupTest {
  private static final int SIGHUP = 1;

  /** Whether the kernel has this process ignoring {@code signal} (SigIgn of /proc/self/status). */
  static boolean ignored(int signal) throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("SigIgn:")) {
        return new BigInteger(line.substring(7).strip(), 16).testBit(signal - 1);
      }
    }
    throw new AssertionError("no SigIgn in /proc/self/status");
  }

  @Test
  void sighup_runsTheAction_orReportsThatItIsIgnored() throws Exception {
    CountDownLatch hup = new CountDownLatch(1);
    boolean ignoredAtStart = ignored(SIGHUP);
    Signals.Outcome o = Signals.handle("HUP", hup::countDown);
    if (ignoredAtStart) {
      assertEquals(Signals.Outcome.IGNORED, o, "a SIGHUP ignored since start-up never arrives");
      assertTrue(ignored(SIGHUP), "and it stays ignored: the JVM does not end on SIGHUP");
      return;
    }
    assertEquals(Signals.Outcome.INSTALLED, o);
    Process kill = new ProcessBuilder("kill", "-HUP", Long.toString(ProcessHandle.current().pid()))
        .start();
    assertEquals(0, kill.waitFor());
    assertTrue(hup.await(10, TimeUnit.SECONDS), "the handler ran");
  }
}
