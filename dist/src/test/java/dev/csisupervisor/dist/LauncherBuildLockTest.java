package dev.csisupervisor.dist;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The source checkout's launcher ({@code ./csi-agent} at the repository's root) on a stale tree, started twice at
 * once as from two terminals: one build, and both run the jar it made. The launcher is copied as it is into a
 * checkout of its own whose {@code mvnw} is a stand-in that logs its start and end, and whose
 * {@code dist/src/bin/csi-agent} logs when it runs. The stand-in build does not end until the test lets it (a line
 * through a FIFO), after the second caller has said it waits: the two overlap by construction, not by a build that
 * takes long enough (a second caller started late on a busy machine would have found the jar current).
 */
@Timeout(60)
class LauncherBuildLockTest {
  private static final Path LAUNCHER = Path.of("..", "csi-agent");

  @TempDir Path root;

  @Test
  void twoCallersOnAStaleTree_buildOnce_andBothRunAfterTheBuild() throws Exception {
    Path log = root.resolve("log");
    Files.copy(LAUNCHER, root.resolve("csi-agent"));
    executable(root.resolve("csi-agent"));
    Files.createDirectories(root.resolve("agent/src/main/java"));
    Files.writeString(root.resolve("pom.xml"), "<project/>\n");
    Files.writeString(root.resolve("agent/pom.xml"), "<project/>\n");
    Path source = root.resolve("agent/src/main/java/A.java");
    Files.writeString(source, "class A {}\n");
    Path jar = root.resolve("agent/target/csi-agent.jar");
    Files.createDirectories(jar.getParent());
    Files.writeString(jar, "old jar\n");
    Files.writeString(root.resolve("agent/target/csi-agent.classpath"), "\n");
    Instant before = Instant.now().minusSeconds(60);
    for (Path p : List.of(jar, root.resolve("agent/target/csi-agent.classpath"), root.resolve("pom.xml"),
        root.resolve("agent/pom.xml"))) {
      Files.setLastModifiedTime(p, FileTime.from(before));
    }
    // The source is newer than the jar: stale.
    Path release = root.resolve("release.fifo");
    assertEquals(0, new ProcessBuilder("mkfifo", release.toString()).inheritIO().start().waitFor());
    script(root.resolve("mvnw"), "echo \"build-start $(date +%s%N)\" >>" + log + "\nread -r _ <" + release + "\n"
        + "echo 'new jar' >agent/target/csi-agent.jar\necho \"build-end $(date +%s%N)\" >>" + log + "\n");
    script(root.resolve("dist/src/bin/csi-agent"), "echo \"run $(date +%s%N) $(cat \"$CSI_AGENT_JAR\")\" >>" + log
        + "\n");

    Process first = start();
    await().atMost(Duration.ofSeconds(30))
        .until(() -> Files.exists(log) && Files.readString(log).contains("build-start"));
    Process second = start();
    BufferedReader secondLines =
        new BufferedReader(new InputStreamReader(second.getInputStream(), StandardCharsets.UTF_8));
    StringBuilder secondSaid = new StringBuilder();
    for (String line; !secondSaid.toString().contains("waiting for another ./csi-agent's build"); ) {
      line = secondLines.readLine();
      assertTrue(line != null, "the second caller ended without waiting for the build:\n" + secondSaid);
      secondSaid.append(line).append('\n');
    }
    Files.writeString(release, "built\n"); // the build ends now
    String firstOut = output(first);
    java.io.StringWriter rest = new java.io.StringWriter();
    secondLines.transferTo(rest);
    assertTrue(second.waitFor(1, TimeUnit.MINUTES), "the launcher did not end");
    String secondOut = secondSaid.append(rest).toString();
    assertEquals(0, first.exitValue(), firstOut);
    assertEquals(0, second.exitValue(), secondOut);

    List<String> lines = Files.readAllLines(log);
    assertEquals(1, lines.stream().filter(l -> l.startsWith("build-start")).count(),
        "one build for two callers:\n" + String.join("\n", lines) + "\n" + firstOut + secondOut);
    long buildEnd = lines.stream().filter(l -> l.startsWith("build-end")).mapToLong(l -> Long.parseLong(l.split(" ")[1]))
        .findFirst().orElseThrow(() -> new AssertionError("the build did not end: " + lines));
    List<String> runs = lines.stream().filter(l -> l.startsWith("run ")).toList();
    assertEquals(2, runs.size(), "both callers ran:\n" + String.join("\n", lines));
    for (String run : runs) {
      String[] parts = run.split(" ", 3);
      assertTrue(Long.parseLong(parts[1]) >= buildEnd, "a caller ran before the build ended:\n" + lines);
      assertEquals("new jar", parts[2], "a caller ran the old jar:\n" + lines);
    }
    assertTrue((firstOut + secondOut).contains("waiting for another ./csi-agent's build"),
        "the second caller says why it waits:\n" + firstOut + secondOut);
  }

  private Process start() throws IOException {
    return new ProcessBuilder(root.resolve("csi-agent").toString(), "plugins").redirectErrorStream(true).start();
  }

  private static String output(Process p) throws IOException, InterruptedException {
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(1, TimeUnit.MINUTES), "the launcher did not end");
    return out;
  }

  private static void script(Path file, String body) throws IOException {
    Files.createDirectories(file.getParent());
    Files.writeString(file, "#!/usr/bin/env bash\nset -euo pipefail\n" + body);
    executable(file);
  }

  private static void executable(Path file) throws IOException {
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
  }
}
