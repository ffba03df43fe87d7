package dev.csisupervisor.agent.config;

import static dev.csisupervisor.agent.config.YamlFiles.failsToLoad;
import static dev.csisupervisor.agent.config.YamlFiles.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What operators run into with the config: interpolation, every problem at once, bad input. */
class ConfigOperatorTest {
  @TempDir Path dir;

  private Path executable(String name) throws IOException {
    Path p = dir.resolve(name);
    Files.writeString(p, "#!/bin/sh\nexit 0\n");
    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
    return p;
  }

  // ---- interpolation -----------------------------------------------------------------------

  @Test
  void argsCommandAndEnv_interpolateThePluginsVariables() throws Exception {
    Path bin = executable("hostpath-1.15");
    AgentConfig c = ConfigLoader.load(write(dir, """
        data_dir: /var/lib/a
        csi_root: /run/csi
        plugins:
          - id: hostpath
            type: monolith
            command: %s/hostpath-${VERSION}
            args: ["--endpoint=${CSI_ENDPOINT}", "--nodeid=${CSI_NODE_ID}",
                   "--drivername=${CSI_PLUGIN_ID}.csi.k8s.io", "--state=${CSI_PLUGIN_DIR}/s",
                   "--v=${LEVEL}", "--literal=$${CSI_ENDPOINT}", "--cost=$5", "$"]
            env: {VERSION: "1.15", LEVEL: "5", WHERE: "${CSI_PLUGIN_DIR}", KEEP: "$${X}"}
        """.formatted(dir)));
    PluginSpec p = c.plugins().get(0);
    assertEquals(bin.toString(), p.command());
    assertEquals(List.of("--endpoint=unix:///run/csi/monolith/hostpath/csi.sock",
        "--nodeid=" + Interpolation.nodeId(), "--drivername=hostpath.csi.k8s.io",
        "--state=/run/csi/monolith/hostpath/s", "--v=5", "--literal=${CSI_ENDPOINT}",
        "--cost=$5", "$"), p.args());
    assertEquals(Map.of("VERSION", "1.15", "LEVEL", "5", "WHERE", "/run/csi/monolith/hostpath",
        "KEEP", "${X}"), p.env());
    assertFalse(Interpolation.nodeId().isBlank());
  }

  @Test
  void unknownVariable_isAConfigErrorNamingTheField() throws Exception {
    ConfigException e = failsToLoad(dir, """
        data_dir: /var/lib/a
        plugins:
          - id: a
            type: node
            command: /bin/${NOPE}
            args: [--ok, "--endpoint=$(CSI_ENDPOINT)", "--x=${CSI_ENDPOINTT}"]
            env: {A: "${B}", B: "b"}
        """);
    List<String> p = e.problems();
    assertTrue(p.stream().anyMatch(s -> s.startsWith("plugins[0].command: unknown variable"
        + " ${NOPE} (known: ${CSI_ENDPOINT}")), e.getMessage());
    assertTrue(p.stream().anyMatch(s -> s.startsWith("plugins[0].args[2]: unknown variable"
        + " ${CSI_ENDPOINTT}")), e.getMessage());
    // env values see the agent's variables, not each other.
    assertTrue(p.stream().anyMatch(s -> s.startsWith("plugins[0].env.A: unknown variable ${B}")),
        e.getMessage());
    assertEquals(3, p.size(), e.getMessage());
  }

  @Test
  void agentVariables_cannotBeSetInEnv() throws Exception {
    ConfigException e = failsToLoad(dir, """
        data_dir: /var/lib/a
        plugins: [{id: a, type: node, command: /bin/true, env: {CSI_NODE_ID: x, CSI_ENDPOINT: y}}]
        """);
    assertTrue(e.problems().contains("plugins[0].env.CSI_NODE_ID: set by the agent for every"
        + " launched plugin; remove it"), e.getMessage());
    assertTrue(e.problems().contains("plugins[0].env.CSI_ENDPOINT: set by the agent for every"
        + " launched plugin; remove it"), e.getMessage());
  }

  // ---- commands that cannot run --------------------------------------------------------------

  @Test
  void commandThatIsADirectoryOrNotExecutable_isAConfigError() throws Exception {
    Path plain = dir.resolve("plain");
    Files.writeString(plain, "not a program");
    Files.setPosixFilePermissions(plain, PosixFilePermissions.fromString("rw-r--r--"));
    ConfigException e = failsToLoad(dir, """
        data_dir: /var/lib/a
        plugins:
          - {id: a, type: node, command: %s}
          - {id: b, type: node, command: ./plain}
          - {id: c, type: node, command: /does/not/exist/yet}
        """.formatted(dir));
    assertEquals(List.of("plugins[0].command: " + dir + " is a directory, not an executable file",
        "plugins[1].command: " + plain + " is not executable (chmod +x, or check the path)"),
        e.problems());
  }

