package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.Plugins.plugin;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.AuthEnableRequest;
import dev.csisupervisor.catalog.etcdpb.AuthGrpc;
import dev.csisupervisor.catalog.etcdpb.AuthRoleAddRequest;
import dev.csisupervisor.catalog.etcdpb.AuthRoleGrantPermissionRequest;
import dev.csisupervisor.catalog.etcdpb.AuthUserAddRequest;
import dev.csisupervisor.catalog.etcdpb.AuthUserGrantRoleRequest;
import dev.csisupervisor.catalog.etcdpb.Permission;
import dev.csisupervisor.catalog.testing.EtcdProcess;
import dev.csisupervisor.catalog.testing.TestCertificates;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TLS with client certificates and user/password authentication, against a real etcd set up for each. */
class EtcdSecurityTest {
  @TempDir
  Path tmp;

  @TempDir
  static Path pki;

  /** A CA with a server and a client certificate; another CA with its own (keytool is slow: made once). */
  static TestCertificates certs;
  static TestCertificates other;

  @BeforeAll
  static void makeCertificates() throws Exception {
    certs = TestCertificates.create(pki.resolve("pki"));
    other = TestCertificates.createCaAndClient(pki.resolve("other-pki"));
  }

  private static EtcdOptions options(String endpoint, Path ca, Path cert, Path key, String user, String password) {
    return new EtcdOptions(EtcdOptions.parseEndpoints(endpoint), ca, cert, key, user, password, Duration.ofSeconds(3));
  }

  @Test
  void tls_withClientCertificate_publishesAndReads_withoutOneIsRefused() throws Exception {
    try (EtcdProcess etcd = EtcdProcess.startTls(tmp, certs.serverCert, certs.serverKey, certs.caCert)) {
      assertTrue(etcd.endpoint().startsWith("https://"));
      EtcdOptions good = options(etcd.endpoint(), certs.caCert, certs.clientCert, certs.clientKey, null, null);
      PluginRegistry r = Plugins.registry();
      Plugins.registerAll(r, "n1", "node:ebs,controller:ebs");
      try (CatalogPublisher p = CatalogPublisher.builder().registry(r).etcd(good).prefix("/tls").nodeId("n1").build();
           ClusterView v = ClusterView.builder().etcd(good).prefix("/tls").build()) {
        p.start();
        v.start();
        assertTrue(p.awaitInSync(Duration.ofSeconds(10)), p.status().toString());
        await().atMost(Duration.ofSeconds(30)).until(() -> v.snapshot().entries().size() == 2);
        r.register(plugin(PluginType.CSI_NODE, "nfs", "n1-nfs", true));
        await().atMost(Duration.ofSeconds(30)).until(() -> v.snapshot().entries().size() == 3);
      } finally {
        r.close();
      }
      // No client certificate: etcd (--client-cert-auth) refuses the connection.
      EtcdException noCert = assertThrows(EtcdException.class,
          () -> ClusterView.read(options(etcd.endpoint(), certs.caCert, null, null, null, null), "/tls"));
      assertTrue(noCert.getMessage().contains(etcd.endpoint().replace("https://", "")), noCert.getMessage());
      // No CA: the server's certificate is not trusted.
      assertThrows(EtcdException.class, () -> ClusterView.read(options(etcd.endpoint(), null, certs.clientCert,
          certs.clientKey, null, null), "/tls"));
      // A key file that is not there: named.
      EtcdException missing = assertThrows(EtcdException.class, () -> ClusterView.read(options(etcd.endpoint(),
          certs.caCert, certs.clientCert, tmp.resolve("nope.pem"), null, null), "/tls"));
      assertTrue(missing.getMessage().contains("nope.pem"), missing.getMessage());
    }
  }

