package dev.csisupervisor.agent;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Debian's headless Chromium, run as a process: the DOM of a page after its scripts ran, or a screenshot. Where it is
 * not installed the test is skipped, saying so (CI installs it: {@code .ci/run}).
 */
final class Chromium {
  private static final List<Path> CANDIDATES = List.of(Path.of("/usr/bin/chromium"),
      Path.of("/usr/bin/chromium-browser"), Path.of("/usr/bin/google-chrome"));

  private Chromium() {}

  static Optional<Path> binary() {
    return CANDIDATES.stream().filter(Files::isExecutable).findFirst();
  }

  /** The binary, or the test is skipped saying why. */
  static Path require() {
    Optional<Path> b = binary();
    Assumptions.assumeTrue(b.isPresent(), "chromium is not installed (apt-get install chromium; .ci/run installs"
        + " it in CI): the browser test is skipped");
    return b.get();
  }

  /** The DOM of {@code url} after its scripts ran for up to {@code virtualMillis} of virtual time. */
  static String dumpDom(String url, Path profile, long virtualMillis) throws IOException, InterruptedException {
    return run(profile, List.of("--virtual-time-budget=" + virtualMillis, "--dump-dom", url));
  }

  /** A PNG of {@code url} as a 1280 x {@code height} window shows it. */
  static void screenshot(String url, Path profile, Path png, int height) throws IOException, InterruptedException {
    run(profile, List.of("--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=1280," + height,
        "--screenshot=" + png, url));
    assertTrue(Files.size(png) > 0, "no screenshot written to " + png);
  }

  private static String run(Path profile, List<String> args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(require().toString(), "--headless", "--no-sandbox", "--disable-gpu",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--user-data-dir=" + profile));
    cmd.addAll(args);
    Path out = Files.createTempFile(profile.getParent(), "chromium-", ".out");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD)
        .start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      throw new AssertionError("chromium did not finish within 60 s: " + cmd);
    }
    String dom = Files.readString(out, StandardCharsets.UTF_8);
    assertTrue(p.exitValue() == 0, "chromium exited " + p.exitValue() + ": " + cmd);
    return dom;
  }
}
