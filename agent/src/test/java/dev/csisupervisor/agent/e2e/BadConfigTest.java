package dev.csisupervisor.agent.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code csi-agent run} with a bad config: exit 2 and a message naming the problem. */
class BadConfigTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  @TempDir Path dir;

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', textBlock = """
      unknown field   | plugins: [{id: a, type: node, command: /bin/a, colour: red}]   | plugins[0].colour: unknown field
      missing id      | plugins: [{type: node, command: /bin/a}]                       | plugins[0].id: missing
      duplicate id    | plugins: [{id: a, type: node, command: /x}, {id: a, type: node, command: /y}] | plugins[1].id: duplicate id "a" (also plugins[0])
      bad type        | plugins: [{id: a, type: block, command: /bin/a}]               | plugins[0].type: "block" is not a plugin type
      socket too long | plugins: [{id: a, type: node, socket: /run/ssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss/csi.sock}] | over the unix socket limit of 107 bytes
      bad artifact sha | plugins: [{id: a, type: node, artifact: {url: 'http://h/p', sha256: 'cafe'}}] | plugins[0].artifact.sha256: "cafe" must be 64 hex digits
      bad cpu limit   | plugins: [{id: a, type: node, command: /bin/a, max_cpu_percent: lots}] | plugins[0].max_cpu_percent: "lots" is not a number
      """)
  void badConfig_exitsTwo_namingTheProblem(String what, String plugins, String expected)
      throws Exception {
    Path config = dir.resolve("agent.yaml");
    Files.writeString(config, "data_dir: " + dir.resolve("data") + "\n" + plugins + "\n");
    Cli.Result r = Cli.run(dir, TIMEOUT, "run", "--config", config.toString());
    assertEquals(2, r.code(), r.toString());
    assertTrue(r.err().contains(config.toString()), "names the file: " + r);
    assertTrue(r.err().contains(expected), "names the problem: " + r);
    assertTrue(Files.notExists(dir.resolve("data")), "nothing was started");
  }

  @Test
  void unreadableConfig_exitsTwo() throws Exception {
    Path missing = dir.resolve("nope.yaml");
    Cli.run(dir, TIMEOUT, "run", "--config", missing.toString()).assertExit(2,
        missing + ": cannot read config file: no such file");

    Cli.run(dir, TIMEOUT, "run", "--config", dir.toString()).assertExit(2, "it is a directory");
  }

  @Test
  void unknownOption_exitsTwo() throws Exception {
    Cli.run(dir, TIMEOUT, "plugins", "--colour").assertExit(2, "Unknown option: '--colour'");
  }

  @Test
  void noAgent_exitsOne_sayingSo() throws Exception {
    Path socket = dir.resolve("agent.sock");
    Cli.run(dir, TIMEOUT, "plugins", "--admin-socket", socket.toString()).assertExit(1,
        "no agent is running at " + socket);
  }
}
