package dev.csisupervisor.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.AuthEnableRequest;
import dev.csisupervisor.catalog.etcdpb.AuthGrpc;
import dev.csisupervisor.catalog.etcdpb.AuthRoleAddRequest;
import dev.csisupervisor.catalog.etcdpb.AuthRoleGrantPermissionRequest;
import dev.csisupervisor.catalog.etcdpb.AuthUserAddRequest;
import dev.csisupervisor.catalog.etcdpb.AuthUserGrantRoleRequest;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.testing.EtcdProcess;
import dev.csisupervisor.registry.PluginRegistry;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 35 (9): with one etcd user per node, made from {@link EtcdRoles}, etcd itself confines each node's writes
 * to its own claims: a node cannot remove another node's claim, force it away, write an attachment or stand for a
 * controller election, and still claims, releases, publishes its plugins and marks its clean stop.
 */
class EtcdNodeRolesTest {
  private static final String PLUGIN = "disk.csi";
  private static final String PREFIX = "/roles";

  @TempDir Path tmp;
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private ClusterVolumes as(EtcdProcess etcd, String user, String nodeId) {
    ClusterVolumes v = ClusterVolumes.builder().etcd(options(etcd, user)).prefix(PREFIX).nodeId(nodeId)
        .leaseTtl(Duration.ofSeconds(2)).build();
    closeables.add(v);
    return v;
  }

  private static EtcdOptions options(EtcdProcess etcd, String user) {
    return new EtcdOptions(EtcdOptions.parseEndpoints(etcd.endpoint()), null, null, null, user, user + "-pw",
        Duration.ofSeconds(3));
  }

  private static ClaimRequest claim(String node, String alloc, String vol) {
    return new ClaimRequest(PLUGIN, vol, node, alloc, VolumeAccessMode.SINGLE_NODE_WRITER, false, "csi-" + node, Map.of());
  }

  private static void assertDenied(Runnable write) {
    EtcdException e = assertThrows(EtcdException.class, write::run);
    assertTrue(e.getMessage().contains("permission denied"), e.getMessage());
  }

  @Test
  void aNodesUser_writesOnlyItsOwnClaims() throws Exception {
    EtcdProcess etcd = EtcdProcess.start(tmp);
    closeables.add(etcd);
    CatalogKeys keys = CatalogKeys.of(PREFIX);
    enableAuth(etcd.endpoint(), keys);
    ClusterVolumes admin = as(etcd, "admin", "admin");
    ClusterVolumes n1 = as(etcd, "csi-node-n1", "n1");
    ClusterVolumes n2 = as(etcd, "csi-node-n2", "n2");
    for (String v : List.of("v1", "v2")) {
      admin.register(new ClusterVolume(PLUGIN, v, 1 << 30, Set.of(), List.of(), Map.of(), Map.of()));
    }

    ClusterClaim held = n1.claim(claim("n1", "a1", "v1"));
    n2.claim(claim("n2", "a2", "v2"));
    assertEquals(1, n2.claims(PLUGIN, "v1").size(), "every node reads every claim");

    // n2 cannot take n1's claim away, by release or by force, nor attach, nor lead.
    assertDenied(() -> n2.release(PLUGIN, "v1", "n1", "a1"));
    assertDenied(() -> n2.release(held));
    assertDenied(() -> n2.forceDetach("n1", Optional.empty(), Optional.empty()));
    assertDenied(() -> n2.lead(PLUGIN));
    try (EtcdClient raw = new EtcdClient(options(etcd, "csi-node-n2"))) {
      assertDenied(() -> raw.txn(TxnRequest.newBuilder().addSuccess(EtcdOps.put(keys.attachmentKey(PLUGIN, "v1", "n2"),
          ByteString.copyFromUtf8("{}"), 0)).build()));
      assertDenied(() -> raw.txn(TxnRequest.newBuilder().addSuccess(EtcdOps.put(keys.claimKey(PLUGIN, "v1", "n1", "x"),
          ByteString.copyFromUtf8("{}"), 0)).build()));
    }
    assertEquals(List.of(held.withRevision(0)), n1.claimsOfNode("n1").stream().map(c -> c.withRevision(0)).toList());

    // What a node does do: its own claims, its plugins in the catalog, its clean stop.
    assertTrue(n1.release(held));
    n1.markStopped();
    n1.clearStopped();
    PluginRegistry r = Plugins.registry();
    closeables.add(r);
    Plugins.registerAll(r, "n1", "node:ebs");
    CatalogPublisher p = CatalogPublisher.builder().registry(r).etcd(options(etcd, "csi-node-n1")).prefix(PREFIX)
        .nodeId("n1").leaseTtl(Duration.ofSeconds(3)).build();
    closeables.add(p);
    p.start();
    assertTrue(p.awaitInSync(Duration.ofSeconds(10)), p.status().toString());

    // With the controller role as well, the same node's agent may lead.
    ClusterVolumes c1 = as(etcd, "csi-node-c1", "c1");
    assertTrue(c1.lead(PLUGIN).isPresent());
  }

  /** root (to enable auth), admin (the whole prefix), csi-node-n1/n2 (node roles), csi-node-c1 (node + controller). */
  private static void enableAuth(String endpoint, CatalogKeys keys) throws InterruptedException {
    URI u = URI.create(endpoint);
    ManagedChannel ch = Grpc.newChannelBuilderForAddress(u.getHost(), u.getPort(), InsecureChannelCredentials.create()).build();
    try {
      var auth = AuthGrpc.newBlockingStub(ch).withDeadlineAfter(10, TimeUnit.SECONDS);
      user(auth, "root", "root", List.of());
      user(auth, "admin", "admin", List.of(new EtcdRoles.Permission(true, keys.root(), true)));
      user(auth, "csi-node-n1", "csi-node-n1", EtcdRoles.node(keys, "n1"));
      user(auth, "csi-node-n2", "csi-node-n2", EtcdRoles.node(keys, "n2"));
      user(auth, "csi-node-c1", "csi-node-c1", EtcdRoles.node(keys, "c1"));
      role(auth, "csi-controller", EtcdRoles.controller(keys));
      auth.userGrantRole(AuthUserGrantRoleRequest.newBuilder().setUser("csi-node-c1").setRole("csi-controller").build());
      auth.authEnable(AuthEnableRequest.getDefaultInstance());
    } finally {
      ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static void user(AuthGrpc.AuthBlockingStub auth, String name, String role, List<EtcdRoles.Permission> perms) {
    role(auth, role, perms);
    auth.userAdd(AuthUserAddRequest.newBuilder().setName(name).setPassword(name + "-pw").build());
    auth.userGrantRole(AuthUserGrantRoleRequest.newBuilder().setUser(name).setRole(role).build());
  }

  private static void role(AuthGrpc.AuthBlockingStub auth, String role, List<EtcdRoles.Permission> perms) {
    auth.roleAdd(AuthRoleAddRequest.newBuilder().setName(role).build());
    for (EtcdRoles.Permission p : perms) {
      ByteString key = EtcdClient.bytes(p.key());
      var perm = dev.csisupervisor.catalog.etcdpb.Permission.newBuilder().setKey(key)
          .setPermType(p.write() ? dev.csisupervisor.catalog.etcdpb.Permission.Type.READWRITE
              : dev.csisupervisor.catalog.etcdpb.Permission.Type.READ);
      if (p.prefix()) {
        perm.setRangeEnd(EtcdClient.prefixEnd(key));
      }
      auth.roleGrantPermission(AuthRoleGrantPermissionRequest.newBuilder().setName(role).setPerm(perm).build());
    }
  }
}
