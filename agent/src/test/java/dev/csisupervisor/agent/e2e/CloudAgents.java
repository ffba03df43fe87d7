package dev.csisupervisor.agent.e2e;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The config of a cluster agent whose one plugin, {@code ebs}, is the mock plugin on a shared cloud
 * ({@code <dir>/cloud}, attach 200 ms): what the cluster volume end-to-end tests run.
 */
final class CloudAgents {
  private CloudAgents() {}

  /**
   * Writes {@code <dir>/<node>.yaml}.
   *
   * @param type the plugin's type: {@code monolith} (controller and node) or {@code node}
   * @param extraArgs more mock plugin arguments, each written quoted
   */
  static Path config(Path dir, String etcdEndpoint, String prefix, String node, String type, String... extraArgs)
      throws Exception {
    return configWith(dir, etcdEndpoint, prefix, node, type, "", extraArgs);
  }

  /** @param clusterLines more lines of the {@code cluster:} section, each indented by two spaces and ended */
  static Path configWith(Path dir, String etcdEndpoint, String prefix, String node, String type, String clusterLines,
      String... extraArgs) throws Exception {
    StringBuilder extra = new StringBuilder();
    for (String a : extraArgs) {
      extra.append(", \"").append(a).append('"');
    }
    String y = "data_dir: " + dir.resolve(node) + "\n"
        + "metrics_address: off\n"
        + "shutdown_grace: 5s\n"
        + "volumes: {verify_mounts: false}\n" // the mock plugin mounts nothing here
        + "plugins:\n  - id: ebs\n    type: " + type + "\n    command: builtin:mock-plugin\n"
        + "    args: [--type, " + type + ", --name, ebs.csi.dev, --node-id, " + node + ", --cloud, "
        + dir.resolve("cloud") + ", --cloud-attach-ms, \"200\"" + extra + "]\n"
        + "cluster:\n  endpoints: [" + etcdEndpoint + "]\n  node_id: " + node + "\n  prefix: " + prefix
        + "\n  lease_ttl: 3s\n" + clusterLines;
    Path f = dir.resolve(node + ".yaml");
    Files.writeString(f, y);
    return f;
  }
}
