package dev.csisupervisor.agent;

import dev.csisupervisor.admin.v1.DiscoveredSocket;
import dev.csisupervisor.admin.v1.CatalogPublisherStatus;
import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.agent.cluster.ClusterNode;
import dev.csisupervisor.catalog.PublisherStatus;
import dev.csisupervisor.admin.v1.ReloadConfigResponse;
import dev.csisupervisor.admin.v1.ResourceUsage;
import dev.csisupervisor.agent.admin.ProtoMapper;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.discovery.DiscoveryDir;
import dev.csisupervisor.tasks.resources.ResourceSample;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's side of the admin API: its status and a reload, as the admin protos. (The
 * registry's side is mapped by {@link ProtoMapper}.)
 */
final class AdminProtos {
  // The agent's log lines keep the one logger name operators filter on.
  private static final Logger log = LoggerFactory.getLogger(Agent.class);

  private AdminProtos() {}

  /** The cluster catalog publisher's state, for {@code GetAgentStatus}. */
  static CatalogPublisherStatus catalogProto(ClusterNode n) {
    PublisherStatus s = n.status();
    return CatalogPublisherStatus.newBuilder()
        .setNodeId(n.config().nodeId())
        .setPrefix(n.config().prefix())
        .addAllEndpoints(n.config().etcd().endpoints().stream().map(Object::toString).toList())
        .setConnected(s.connected())
        .setEndpoint(s.endpoint())
        .setLeaseId(s.leaseId() == 0 ? "" : Long.toHexString(s.leaseId()))
        .setLeaseTtlLeftSeconds(s.leaseTtlLeft().toMillis() / 1000.0)
        .setLeaseTtlSeconds(n.config().leaseTtl().toSeconds())
        .setBacklog(s.backlog())
        .setOldestPendingSeconds(s.oldestPending().toMillis() / 1000.0)
        .setLastPublishLagSeconds(s.lastPublishLag().toMillis() / 1000.0)
        .setPublished(s.published())
        .setEtcdErrors(s.etcdErrors())
        .setReconciles(s.reconciles())
        .setLastError(s.lastError())
        .build();
  }

  /** {@code GetAgentStatus}: the agent, its tasks and the discovery directory. */
  static GetAgentStatusResponse agentStatus(Agent agent) {
    AgentConfig config = agent.config();
    InetSocketAddress metrics = agent.metricsAddress().orElse(null);
    GetAgentStatusResponse.Builder b = GetAgentStatusResponse.newBuilder()
        .setPid(ProcessHandle.current().pid())
        .setVersion(Agent.version())
        .setStarted(ProtoMapper.timestamp(agent.started()))
        .setDataDir(config.dataDir().toString())
        .setCsiRoot(config.csiRoot().toString())
        .setAdminSocket(config.adminSocket().toString())
        .setMetricsUrl(metrics == null ? "" : "http://"
            + metrics.getAddress().getHostAddress() + ":" + metrics.getPort() + "/metrics");
    for (TaskStatus t : agent.tasks()) {
      b.addTasks(taskProto(t));
    }
    if (config.discoveryDir() != null) {
      b.setDiscoveryDir(config.discoveryDir().toString());
      for (DiscoveryDir.Entry e : agent.discoveredSockets()) {
        b.addDiscoveredSockets(DiscoveredSocket.newBuilder()
            .setSocketPath(e.socket().toString())
            .setId(e.id())
            .setState(e.state().name().toLowerCase(Locale.ROOT))
            .setKind(e.kind() == null ? "" : e.kind().dirName())
            .setMessage(e.message()));
      }
    }
    agent.clusterNode().ifPresent(n -> b.setCluster(catalogProto(n)));
    if (agent.volumes() != null) {
      b.addAllPendingVolumes(dev.csisupervisor.agent.admin.AdminVolumeProtos.volumes(agent.volumes().pending(),
          agent.volumes()));
      b.putAllAbnormalVolumes(agent.volumes().abnormal());
    }
    return b.build();
  }

  /** The admin API's view of a task. */
  static dev.csisupervisor.admin.v1.TaskStatus taskProto(TaskStatus t) {
    var b = dev.csisupervisor.admin.v1.TaskStatus.newBuilder()
        .setId(t.id())
        .setKind(t.kind().dirName())
        .setAllocId(t.allocId())
        .setLaunched(t.launched())
        .setProcessState(t.processState().name().toLowerCase(Locale.ROOT))
        .setPid(t.pid())
        .setRestarts(t.restarts())
        .setPhase(t.phase().name())
        .setHealthy(t.healthy())
        .setSocketPath(t.socket().toString())
        // A log file that was never written (the process never started) is not shown.
        .setLogFile(t.logFile() == null || !Files.exists(t.logFile()) ? ""
            : t.logFile().toString())
        .setReattached(t.reattached())
        .setDiscovered(t.discovered())
        .setRevision(t.revision() == null ? "" : t.revision())
        .setArtifactError(t.artifactError() == null ? "" : t.artifactError())
        .setLastFailure(t.lastFailure() == null ? "" : t.lastFailure());
    if (t.lastFailureTime() != null) {
      b.setLastFailureTime(ProtoMapper.timestamp(t.lastFailureTime()));
    }
    if (t.launched() && (!t.resources().isEmpty() || t.limits().any())) {
      var usage = ResourceUsage.newBuilder()
          .setMaxMemoryBytes(t.limits().maxMemoryBytes())
          .setMaxCpuPercent(t.limits().maxCpuPercent())
          .setLimitRestarts(t.limitRestarts());
      t.latestResources().ifPresent(s -> usage.setLatest(sampleProto(s)));
      for (ResourceSample s : t.resources()) {
        usage.addHistory(sampleProto(s));
      }
      b.setResources(usage);
    }
    return b.build();
  }

  private static dev.csisupervisor.admin.v1.ResourceSample sampleProto(ResourceSample s) {
    return dev.csisupervisor.admin.v1.ResourceSample.newBuilder()
        .setTime(ProtoMapper.timestamp(s.time()))
        .setPid(s.pid())
        .setCpuPercent(s.cpuKnown() ? s.cpuPercent() : -1)
        .setMemoryBytes(s.memoryBytes())
        .build();
  }

  /** {@code ReloadConfig}: what changed, or the file's problems. */
  static ReloadConfigResponse reload(Agent agent) {
    AgentConfig config = agent.config();
    if (config.source() == null) {
      throw new IllegalStateException("the agent's config was not read from a file");
    }
    var b = ReloadConfigResponse.newBuilder().setConfigFile(config.source().toString());
    try {
      b.addAllChanges(agent.reloadFromFile()).setApplied(true);
    } catch (ConfigException e) {
      log.error("reload: invalid config, nothing changed: {}", e.getMessage());
      b.setApplied(false).addAllProblems(e.problems());
    }
    return b.build();
  }
}
