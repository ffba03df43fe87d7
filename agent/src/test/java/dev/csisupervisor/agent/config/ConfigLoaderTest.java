package dev.csisupervisor.agent.config;

import static dev.csisupervisor.agent.config.YamlFiles.failsToLoad;
import static dev.csisupervisor.agent.config.YamlFiles.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.tasks.artifact.ArtifactSpec;
import dev.csisupervisor.tasks.process.RestartPolicy;
import dev.csisupervisor.tasks.resources.ResourceLimits;
import dev.csisupervisor.testing.WithoutPermissionOverride;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ConfigLoaderTest {
  @TempDir Path dir;

  @Test
  void fullConfig_isReadIntoRecords() throws Exception {
    Path f = write(dir, """
        data_dir: data
        csi_root: /run/csi
        admin_socket: /run/agent.sock
        metrics_address: 127.0.0.1:9100
        leave_running: true
        shutdown_grace: 3s
        log_max_size: 512KiB
        log_max_files: 4
        defaults:
          health_timeout: 20s
          probe_interval: 2s
          probe_timeout: 1s
          restart: {attempts: 5, interval: 1m, delay: 2s, mode: fail}
        plugins:
          - id: ebs
            type: controller
            command: bin/ebs-plugin
            args: [--v, 5]
            env: {REGION: eu-1, LEVEL: 3}
            probe_interval: 500ms
            restart: {attempts: 1}
          - id: nfs
            type: NODE
            socket: /run/nfs/csi.sock
        """);
    AgentConfig c = ConfigLoader.load(f);
    assertEquals(dir.resolve("data"), c.dataDir());
    assertEquals(Path.of("/run/csi"), c.csiRoot());
    assertEquals(Path.of("/run/agent.sock"), c.adminSocket());
    assertEquals(9100, c.metricsAddress().getPort());
    assertEquals("127.0.0.1", c.metricsAddress().getHostString());
    assertTrue(c.leaveRunning());
    assertEquals(Duration.ofSeconds(3), c.shutdownGrace());
    assertEquals(512 * 1024, c.logMaxBytes());
    assertEquals(4, c.logMaxFiles());
    assertEquals(2, c.plugins().size());

    PluginSpec ebs = c.plugins().get(0);
    assertEquals("ebs", ebs.id());
    assertEquals(PluginKind.CONTROLLER, ebs.type());
    assertEquals(dir.resolve("bin/ebs-plugin").toString(), ebs.command());
    assertEquals(List.of("--v", "5"), ebs.args());
    assertEquals(Map.of("REGION", "eu-1", "LEVEL", "3"), ebs.env());
    assertTrue(ebs.launched());
    assertEquals("agent-ebs", ebs.allocId());
    assertEquals(Duration.ofMillis(500), ebs.probe().probeInterval());
    assertEquals(Duration.ofSeconds(20), ebs.probe().healthTimeout(), "from defaults");
    assertEquals(new RestartPolicy(1, Duration.ofMinutes(1), Duration.ofSeconds(2),
        RestartPolicy.Mode.FAIL), ebs.restart(), "partial override takes the rest from defaults");

    PluginSpec nfs = c.plugins().get(1);
    assertEquals(PluginKind.NODE, nfs.type());
    assertFalse(nfs.launched());
    assertEquals(Path.of("/run/nfs/csi.sock"), nfs.socket());
  }

  @Test
  void exampleConfig_isValid() throws Exception {
    // Surefire runs in the module directory.
    AgentConfig c = ConfigLoader.load(Path.of("agent.example.yaml"));
    assertEquals(List.of("hostpath-controller", "hostpath-node"),
        c.plugins().stream().map(PluginSpec::id).toList());
    assertEquals(RestartPolicy.Mode.FAIL, c.plugins().get(1).restart().mode());
    assertTrue(c.volumeVerifyMounts());
  }

  @Test
  void minimalConfig_getsDefaults() throws Exception {
    AgentConfig c = ConfigLoader.load(write(dir, "data_dir: /var/lib/a\nplugins: []\n"));
    assertEquals(Path.of("/var/lib/a/csi"), c.csiRoot());
    assertEquals(Path.of("/var/lib/a/agent.sock"), c.adminSocket());
    assertEquals(AgentConfig.defaultMetricsAddress().getPort(), c.metricsAddress().getPort());
    assertFalse(c.leaveRunning());
    assertTrue(c.plugins().isEmpty());
    assertEquals(Path.of("/var/lib/a/processes.json"), c.processesFile());
  }

  @Test
  void metricsOff_disablesEndpoint() throws Exception {
    assertNull(ConfigLoader.load(write(dir, "data_dir: /a\nmetrics_address: off\nplugins: []\n"))
        .metricsAddress());
  }

  @Test
  void unknownField_namesFieldAndLine() throws Exception {
    failsToLoad(dir, """
        data_dir: /a
        plugins:
          - id: x
            type: node
            comand: /bin/x
        """,
        "plugins[0].comand: unknown field",
        "line 5",
        "command"); // among the known fields it lists
  }

  @Test
  void unknownTopLevelField_isNamed() throws Exception {
    failsToLoad(dir, "data_dir: /a\nplugins: []\nmetrics: 1\n", "metrics: unknown field");
  }

  @Test
  void missingId_isNamed() throws Exception {
    ConfigException e = failsToLoad(dir,
        "data_dir: /a\nplugins:\n  - type: node\n    command: /bin/x\n");
    assertEquals(List.of("plugins[0].id: missing (the plugin's id, e.g. \"ebs\")"),
        e.problems());
  }

  @Test
  void duplicateId_namesBothEntries() throws Exception {
    ConfigException e = failsToLoad(dir, """
        data_dir: /a
        plugins:
          - {id: x, type: node, command: /bin/x}
          - {id: y, type: node, command: /bin/y}
          - {id: x, type: controller, command: /bin/z}
        """);
    assertEquals(List.of("plugins[2].id: duplicate id \"x\" (also plugins[0])"), e.problems());
  }

  @Test
  void badType_isNamedWithChoices() throws Exception {
    ConfigException e = failsToLoad(dir,
        "data_dir: /a\nplugins:\n  - {id: x, type: storage, command: /x}\n");
    assertEquals(List.of("plugins[0].type: \"storage\" is not a plugin type"
        + " (use controller, node or monolith)"), e.problems());
  }

  @Test
  void externalSocketTooLong_isRejected() throws Exception {
    String longPath = "/run/" + "s".repeat(100) + "/csi.sock";
    ConfigException e = failsToLoad(dir, "data_dir: /a\nplugins:\n  - {id: x, type: node, socket: "
        + longPath + "}\n");
    assertTrue(e.getMessage().contains("plugins[0].socket: the socket " + longPath + " is 114"
        + " bytes, over the unix socket limit of 107 bytes"), e.getMessage());
  }

  @Test
  void derivedSocketTooLong_namesTheId() throws Exception {
    failsToLoad(dir, "data_dir: /a\ncsi_root: /" + "r".repeat(80)
        + "\nplugins:\n  - {id: " + "p".repeat(20) + ", type: controller, command: /x}\n",
        "plugins[0].id: its socket /rrr",
        "over the unix socket limit of 107 bytes");
  }

  @Test
  void adminSocketTooLong_isRejected() throws Exception {
    failsToLoad(dir, "data_dir: /" + "d".repeat(100) + "\nplugins: []\n",
        "data_dir: the admin socket /ddd");
  }

  @Test
  void unreadableFile_missing() {
    Path f = dir.resolve("nope.yaml");
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(f));
    assertEquals(f + ": cannot read config file: no such file", e.getMessage());
  }

  @Test
  void unreadableFile_directory() {
    ConfigException e = assertThrows(ConfigException.class, () -> ConfigLoader.load(dir));
    assertEquals(dir + ": cannot read config file: it is a directory", e.getMessage());
  }

  @Test
  void unreadableFile_permissionDenied() throws Exception {
    Path f = write(dir, "data_dir: /a\nplugins: []\n");
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("---------"));
    // Root reads any file: the load runs where permissions apply (WithoutPermissionOverride).
    WithoutPermissionOverride.Result r = WithoutPermissionOverride.run(LoadAndPrint.class, f.toString());
    assertEquals(f + ": cannot read config file: permission denied", r.output(), r.toString());
  }

  /** Loads the config file named by its argument and prints the error's message (or "loaded"). */
  static final class LoadAndPrint {
    public static void main(String[] args) {
      try {
        ConfigLoader.load(Path.of(args[0]));
        System.out.println("loaded");
      } catch (ConfigException e) {
        System.out.println(e.getMessage());
      }
    }
  }

  @Test
  void emptyFile_saysSo() throws Exception {
    failsToLoad(dir, "  \n", "config file is empty");
  }

  @Test
  void notYaml_saysWhere() throws Exception {
    failsToLoad(dir, "data_dir: \"unterminated\nplugins: []\n", "not valid YAML", "line");
  }

  @Test
  void topLevelList_isRejected() throws Exception {
    failsToLoad(dir, "- a\n- b\n", "expected a mapping");
  }

  @Test
  void duplicateKey_isRejected() throws Exception {
    ConfigException e = failsToLoad(dir, "data_dir: /a\ndata_dir: /b\nplugins: []\n");
    assertTrue(e.getMessage().contains("data_dir"), e.getMessage());
    assertTrue(e.getMessage().toLowerCase().contains("duplicate"), e.getMessage());
  }

  @Test
  void wrongKindOfValue_namesField() throws Exception {
    failsToLoad(dir, "data_dir: /a\nplugins:\n  - {id: x, type: node, command: /x,"
        + " args: {a: b}}\n",
        "plugins[0].args: expected a list");
  }

  @Test
  void missingDataDirAndPlugins_bothReported() throws Exception {
    ConfigException e = failsToLoad(dir, "leave_running: true\n");
    assertEquals(2, e.problems().size(), e.getMessage());
    assertTrue(e.problems().get(0).startsWith("data_dir: missing"));
    assertTrue(e.problems().get(1).startsWith("plugins: missing"));
  }

  @Test
  void commandAndSocket_bothOrNeither_areRejected() throws Exception {
    ConfigException e = failsToLoad(dir, """
        data_dir: /a
        plugins:
          - {id: a, type: node, command: /x, socket: /s.sock}
          - {id: b, type: node}
        """);
    assertTrue(e.problems().get(0).startsWith("plugins[0]: has both command and socket"));
    assertTrue(e.problems().get(1).startsWith("plugins[1]: needs command"));
  }

  @Test
  void pluginIdEscapingRoot_isRejected() throws Exception {
    ConfigException e = failsToLoad(dir,
        "data_dir: /a\nplugins:\n  - {id: '..', type: node, command: /x}\n"
        + "  - {id: 'a/b', type: node, command: /x}\n  - {id: 'a b', type: node, command: /x}\n");
    assertEquals(3, e.problems().size(), e.getMessage());
    assertTrue(e.problems().get(0).contains("could escape the plugin root"));
    assertTrue(e.problems().get(1).contains("could escape the plugin root"));
    assertTrue(e.problems().get(2).contains("must be 1 to 128 of"));
  }

  @Test
  void badDurationsAndSizes_areNamed() throws Exception {
    failsToLoad(dir, """
        data_dir: /a
        shutdown_grace: soon
        log_max_size: 10 parsecs
        defaults:
          probe_interval: 30
          restart: {mode: sometimes, attempts: -1}
        plugins: []
        """,
        "shutdown_grace: 'soon' is not a duration",
        "log_max_size: '10 parsecs' is not a size",
        "defaults.probe_interval: '30' is not a duration",
        "defaults.restart.mode: \"sometimes\" is not a restart mode",
        "defaults.restart.attempts: must be >= 0, got -1");
  }

  @Test
  void endpointInEnv_isRejected() throws Exception {
    failsToLoad(dir, "data_dir: /a\nplugins:\n  - {id: x, type: node, command: /x,"
        + " env: {CSI_ENDPOINT: unix:///tmp/x}}\n",
        "plugins[0].env.CSI_ENDPOINT: set by the agent");
  }

  @Test
  void launchOnlyFieldsWithSocket_areRejected() throws Exception {
    failsToLoad(dir, "data_dir: /a\nplugins:\n  - {id: x, type: node, socket: /s,"
        + " args: [a]}\n",
        "plugins[0].args: only for launched plugins");
  }

  @Test
  void badMetricsAddress_isRejected() throws Exception {
    failsToLoad(dir, "data_dir: /a\nmetrics_address: localhost\nplugins: []\n",
        "metrics_address: \"localhost\" must be host:port");
  }

  @Test
  void restartIntervalShorterThanDelays_isRejected() throws Exception {
    failsToLoad(dir, "data_dir: /a\ndefaults:\n  restart: {attempts: 5, delay: 10s,"
        + " interval: 20s}\nplugins: []\n",
        "defaults.restart: interval PT20S must be at least");
  }

  @Test
  void durations_parseUnitsAndIso() {
    assertEquals(Duration.ofMillis(250), Units.duration("250ms"));
    assertEquals(Duration.ofSeconds(90), Units.duration("1m30s"));
    assertEquals(Duration.ofHours(2), Units.duration("2h"));
    assertEquals(Duration.ofSeconds(5), Units.duration("PT5S"));
    assertEquals(Duration.ZERO, Units.duration("0"));
    assertThrows(IllegalArgumentException.class, () -> Units.duration("5"));
    assertThrows(IllegalArgumentException.class, () -> Units.duration("5 s"));
    assertThrows(IllegalArgumentException.class, () -> Units.duration("s"));
    assertThrows(IllegalArgumentException.class, () -> Units.duration("-5s"));
  }

  // ---- artifacts, discovery, resources -------------------------------------------------------

  private static final String SHA = "ab".repeat(32);

  @Test
  void artifactDiscoveryAndResources_areReadIntoRecords() throws Exception {
    Path f = write(dir, """
        data_dir: /a
        discovery_dir: plugins.d
        resource_interval: 2s
        resource_history: 30
        defaults: {probe_interval: 3s}
        plugins:
          - id: ebs
            type: monolith
            artifact:
              url: https://example.com/dl/ebs-1.2.tar.gz?token=x
              sha256: %s
              unpack: tar.gz
              entry: bin/ebs-plugin
              timeout: 2m
              attempts: 5
            args: [--v]
            max_memory_bytes: 256MiB
            max_cpu_percent: 150%%
            limit_grace: 1m
          - id: single
            type: node
            artifact: {url: "file:///opt/plugins/nfs-plugin", sha256: "%s"}
        """.formatted(SHA, SHA.toUpperCase(java.util.Locale.ROOT)));
    AgentConfig c = ConfigLoader.load(f);
    assertEquals(dir.resolve("plugins.d"), c.discoveryDir());
    assertEquals(Duration.ofSeconds(2), c.resourceInterval());
    assertEquals(30, c.resourceHistory());
    assertEquals(Duration.ofSeconds(3), c.discoveryProbe().probeInterval(),
        "discovered plugins are probed with the defaults");
    PluginSpec ebs = c.plugins().get(0);
    assertTrue(ebs.launched());
    assertNull(ebs.command());
    ArtifactSpec a = ebs.artifact();
    assertEquals(java.net.URI.create("https://example.com/dl/ebs-1.2.tar.gz?token=x"), a.url());
    assertEquals("https://example.com/dl/ebs-1.2.tar.gz", a.displayUrl(), "no query in logs");
    assertEquals(ArtifactSpec.Unpack.TAR_GZ, a.unpack());
    assertEquals("bin/ebs-plugin", a.entry());
    assertEquals(Duration.ofMinutes(2), a.timeout());
    assertEquals(5, a.attempts());
    assertEquals("abababababab", a.revision());
    assertEquals(List.of("--v"), ebs.args());
    assertEquals(new ResourceLimits(256L << 20, 150, Duration.ofMinutes(1)), ebs.limits());
    ArtifactSpec single = c.plugins().get(1).artifact();
    assertEquals(ArtifactSpec.Unpack.NONE, single.unpack());
    assertEquals("nfs-plugin", single.entry(), "saved under the URL's file name");
    assertEquals(SHA, single.sha256(), "stored lower case");
    assertEquals(ArtifactSpec.DEFAULT_ATTEMPTS, single.attempts());
    assertEquals(ResourceLimits.NONE, c.plugins().get(1).limits());
  }

  @Test
  void resourceSamplingOff_andDefaults() throws Exception {
    AgentConfig off =
        ConfigLoader.load(write(dir, "data_dir: /a\nresource_interval: off\nplugins: []\n"));
    assertEquals(Duration.ZERO, off.resourceInterval());
    AgentConfig dflt = ConfigLoader.load(write(dir, "data_dir: /a\nplugins: []\n"));
    assertEquals(AgentConfig.DEFAULT_RESOURCE_INTERVAL, dflt.resourceInterval());
    assertEquals(AgentConfig.DEFAULT_RESOURCE_HISTORY, dflt.resourceHistory());
    assertNull(dflt.discoveryDir());
  }

  @Test
  void volumeSettings_theirDefaults_andOff() throws Exception {
    AgentConfig set = ConfigLoader.load(write(dir,
        "data_dir: /a\nvolumes: {mount_wait: 2m, health_interval: 30s}\nplugins: []\n"));
    assertEquals(Duration.ofMinutes(2), set.volumeMountWait());
    assertEquals(Duration.ofSeconds(30), set.volumeHealthInterval());
    AgentConfig dflt = ConfigLoader.load(write(dir, "data_dir: /a\nplugins: []\n"));
    assertEquals(AgentConfig.DEFAULT_VOLUME_MOUNT_WAIT, dflt.volumeMountWait());
    assertEquals(AgentConfig.DEFAULT_VOLUME_HEALTH_INTERVAL, dflt.volumeHealthInterval());
    AgentConfig off = ConfigLoader.load(write(dir, "data_dir: /a\nvolumes: {health_interval: off}\nplugins: []\n"));
    assertEquals(Duration.ZERO, off.volumeHealthInterval());
  }

  @Test
  void badVolumeFields_areEachNamed() throws Exception {
    failsToLoad(dir, """
        data_dir: /a
        volumes: {mount_wait: 0s, health_interval: often}
        plugins: []
        """,
        "volumes.mount_wait: must be more than 0, got 0s",
        "volumes.health_interval:");
    failsToLoad(dir, """
        data_dir: /a
        volumes: {mount_wiat: 1m}
        plugins: []
        """,
        "mount_wiat");
  }

  @Test
  void verifyMounts_defaultsToTrue_andFalseTurnsItOff() throws Exception {
    assertTrue(ConfigLoader.load(write(dir, "data_dir: /a\nplugins: []\n")).volumeVerifyMounts());
    assertTrue(ConfigLoader.load(write(dir, "data_dir: /a\nvolumes: {mount_wait: 1m}\nplugins: []\n"))
        .volumeVerifyMounts());
    assertTrue(ConfigLoader.load(write(dir, "data_dir: /a\nvolumes: {verify_mounts: true}\nplugins: []\n"))
        .volumeVerifyMounts());
    AgentConfig off = ConfigLoader.load(write(dir, "data_dir: /a\nvolumes: {verify_mounts: false}\nplugins: []\n"));
    assertFalse(off.volumeVerifyMounts());
    assertFalse(off.sameAgentSettings(off.withVolumeVerifyMounts(true)), "a change needs a restart");
  }

  @Test
  void verifyMounts_notABoolean_isNamedWithItsLine() throws Exception {
    for (String bad : List.of("maybe", "10s", "[true]", "{on: 1}")) {
      failsToLoad(dir, "data_dir: /a\nvolumes:\n  verify_mounts: " + bad + "\nplugins: []\n",
          "volumes.verify_mounts: expected true or false (line 3");
    }
  }

  @Test
  void badArtifactFields_areEachNamed() throws Exception {
    failsToLoad(dir, """
        data_dir: /a
        plugins:
          - {id: a, type: node, artifact: {sha256: %s}}
          - {id: b, type: node, artifact: {url: "ftp://host/x", sha256: %s}}
          - {id: c, type: node, artifact: {url: "http://h/x", sha256: "abc"}}
          - {id: d, type: node, artifact: {url: "http://h/x", sha256: %s, unpack: rar}}
          - {id: e, type: node, artifact: {url: "http://h/x.tgz", sha256: %s, unpack: tar.gz}}
          - {id: f, type: node, artifact: {url: "http://h/x", sha256: %s, unpack: zip, entry: ../bin}}
          - {id: g, type: node, artifact: {url: "http://h/x", sha256: %s, entry: /bin/sh}}
          - {id: h, type: node, artifact: {url: "http://h/x", sha256: %s, entry: bin/x}}
          - {id: i, type: node, artifact: {url: "http://h/x", sha256: %s, attempts: 0, timeout: soon}}
          - {id: j, type: node, artifact: {url: "http://h/x", sha256: %s}, command: /bin/x}
          - {id: k, type: node, artifact: {url: "http://h/x", sha256: %s}, socket: /s.sock}
          - {id: l, type: node, artifact: {url: "http:///x", sha256: %s}}
          - {id: m, type: node, artifact: {url: "file:relative/x", sha256: %s}}
        """.formatted(java.util.Collections.nCopies(12, SHA).toArray()),
        "plugins[0].artifact.url: missing",
        "plugins[1].artifact.url: \"ftp://host/x\" must be an http, https or file URL",
        "plugins[2].artifact.sha256: \"abc\" must be 64 hex digits",
        "plugins[3].artifact.unpack: \"rar\" is not an archive format",
        "plugins[4].artifact.entry: missing",
        "plugins[5].artifact.entry: entry must not contain '..'",
        "plugins[6].artifact.entry: entry must be relative",
        "plugins[7].artifact.entry: \"bin/x\" must be a file name without '/'",
        "plugins[8].artifact.attempts: must be 1 to 10, got 0",
        "plugins[8].artifact.timeout: 'soon' is not a duration",
        "plugins[9]: has both command and artifact",
        "plugins[10]: has both artifact and socket",
        "plugins[11].artifact.url: \"http:///x\" has no host",
        "plugins[12].artifact.url: \"file:relative/x\" must be an absolute file URL");
  }

  @Test
  void unknownArtifactField_isNamed() throws Exception {
    failsToLoad(dir, "data_dir: /a\nplugins:\n  - {id: a, type: node, artifact:"
        + " {url: 'http://h/x', sha256: " + SHA + ", size: 3}}\n",
        "plugins[0].artifact.size: unknown field",
        "known fields: attempts, entry, sha256, timeout, unpack, url");
  }

  @Test
  void badResourceFields_areEachNamed() throws Exception {
    failsToLoad(dir, """
        data_dir: /a
        resource_interval: 10ms
        resource_history: 0
        plugins:
          - {id: a, type: node, command: /x, max_memory_bytes: lots, max_cpu_percent: fast}
          - {id: b, type: node, command: /x, max_memory_bytes: 0, max_cpu_percent: -5}
          - {id: c, type: node, command: /x, limit_grace: 1m}
          - {id: d, type: node, command: /x, max_cpu_percent: 50, limit_grace: later}
          - {id: e, type: node, socket: /s.sock, max_memory_bytes: 1MiB}
        """,
        "resource_interval: must be at least 50ms (or off), got 10ms",
        "resource_history: must be 1 to 100000 samples, got 0",
        "plugins[0].max_memory_bytes: 'lots' is not a size",
        "plugins[0].max_cpu_percent: \"fast\" is not a number",
        "plugins[1].max_memory_bytes: must be greater than 0, got 0",
        "plugins[1].max_cpu_percent: must be a number greater than 0",
        "plugins[2].limit_grace: only with max_memory_bytes or max_cpu_percent",
        "plugins[3].limit_grace: 'later' is not a duration",
        "plugins[4].max_memory_bytes: only for launched plugins");
  }

  @Test
  void limitsWithSamplingOff_areRejected() throws Exception {
    failsToLoad(dir, "data_dir: /a\nresource_interval: off\nplugins:\n"
        + "  - {id: a, type: node, command: /x, max_memory_bytes: 1GiB}\n",
        "plugins[0].max_memory_bytes: needs resource sampling, but resource_interval is off");
  }

  @Test
  void badDiscoveryDir_isNamed() throws Exception {
    ConfigException empty = failsToLoad(dir, "data_dir: /a\ndiscovery_dir: ''\nplugins: []\n");
    assertTrue(empty.getMessage().contains("discovery_dir: must not be empty"),
        empty.getMessage());
    ConfigException tooLong = failsToLoad(dir, "data_dir: /a\ndiscovery_dir: /" + "d".repeat(110)
        + "\nplugins: []\n");
    assertTrue(tooLong.getMessage().contains("discovery_dir: a socket in it, like"),
        tooLong.getMessage());
    assertTrue(tooLong.getMessage().contains("over the unix socket limit of 107 bytes"),
        tooLong.getMessage());
  }

  @Test
  void artifactSpec_rejectsBadValuesInCode() {
    java.net.URI u = java.net.URI.create("http://h/x");
    Duration t = Duration.ofSeconds(1);
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
        () -> new ArtifactSpec(u, "xyz", ArtifactSpec.Unpack.NONE, "x", t, 1));
    assertTrue(bad.getMessage().contains("sha256 must be 64 hex digits"), bad.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new ArtifactSpec(
        java.net.URI.create("gopher://h/x"), SHA, ArtifactSpec.Unpack.NONE, "x", t, 1));
    assertThrows(IllegalArgumentException.class,
        () -> new ArtifactSpec(u, SHA, ArtifactSpec.Unpack.NONE, "a/../../b", t, 1));
    assertThrows(IllegalArgumentException.class,
        () -> new ArtifactSpec(u, SHA, ArtifactSpec.Unpack.NONE, "x", Duration.ZERO, 1));
    assertThrows(IllegalArgumentException.class,
        () -> new ArtifactSpec(u, SHA, ArtifactSpec.Unpack.NONE, "x", t, 11));
    IllegalArgumentException both = assertThrows(IllegalArgumentException.class,
        () -> new PluginSpec("p", PluginKind.NODE, "/x", List.of(), Map.of(), null,
            ProbeSettings.DEFAULT, RestartPolicy.DEFAULT,
            new ArtifactSpec(u, SHA, ArtifactSpec.Unpack.NONE, "x", t, 1), ResourceLimits.NONE));
    assertTrue(both.getMessage().contains("exactly one of command, artifact and socket"),
        both.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> new ResourceLimits(-1, 0, Duration.ZERO));
    assertThrows(IllegalArgumentException.class,
        () -> new ResourceLimits(0, Double.NaN, Duration.ZERO));
  }
}
