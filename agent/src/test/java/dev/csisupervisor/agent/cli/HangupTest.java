package dev.csisupervisor.agent.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** SIGHUP reaches the installed action (the agent's config reload). */
class HangupTest {
  @Test
  void sighup_runsTheAction_andDoesNotEndTheJvm() throws Exception {
    CountDownLatch hup = new CountDownLatch(1);
    assertTrue(Hangup.onHangup(hup::countDown), "sun.misc.Signal is available on this JDK");
    Process kill = new ProcessBuilder("kill", "-HUP", Long.toString(ProcessHandle.current().pid()))
        .start();
    assertEquals(0, kill.waitFor());
    assertTrue(hup.await(10, TimeUnit.SECONDS), "the handler ran");
  }
}