  @Test
  void userAndPassword_authenticate_wrongPasswordIsNamed() throws Exception {
    try (EtcdProcess etcd = EtcdProcess.start(tmp)) {
      enableAuth(etcd.endpoint(), "/auth");
      EtcdOptions good = options(etcd.endpoint(), null, null, null, "csi", "s3cret");
      PluginRegistry r = Plugins.registry();
      Plugins.registerAll(r, "n1", "node:ebs");
      try (CatalogPublisher p = inSync(r, good, "/auth")) {
        ClusterSnapshot s = ClusterView.read(good, "/auth");
        assertEquals(List.of("n1"), List.copyOf(s.nodeIds()));
        assertEquals(1, s.entries().size());
      } finally {
        r.close();
      }
      EtcdException wrong = assertThrows(EtcdException.class,
          () -> ClusterView.read(options(etcd.endpoint(), null, null, null, "csi", "wrong"), "/auth"));
      assertTrue(wrong.getMessage().contains("authenticate as 'csi'"), wrong.getMessage());
      // Authenticated, but outside its permission: refused, and said so.
      EtcdException denied = assertThrows(EtcdException.class, () -> ClusterView.read(good, "/other"));
      assertTrue(denied.getMessage().contains("permission denied"), denied.getMessage());
    }
  }

  @Test
  void wrongPassword_publisherSaysSo_oneErrorPerBackoffStep_andRegistersLocally() throws Exception {
    try (EtcdProcess etcd = EtcdProcess.start(tmp)) {
      enableAuth(etcd.endpoint(), "/auth");
      PluginRegistry r = Plugins.registry();
      try (CatalogPublisher p = CatalogPublisher.builder().registry(r).prefix("/auth").nodeId("n1")
          .etcd(options(etcd.endpoint(), null, null, null, "csi", "not-the-password"))
          .backoff(Duration.ofMillis(200), Duration.ofMillis(400)).build()) {
        p.start();
        Plugins.registerAll(r, "n1", "node:ebs");
        await().atMost(Duration.ofSeconds(10)).until(() -> p.status().etcdErrors() >= 3);
        long t0 = System.nanoTime();
        long errors0 = p.status().etcdErrors();
        await().atMost(Duration.ofSeconds(5)).until(() -> System.nanoTime() - t0 > Duration.ofSeconds(2).toNanos());
        // At most one failed attempt (one log line) per backoff step of 200-400 ms (±20%): no retry storm. Only
        // the storm is bounded: how many steps a loaded machine fits into 2 s is not this test's business.
        long perStep = p.status().etcdErrors() - errors0;
        assertTrue(perStep >= 1 && perStep <= 2000 / 160, "errors in 2 s: " + perStep);
        String e = p.status().lastError();
        assertTrue(e.contains("authenticate as 'csi' failed") && e.contains("invalid user ID or password"), e);
        assertEquals(e.indexOf("invalid user ID or password"), e.lastIndexOf("invalid user ID or password"), "said once: " + e);
        assertFalse(e.contains("not-the-password"), e);
        assertEquals(1, r.listAll(PluginType.CSI_NODE).size(), "the registry is not held up");
        assertFalse(p.status().connected());
      } finally {
        r.close();
      }
    }
  }

  @Test
  void authTokenExpiredWhileQuiet_isRenewedWithoutAFailure() throws Exception {
    // etcd forgets a simple token after --auth-token-ttl of disuse (5 min by default); keep-alives do not use it.
    try (EtcdProcess etcd = EtcdProcess.startWith(tmp, "--auth-token-ttl", "1")) {
      enableAuth(etcd.endpoint(), "/auth");
      EtcdOptions good = options(etcd.endpoint(), null, null, null, "csi", "s3cret");
      PluginRegistry r = Plugins.registry();
      Plugins.registerAll(r, "n1", "node:ebs");
      try (CatalogPublisher p = inSync(r, good, "/auth")) {
        for (int i = 0; i < 2; i++) {
          long quietUntil = System.nanoTime() + Duration.ofMillis(2500).toNanos();
          await().atMost(Duration.ofSeconds(5)).until(() -> System.nanoTime() > quietUntil);
          r.register(plugin(PluginType.CSI_NODE, "nfs" + i, "n1-nfs" + i, true));
          int want = 2 + i;
          await().atMost(Duration.ofSeconds(30)).until(() -> ClusterView.read(good, "/auth").entries().size() == want);
        }
        assertEquals(0, p.status().etcdErrors(), "a token that expired is renewed, not a failure: " + p.status());
        assertEquals(1, p.status().reconciles(), p.status().toString());
      } finally {
        r.close();
      }
    }
  }

