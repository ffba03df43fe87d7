package dev.csisupervisor.agent.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLI's reading of a config's admin socket against the daemon's: on every file the quick scanner reads, the
 * same path as {@code ConfigLoader.load(file).adminSocket()}; on every file it is not sure of, no answer of its
 * own (the daemon's reading then answers, errors word for word).
 */
class AdminSocketReaderTest {
  @TempDir Path dir;

  private static final String PLUGINS = "plugins: []\n";

  /** The daemon's socket for {@code yaml} as the file {@code dir/sub/agent.yaml}. */
  private Path daemon(String yaml) throws ConfigException {
    return ConfigLoader.parse(yaml, file()).adminSocket();
  }

  private Path file() {
    return dir.resolve("sub").resolve("agent.yaml");
  }

  private Optional<Path> quick(String yaml) {
    return AdminSocketReader.quick(yaml, file());
  }

  private void assertQuickIsTheDaemons(String yaml) throws ConfigException {
    Optional<Path> quick = quick(yaml);
    assertTrue(quick.isPresent(), "the scanner should read this one:\n" + yaml);
    assertEquals(daemon(yaml), quick.get(), yaml);
  }

  @Test
  void usualFiles_readQuickly_asTheDaemonReadsThem() throws Exception {
    for (String yaml : List.of(
        "data_dir: /var/lib/csi-agent\n" + PLUGINS,
        "data_dir: /var/lib/csi-agent        # state/, agent.sock\n" + PLUGINS,
        "# a comment\n\ndata_dir: data\n" + PLUGINS,
        "data_dir: ./data/../state\n" + PLUGINS,
        "data_dir: ../elsewhere\n" + PLUGINS,
        "data_dir: \"/var/lib/with space\"\n" + PLUGINS,
        "data_dir: 'it''s/here' # quoted\n" + PLUGINS,
        "data_dir: '123'\n" + PLUGINS,
        "data_dir: \"yes\"\n" + PLUGINS,
        PLUGINS + "data_dir: /d\nadmin_socket: /run/csi-agent/agent.sock\n",
        "admin_socket: run/agent.sock\ndata_dir: /d\n" + PLUGINS,
        "data_dir: /d\nmetrics_address: \"off\"\nplugins:\n  - {id: m0, type: node, command: \"builtin:mock-plugin\"}\n"
            + "  - id: hp\n    type: monolith\n    command: /bin/true\n"
            + "    args: [\"--endpoint=${CSI_ENDPOINT}\", '--name=it''s', --v, \"5\"]\n    env: {LEVEL: \"5\"}\n",
        // A string over several lines below the top level, even with text at the margin inside it? No: inside
        // it the lines are indented, and the key after it is real.
        "plugins:\n  - id: a\n    type: node\n    command: /bin/true\n    args: [\"one\n      data_dir: /not-this\",\n"
            + "      two]\ndata_dir: /this\n",
        "data_dir: /d\nlog:\n  level: info\n  format: text\ndefaults:\n  restart: {attempts: 3, interval: 1m}\n" + PLUGINS)) {
      assertQuickIsTheDaemons(yaml);
    }
  }

  @Test
  void theExampleFiles_readQuickly_asTheDaemonReadsThem() throws Exception {
    for (Path example : List.of(Path.of("agent.example.yaml"), Path.of("..", "dist", "src", "config", "agent.yaml"))) {
      String yaml = Files.readString(example);
      Path abs = example.toAbsolutePath().normalize();
      Optional<Path> quick = AdminSocketReader.quick(yaml, abs);
      assertTrue(quick.isPresent(), example.toString());
      assertEquals(ConfigLoader.parse(yaml, abs).adminSocket(), quick.get(), example.toString());
    }
  }

  @Test
  void filesTheScannerIsNotSureOf_goToTheDaemonsReading() throws Exception {
    List<String> unsure = List.of(
        // A quoted string that goes on at the margin: "data_dir: /evil" is text in it, not a key.
        "metrics_address: \"127.0.0.1:9464\ndata_dir: /evil\n  x\"\ndata_dir: /real\n" + PLUGINS,
        "plugins:\n  - id: a\n    args: ['x\ndata_dir: /evil']\ndata_dir: /real\n",
        "plugins: [\ndata_dir, x]\ndata_dir: /real\n",
        "data_dir: /var/lib\n  /continued\n" + PLUGINS,
        "data_dir:\n  /below\n" + PLUGINS,
        "data_dir: |\n  /block\n" + PLUGINS,
        "data_dir: &d /anchored\n" + PLUGINS,
        "---\ndata_dir: /doc\n" + PLUGINS,
        "{data_dir: /flow, plugins: []}\n",
        "data_dir: \"/esc\\x41ped\"\n" + PLUGINS,
        "data_dir: \"/open\n  quote\"\n" + PLUGINS,
        "data_dir: /a b\n" + PLUGINS,
        "data_dir: ~/x\n" + PLUGINS,
        "data_dir: Yes\n" + PLUGINS,
        "data_dir: null\n" + PLUGINS,
        "data_dir: 2024\n" + PLUGINS,
        "data_dir: .inf\n" + PLUGINS,
        "data_dir: /a\ndata_dir: /b\n" + PLUGINS,
        "data_dir:\t/tab\n" + PLUGINS,
        "data_dir: /crlf\r\n" + PLUGINS,
        "data_dir: ''\n" + PLUGINS,
        "data_dir: /d\nadmin_socket: " + "/x".repeat(60) + "\n" + PLUGINS,
        "plugins: []\n",
        "command: it's\ndata_dir: /d\n" + PLUGINS,
        "env: {a:\"b, c: 'x}\ndata_dir: /d\n" + PLUGINS,
        "");
    for (String yaml : unsure) {
      assertEquals(Optional.empty(), quick(yaml), "the scanner should leave this one to the daemon:\n" + yaml);
    }
  }

  @Test
  void aDataDirThatIsAFile_goesToTheDaemonsReading_andItsError() throws Exception {
    Path notADir = Files.createFile(dir.resolve("file"));
    String yaml = "data_dir: " + notADir + "\n" + PLUGINS;
    assertEquals(Optional.empty(), quick(yaml));
    Path config = write(yaml);
    ConfigException daemon = assertThrows(ConfigException.class, () -> ConfigLoader.load(config));
    ConfigException cli = assertThrows(ConfigException.class, () -> AdminSocketReader.adminSocket(config));
    assertEquals(daemon.getMessage(), cli.getMessage());
    assertTrue(cli.getMessage().contains("data_dir"), cli.getMessage());
  }

  @Test
  void badFiles_getTheDaemonsErrors_wordForWord() throws Exception {
    List<Path> bad = new ArrayList<>();
    bad.add(write(PLUGINS)); // no data_dir
    bad.add(write("data_dir: ''\n" + PLUGINS));
    bad.add(write("data_dir: /d\nadmin_socket: ''\n" + PLUGINS));
    bad.add(write("data_dir: [a, b]\n" + PLUGINS));
    bad.add(write("data_dir: /d\n  bad: indentation\n" + PLUGINS));
    bad.add(write("")); // empty
    bad.add(dir.resolve("missing.yaml"));
    bad.add(Files.createDirectories(dir.resolve("a-directory")));
    for (Path config : bad) {
      ConfigException daemon = assertThrows(ConfigException.class, () -> ConfigLoader.load(config), config.toString());
      ConfigException cli = assertThrows(ConfigException.class, () -> AdminSocketReader.adminSocket(config),
          config.toString());
      assertEquals(daemon.getMessage(), cli.getMessage());
    }
  }

  @Test
  void whereTheDaemonAnswers_theReaderGivesTheSameSocket_quickOrNot() throws Exception {
    // Every combination of how the two keys are written and what stands around them.
    List<String> dataDirs = List.of("data_dir: /var/lib/a\n", "data_dir: rel/dir\n", "data_dir: \"q/dir\" # c\n",
        "data_dir: 'single'\n", "data_dir: /x\n  /y\n", "data_dir: \"two\n  lines\"\n", "data_dir: \"e\\u0041\"\n");
    List<String> sockets = List.of("", "admin_socket: /run/a.sock\n", "admin_socket: s/a.sock # rel\n",
        "admin_socket: 'q.sock'\n");
    List<String> around = List.of("", "# c\n", "log: {level: warn}\n", "metrics_address: \"off\"\n",
        "plugins:\n  - id: a\n    type: node\n    command: /bin/true\n    args: [\"x y\", 'z']\n",
        "defaults:\n  probe_interval: 30s\n");
    int quickOnes = 0;
    for (String d : dataDirs) {
      for (String s : sockets) {
        for (String before : around) {
          for (String after : around) {
            String rest = before.startsWith("plugins") || after.startsWith("plugins") ? "" : PLUGINS;
            if (before.equals(after) && !before.isEmpty()) {
              continue; // a duplicate key
            }
            String yaml = before + d + s + after + rest;
            Path written = write(yaml);
            Path expected = ConfigLoader.load(written).adminSocket();
            assertEquals(expected, AdminSocketReader.adminSocket(written), yaml);
            Optional<Path> quick = AdminSocketReader.quick(yaml, written.toAbsolutePath().normalize());
            if (quick.isPresent()) {
              quickOnes++;
              assertEquals(expected, quick.get(), yaml);
            }
          }
        }
      }
    }
    assertTrue(quickOnes > 300, "most of these are read quickly, got " + quickOnes);
  }

  private int files;

  private Path write(String yaml) throws Exception {
    Path f = dir.resolve("c" + files++).resolve("agent.yaml");
    Files.createDirectories(f.getParent());
    return Files.writeString(f, yaml);
  }
}
