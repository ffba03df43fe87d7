package dev.csisupervisor.agent.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The agent config's {@code cluster:} section: off by default, every problem named by its field. */
class ClusterConfigTest {
  private static final String BASE = "data_dir: /var/lib/a\nplugins: []\n";

  @TempDir
  Path dir;

  private Path file() {
    return dir.resolve("agent.yaml");
  }

  private ClusterConfig config(String cluster) throws Exception {
    return ClusterConfig.parse(BASE + cluster, file()).orElseThrow();
  }

  private List<String> problems(String cluster) {
    ConfigException e = assertThrows(ConfigException.class, () -> ClusterConfig.parse(BASE + cluster, file()));
    assertTrue(e.getMessage().startsWith(file().toString()), e.getMessage());
    return e.problems();
  }

  @Test
  void noSection_isOff_andTheAgentConfigAcceptsTheSection() throws Exception {
    assertTrue(ClusterConfig.parse(BASE, file()).isEmpty());
    assertTrue(ClusterConfig.parse(BASE + "cluster:\n", file()).isEmpty());
    String yaml = BASE + "cluster:\n  endpoints: [http://127.0.0.1:2379]\n";
    ConfigLoader.parse(yaml, file()); // no "unknown field"
  }

  @Test
  void fullSection_isRead_withDefaults() throws Exception {
    Files.writeString(dir.resolve("ca.pem"), "x");
    Files.writeString(dir.resolve("c.pem"), "x");
    Files.writeString(dir.resolve("k.pem"), "x");
    ClusterConfig c = ClusterConfig.parse(BASE + "cluster:\n  endpoints: 'h1:2379, https://h2:2379'\n  node_id: node-1\n"
        + "  prefix: /prod/csi\n  lease_ttl: 30s\n  ca_file: ca.pem\n  cert_file: c.pem\n  key_file: k.pem\n"
        + "  user: csi\n  password: pw\n", file()).orElseThrow();
    assertEquals("[http://h1:2379, https://h2:2379]", c.etcd().endpoints().toString());
    assertEquals("node-1", c.nodeId());
    assertEquals("/prod/csi", c.prefix());
    assertEquals(Duration.ofSeconds(30), c.leaseTtl());
    assertEquals(dir.resolve("ca.pem"), c.etcd().caFile());
    assertTrue(c.etcd().tls());
    assertEquals("csi", c.etcd().user());
    assertTrue(!c.toString().contains("pw"), "no password in logs: " + c);

    ClusterConfig d = ClusterConfig.parse(BASE + "cluster:\n  endpoints: [http://127.0.0.1:2379]\n", file()).orElseThrow();
    assertEquals("/csi-supervisor", d.prefix());
    assertEquals(Duration.ofSeconds(15), d.leaseTtl());
    assertTrue(!d.nodeId().isEmpty(), "node_id defaults to the host name");
  }

  @Test
  void passwordFile_givesThePassword_fromItsFirstLine_andIsNeverPrinted() throws Exception {
    Files.writeString(dir.resolve("etcd-pw"), "s3cret\r\nignored\n");
    ClusterConfig c = ClusterConfig.parse(BASE + "cluster:\n  endpoints: [h:1]\n  user: csi\n  password_file: etcd-pw\n",
        file()).orElseThrow();
    assertEquals("csi", c.etcd().user());
    assertEquals("s3cret", c.etcd().password());
    assertTrue(!c.toString().contains("s3cret"), c.toString());
  }

  @Test
  void passwordFile_problems_areNamed_withoutThePassword() throws Exception {
    Files.writeString(dir.resolve("empty-pw"), "\nsecond-line-secret\n");
    Files.writeString(dir.resolve("pw"), "s3cret\n");
    assertEquals(List.of("cluster.password_file: " + dir.resolve("nope") + " is not a readable file"),
        problems("cluster:\n  endpoints: [h:1]\n  user: csi\n  password_file: nope\n"));
    List<String> empty = problems("cluster:\n  endpoints: [h:1]\n  user: csi\n  password_file: empty-pw\n");
    assertEquals(List.of("cluster.password_file: " + dir.resolve("empty-pw") + " has no password on its first line"), empty);
    assertEquals(List.of("cluster.password_file: give password or password_file, not both"),
        problems("cluster:\n  endpoints: [h:1]\n  user: csi\n  password: x\n  password_file: pw\n"));
    List<String> noUser = problems("cluster:\n  endpoints: [h:1]\n  password_file: pw\n");
    assertEquals(List.of("cluster.user: required with password_file"), noUser);
    assertTrue(!(empty.toString() + noUser).contains("secret"));
  }