  @Test
  void clientCertificateOfAnotherCa_isRefused_andTheErrorSaysWhy() throws Exception {
    try (EtcdProcess etcd = EtcdProcess.startTls(tmp, certs.serverCert, certs.serverKey, certs.caCert)) {
      EtcdOptions foreign = options(etcd.endpoint(), certs.caCert, other.clientCert, other.clientKey, null, null);
      EtcdException refused = assertThrows(EtcdException.class, () -> ClusterView.read(foreign, "/tls"));
      assertTrue(refused.getMessage().contains("etcd refused this client's certificate"), refused.getMessage());
      PluginRegistry r = Plugins.registry();
      try (CatalogPublisher p = CatalogPublisher.builder().registry(r).prefix("/tls").nodeId("n1").etcd(foreign)
          .backoff(Duration.ofMillis(100), Duration.ofMillis(200)).build()) {
        p.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> p.status().etcdErrors() >= 2);
        assertTrue(p.status().lastError().contains("etcd refused this client's certificate"), p.status().lastError());
      } finally {
        r.close();
      }
      // And a server whose certificate the client's CA did not sign: named too.
      EtcdOptions untrusting = options(etcd.endpoint(), other.caCert, certs.clientCert, certs.clientKey, null, null);
      EtcdException untrusted = assertThrows(EtcdException.class, () -> ClusterView.read(untrusting, "/tls"));
      assertTrue(untrusted.getMessage().contains("etcd's certificate is not signed by a trusted CA"), untrusted.getMessage());
    }
  }

  /** A publisher of {@code r} as node n1 under {@code prefix}, started and in sync. */
  private static CatalogPublisher inSync(PluginRegistry r, EtcdOptions etcd, String prefix) throws InterruptedException {
    CatalogPublisher p = CatalogPublisher.builder().registry(r).etcd(etcd).prefix(prefix).nodeId("n1").build();
    p.start();
    assertTrue(p.awaitInSync(Duration.ofSeconds(10)), p.status().toString());
    return p;
  }

  /** root (needed to enable auth) and user csi with read-write on {@code prefix/}. */
  private static void enableAuth(String endpoint, String prefix) throws InterruptedException {
    URI u = URI.create(endpoint);
    ManagedChannel ch = Grpc.newChannelBuilderForAddress(u.getHost(), u.getPort(), InsecureChannelCredentials.create()).build();
    try {
      var auth = AuthGrpc.newBlockingStub(ch).withDeadlineAfter(10, TimeUnit.SECONDS);
      auth.roleAdd(AuthRoleAddRequest.newBuilder().setName("root").build());
      auth.userAdd(AuthUserAddRequest.newBuilder().setName("root").setPassword("rootpw").build());
      auth.userGrantRole(AuthUserGrantRoleRequest.newBuilder().setUser("root").setRole("root").build());
      auth.roleAdd(AuthRoleAddRequest.newBuilder().setName("csi").build());
      ByteString key = EtcdClient.bytes(prefix + "/");
      auth.roleGrantPermission(AuthRoleGrantPermissionRequest.newBuilder().setName("csi").setPerm(Permission.newBuilder()
          .setPermType(Permission.Type.READWRITE).setKey(key).setRangeEnd(EtcdClient.prefixEnd(key))).build());
      auth.userAdd(AuthUserAddRequest.newBuilder().setName("csi").setPassword("s3cret").build());
      auth.userGrantRole(AuthUserGrantRoleRequest.newBuilder().setUser("csi").setRole("csi").build());
      auth.authEnable(AuthEnableRequest.getDefaultInstance());
    } finally {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }
}
