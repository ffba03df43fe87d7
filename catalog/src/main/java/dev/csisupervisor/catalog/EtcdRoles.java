package dev.csisupervisor.catalog;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The etcd permissions each agent needs, so that etcd itself confines every node's writes: a node's user writes its
 * own node key, its own clean-stop marker, its own claims ({@code claims/<node>/}) and the claim guards, and reads
 * the rest; it can neither remove another node's claim nor write an attachment, an election key or a request. An
 * agent that runs a controller plugin (and so may be elected its controller agent) also needs the controller
 * role; the operator's CLI (create, delete, register, force detach) a user with read-write on the whole prefix.
 * The catalog's plugin entries ({@code plugins/<type>/<name>/<node>/...}) are keyed by plugin first, so every
 * node writes that range: one node can hide another's plugins from the scheduling view, not move a disk.
 */
public final class EtcdRoles {
  private EtcdRoles() {}

  /** READ or READWRITE, on one key or on every key under a prefix. */
  public record Permission(boolean write, String key, boolean prefix) {
    public Permission {
      Objects.requireNonNull(key, "key");
    }

    /** The {@code etcdctl role grant-permission} line for {@code role}. */
    public String etcdctl(String role) {
      return "etcdctl role grant-permission " + role + " " + (write ? "readwrite" : "read") + " " + key
          + (prefix ? " --prefix=true" : "");
    }
  }

  /** What the agent of {@code nodeId} needs. */
  public static List<Permission> node(CatalogKeys keys, String nodeId) {
    CatalogKeys.checkNodeId(nodeId);
    return List.of(new Permission(false, keys.root(), true),
        new Permission(true, keys.nodeKey(nodeId), false),
        new Permission(true, keys.stoppedKey(nodeId), false),
        new Permission(true, keys.detachOrderKey(nodeId), false),
        new Permission(true, keys.nodeClaimsRoot(nodeId), true),
        new Permission(true, keys.claimGuardsRoot(), true),
        new Permission(true, keys.pluginsRoot(), true));
  }

  /**
   * What an agent that may be elected a plugin's controller agent needs besides its node role: the election, the
   * attachments, the requests and the volumes it creates and deletes, and every node's claims (a fenced node's go
   * after its unpublish).
   */
  public static List<Permission> controller(CatalogKeys keys) {
    return List.of(new Permission(true, keys.controllersRoot(), true),
        new Permission(true, keys.attachmentsRoot(), true),
        new Permission(true, keys.requestsRoot(), true),
        new Permission(true, keys.volumesRoot(), true),
        new Permission(true, keys.snapshotsRoot(), true),
        new Permission(true, keys.capabilitiesRoot(), true),
        new Permission(true, keys.claimsRoot(), true),
        new Permission(true, keys.conditionsRoot(), true),
        new Permission(true, keys.leaksRoot(), true),
        new Permission(true, keys.capacityRoot(), true));
  }

  /**
   * The etcdctl commands that make user {@code csi-node-<node>} with its role, and with {@code controller} the
   * shared role {@code csi-controller} granted to it too (the passwords are asked by etcdctl).
   */
  public static List<String> etcdctl(CatalogKeys keys, String nodeId, boolean controller) {
    String user = "csi-node-" + nodeId;
    List<String> out = new ArrayList<>();
    out.add("etcdctl role add " + user);
    node(keys, nodeId).forEach(p -> out.add(p.etcdctl(user)));
    out.add("etcdctl user add " + user);
    out.add("etcdctl user grant-role " + user + " " + user);
    if (controller) {
      out.add("etcdctl role add csi-controller");
      controller(keys).forEach(p -> out.add(p.etcdctl("csi-controller")));
      out.add("etcdctl user grant-role " + user + " csi-controller");
    }
    return out;
  }
}