  @Test
  void emptyOrMissingEndpoints_areErrorsNamingTheField() {
    assertEquals(List.of("cluster.endpoints: must not be empty (etcd client URLs, e.g. [http://127.0.0.1:2379])"),
        problems("cluster:\n  endpoints: []\n"));
    assertTrue(problems("cluster:\n  endpoints: ''\n").get(0).startsWith("cluster.endpoints must not be empty"));
    assertTrue(problems("cluster:\n  node_id: x\n").get(0).startsWith("cluster.endpoints: missing"));
    assertTrue(problems("cluster:\n  endpoints: [ftp://h:1]\n").get(0).startsWith("cluster.endpoints[0] 'ftp://h:1' must be"));
    assertTrue(problems("cluster:\n  endpoints: [h:1, 'http://h']\n").get(0).startsWith("cluster.endpoints[1] "));
  }

  @Test
  void detachAfter_isOffByDefault_andReadAsADuration() throws Exception {
    assertEquals(java.time.Duration.ZERO, config("cluster:\n  endpoints: [h:1]\n").detachAfter());
    assertEquals(java.time.Duration.ofMinutes(5),
        config("cluster:\n  endpoints: [h:1]\n  detach_after: 5m\n").detachAfter());
    assertTrue(problems("cluster:\n  endpoints: [h:1]\n  detach_after: later\n").get(0).startsWith("cluster.detach_after"));
  }

  @Test
  void secretsDir_defaultsToEtcCsiAgentSecrets_andResolvesAgainstTheConfigFile() throws Exception {
    assertEquals(java.nio.file.Path.of("/etc/csi-agent/secrets"), config("cluster:\n  endpoints: [h:1]\n").secretsDir());
    assertEquals(dir.resolve("keys"), config("cluster:\n  endpoints: [h:1]\n  secrets_dir: keys\n").secretsDir());
    assertTrue(problems("cluster:\n  endpoints: [h:1]\n  secrets_dir: ''\n").get(0)
        .startsWith("cluster.secrets_dir: must not be empty"));
  }

  @Test
  void controllerCheckInterval_isAMinuteByDefault_zeroForOff_andNeverBelowASecond() throws Exception {
    assertEquals(java.time.Duration.ofSeconds(60), config("cluster:\n  endpoints: [h:1]\n").controllerCheckInterval());
    assertEquals(java.time.Duration.ZERO,
        config("cluster:\n  endpoints: [h:1]\n  controller_check_interval: 0s\n").controllerCheckInterval());
    assertEquals(java.time.Duration.ofMinutes(5),
        config("cluster:\n  endpoints: [h:1]\n  controller_check_interval: 5m\n").controllerCheckInterval());
    assertTrue(problems("cluster:\n  endpoints: [h:1]\n  controller_check_interval: 10ms\n").get(0)
        .startsWith("cluster.controller_check_interval: must be 0s (off) or at least 1s"),
        problems("cluster:\n  endpoints: [h:1]\n  controller_check_interval: 10ms\n").toString());
    assertTrue(problems("cluster:\n  endpoints: [h:1]\n  controller_check_interval: soon\n").get(0)
        .startsWith("cluster.controller_check_interval"));
  }

  @Test
  void everyBadField_isReportedTogether() {
    List<String> p = problems("cluster:\n  endpoints: [h:1]\n  node_id: a/b\n  prefix: nope\n  lease_ttl: 1s\n"
        + "  cert_file: missing.pem\n  user: u\n  colour: red\n");
    String all = String.join("\n", p);
    assertTrue(all.contains("cluster.colour: unknown field (known fields: ca_file, cert_file, controller_check_interval, detach_after,"),
        all);
    assertTrue(all.contains("cluster.node_id: must be 1 to 253 of"), all);
    assertTrue(all.contains("cluster.prefix: must be /segment"), all);
    assertTrue(all.contains("cluster.lease_ttl: must be whole seconds and at least 2s, got 1s"), all);
    assertTrue(all.contains("cluster.cert_file: " + dir.resolve("missing.pem") + " is not a readable file"), all);
    assertTrue(all.contains("cluster.key_file: required with cert_file"), all);
    assertTrue(all.contains("cluster.password: required with user"), all);
    assertEquals(7, p.size(), all);
    assertTrue(problems("cluster:\n  endpoints: [h:1]\n  lease_ttl: soon\n").get(0)
        .startsWith("cluster.lease_ttl: 'soon' is not a duration"));
    assertTrue(problems("cluster: [a]\n").get(0).startsWith("cluster: expected a mapping"));
  }
}