  // ---- every problem at once -----------------------------------------------------------------

  @Test
  void readmeExample_unknownKeyAndDuplicateId_bothReported() throws Exception {
    ConfigException e = failsToLoad(dir, """
        data_dir: /var/lib/a
        colour: blue
        plugins:
          - id: ebs
            type: node
            command: /bin/true
            colour: red
          - id: nfs
            type: node
            socket: /run/nfs.sock
          - id: ebs
            type: nodes
            command: /bin/true
            restart: {attempts: 1, speed: 3}
        """);
    List<String> p = e.problems();
    assertTrue(p.contains("plugins[2].id: duplicate id \"ebs\" (also plugins[0])"),
        e.getMessage());
    assertTrue(p.stream().anyMatch(s -> s.startsWith("colour: unknown field (line 2, column 1)")),
        e.getMessage());
    assertTrue(p.stream().anyMatch(s -> s.startsWith("plugins[0].colour: unknown field (line 7,")
        && s.contains("known fields: args, artifact, command")), e.getMessage());
    assertTrue(p.stream().anyMatch(s -> s.startsWith("plugins[2].restart.speed: unknown field")),
        e.getMessage());
    // The duplicate's own problems are not hidden by the duplicate.
    assertTrue(p.stream().anyMatch(s -> s.startsWith("plugins[2].type: \"nodes\" is not a plugin"
        + " type")), e.getMessage());
    assertEquals(5, p.size(), e.getMessage());
    assertTrue(e.getMessage().contains(": 5 problems:"), e.getMessage());
  }

  @Test
  void tenMegabyteOneLineConfig_isRejectedAtOnce() throws Exception {
    Path f = dir.resolve("huge.yaml");
    byte[] line = new byte[10 * 1024 * 1024];
    java.util.Arrays.fill(line, (byte) 'a');
    Files.write(f, line);
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(f));
    assertEquals(List.of("config file is 10485760 bytes, over the limit of 1048576 bytes (is it"
        + " the right file?)"), e.problems());
    // "At once": refused by its size, unread. A sparse 64 GiB file could not be read into this JVM's heap at all.
    Path sparse = dir.resolve("sparse.yaml");
    try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(sparse.toFile(), "rw")) {
      raf.setLength(64L << 30);
    }
    assertEquals(List.of("config file is " + (64L << 30) + " bytes, over the limit of 1048576 bytes (is it"
        + " the right file?)"), assertThrows(ConfigException.class, () -> ConfigLoader.load(sparse)).problems());
    assertThrows(ConfigException.class,
        () -> ConfigLoader.parse(new String(line, StandardCharsets.US_ASCII), f));
  }

  @Test
  void aMegabyteOfUnknownKeys_isReported_first100Located() throws Exception {
    StringBuilder y = new StringBuilder("data_dir: /var/lib/a\nplugins: []\n");
    for (int i = 0; y.length() < ConfigLoader.MAX_CONFIG_BYTES - 32; i++) {
      y.append("unknown_key_").append(i).append(": 1\n");
    }
    ConfigException e = failsToLoad(dir, y.toString());
    assertEquals(101, e.problems().size());
    assertTrue(e.problems().get(0).startsWith("unknown_key_0: unknown field (line 3, column 1)"),
        e.problems().get(0));
    assertTrue(e.problems().get(100).matches("\\.\\.\\. and \\d+ more unknown field\\(s\\)"),
        e.problems().get(100));
  }

  @Test
  void dataDirThatIsAFile_isAConfigError() throws Exception {
    Path file = dir.resolve("data");
    Files.writeString(file, "x");
    ConfigException e = failsToLoad(dir, "data_dir: " + file + "\nplugins: []\n");
    assertEquals(List.of("data_dir: " + file + " exists and is not a directory"), e.problems());
  }

  @Test
  void controlCharactersInValues_arePrintedEscaped() throws Exception {
    ConfigException e = failsToLoad(dir, """
        data_dir: /var/lib/a
        plugins: [{id: "a\\e[2J\\rb\\nc", type: node, command: /bin/true}]
        """);
    assertEquals(List.of("plugins[0].id: must be 1 to 128 of A-Z a-z 0-9 . _ -, got"
        + " 'a\\u001b[2J\\u000db\\u000ac'"), e.problems());
    assertFalse(e.getMessage().chars().anyMatch(c -> c == 27 || c == '\r'), e.getMessage());
  }
}
