package dev.csisupervisor.cli;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.admin.v1.AgentAdminGrpc;
import dev.csisupervisor.admin.v1.GetAgentStatusRequest;
import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.admin.v1.GetPluginRequest;
import dev.csisupervisor.admin.v1.GetPluginResponse;
import dev.csisupervisor.admin.v1.ListPluginsRequest;
import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.admin.v1.ReloadConfigRequest;
import dev.csisupervisor.admin.v1.ReloadConfigResponse;
import dev.csisupervisor.admin.v1.WatchEventsRequest;
import dev.csisupervisor.admin.v1.WatchEventsResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A blocking client of the agent's admin API, for the CLI and tests. Every call but
 * {@link #watch} has a deadline. Errors become {@link AdminException}s that say plainly when no
 * agent is running at the socket.
 *
 * <p>Thread-safe; close it when done.
 */
public final class AdminClient implements AutoCloseable {
  private static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(10);

  private final Path socket;
  private final EventLoopGroup group;
  private final ManagedChannel channel;
  private final AgentAdminGrpc.AgentAdminBlockingStub stub;
  private final dev.csisupervisor.admin.v1.VolumeAdminGrpc.VolumeAdminBlockingStub volumeStub;

  private AdminClient(Path socket) {
    this.socket = socket;
    this.group = new MultiThreadIoEventLoopGroup(1,
        new DefaultThreadFactory("csi-agent-admin-client", true), EpollIoHandler.newFactory());
    this.channel = NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollDomainSocketChannel.class)
        .eventLoopGroup(group)
        // Unix sockets have no SO_KEEPALIVE; Netty would warn on every connection.
        .withOption(ChannelOption.SO_KEEPALIVE, null)
        .overrideAuthority("localhost")
        .usePlaintext()
        .build();
    this.stub = AgentAdminGrpc.newBlockingStub(channel);
    this.volumeStub = dev.csisupervisor.admin.v1.VolumeAdminGrpc.newBlockingStub(channel);
  }

  /**
   * A client for the agent at {@code socket}.
   *
   * @throws AdminException if there is no socket file there (no agent is running)
   */
  public static AdminClient connect(Path socket) throws AdminException {
    requireNonNull(socket, "socket");
    String problem = unreachable(socket);
    if (problem != null) {
      throw new AdminException(problem, !problem.contains("permission denied"));
    }
    return new AdminClient(socket);
  }

  /**
   * Why {@code socket} cannot be used, or null if it is there: a missing socket means no agent,
   * a directory the caller may not search is a permission problem (often: not root).
   */
  static String unreachable(Path socket) {
    try {
      Files.readAttributes(socket, java.nio.file.attribute.BasicFileAttributes.class,
          java.nio.file.LinkOption.NOFOLLOW_LINKS);
      return null;
    } catch (java.nio.file.NoSuchFileException e) {
      return "no agent is running at " + socket + " (no such socket)";
    } catch (java.nio.file.AccessDeniedException e) {
      return "cannot reach the agent at " + socket + ": permission denied (its directory "
          + socket.getParent() + " is not accessible to this user; try as the agent's user)";
    } catch (java.io.IOException e) {
      return "cannot reach the agent at " + socket + ": " + e.getMessage();
    }
  }

  /** Whether an agent answers at {@code socket} (used to tell a stale socket from a live one). */
  public static boolean answers(Path socket) {
    try (AdminClient c = new AdminClient(socket)) {
      c.stub.withDeadlineAfter(2, TimeUnit.SECONDS).getAgentStatus(
          GetAgentStatusRequest.getDefaultInstance());
      return true;
    } catch (StatusRuntimeException e) {
      return e.getStatus().getCode() != Status.Code.UNAVAILABLE
          && e.getStatus().getCode() != Status.Code.DEADLINE_EXCEEDED;
    }
  }

  public Path socket() {
    return socket;
  }

  public List<Plugin> listPlugins(PluginType type) throws AdminException {
    try {
      return deadline().listPlugins(ListPluginsRequest.newBuilder().setType(type).build())
          .getPluginsList();
    } catch (StatusRuntimeException e) {
      throw translate(e);
    }
  }

  /** The plugin, or empty if none of that type and name is registered. */
  public Optional<Plugin> getPlugin(PluginType type, String name) throws AdminException {
    try {
      return Optional.of(deadline().getPlugin(GetPluginRequest.newBuilder().setType(type)
          .setName(name).build()).getPlugin());
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.NOT_FOUND) {
        return Optional.empty();
      }
      throw translate(e);
    }
  }

  /** The plugin and the agent's task for it, or empty if none of that type and name is registered. */
  public Optional<GetPluginResponse> getPluginDetails(PluginType type, String name)
      throws AdminException {
    try {
      return Optional.of(deadline().getPlugin(GetPluginRequest.newBuilder().setType(type)
          .setName(name).build()));
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.NOT_FOUND) {
        return Optional.empty();
      }
      throw translate(e);
    }
  }

  public GetAgentStatusResponse status() throws AdminException {
    try {
      return deadline().getAgentStatus(GetAgentStatusRequest.getDefaultInstance());
    } catch (StatusRuntimeException e) {
      throw translate(e);
    }
  }

  /** Asks the agent to re-read its config file: what changed, or the file's problems. */
  public ReloadConfigResponse reload() throws AdminException {
    try {
      // A reload applies changes without waiting for processes; the deadline is generous.
      return stub.withDeadlineAfter(60, TimeUnit.SECONDS)
          .reloadConfig(ReloadConfigRequest.getDefaultInstance());
    } catch (StatusRuntimeException e) {
      throw translate(e);
    }
  }

  /**
   * The event stream: snapshots, then events, until the agent ends it (a final {@code Lagged}
   * message, or shutdown). The iterator's {@code hasNext}/{@code next} throw
   * {@link StatusRuntimeException}; pass it to {@link #translate}.
   */
  public Iterator<WatchEventsResponse> watch(PluginType type) {
    return stub.watchEvents(WatchEventsRequest.newBuilder().setType(type).build());
  }

  // ---- volumes ----

  /** A volume call that may take a while (a mount waits for its plugin, a driver formats a disk). */
  private static final Duration VOLUME_DEADLINE = Duration.ofMinutes(10);

  @FunctionalInterface
  private interface VolumeCall<T> {
    T call(dev.csisupervisor.admin.v1.VolumeAdminGrpc.VolumeAdminBlockingStub stub);
  }

  private <T> T volumes(Duration deadline, VolumeCall<T> call) throws AdminException {
    try {
      return call.call(volumeStub.withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS));
    } catch (StatusRuntimeException e) {
      throw translate(e);
    }
  }

  public dev.csisupervisor.admin.v1.CreateVolumeResponse createVolume(
      dev.csisupervisor.admin.v1.CreateVolumeRequest request) throws AdminException {
    return volumes(VOLUME_DEADLINE, s -> s.createVolume(request));
  }

  public dev.csisupervisor.admin.v1.DeleteVolumeResponse deleteVolume(
      dev.csisupervisor.admin.v1.DeleteVolumeRequest request) throws AdminException {
    return volumes(VOLUME_DEADLINE, s -> s.deleteVolume(request));
  }

  public dev.csisupervisor.admin.v1.MountVolumeResponse mountVolume(
      dev.csisupervisor.admin.v1.MountVolumeRequest request) throws AdminException {
    return volumes(VOLUME_DEADLINE, s -> s.mountVolume(request));
  }

  /** Answers after the unmount or the request's wait (the agent's default 30 s), whichever is first. */
  public dev.csisupervisor.admin.v1.UnmountVolumeResponse unmountVolume(
      dev.csisupervisor.admin.v1.UnmountVolumeRequest request) throws AdminException {
    return volumes(waitDeadline(request.getWaitSeconds()), s -> s.unmountVolume(request));
  }

  /** Unmounts every volume of an allocation; answers like {@link #unmountVolume}. */
  public dev.csisupervisor.admin.v1.ReleaseAllocResponse releaseAlloc(
      dev.csisupervisor.admin.v1.ReleaseAllocRequest request) throws AdminException {
    return volumes(waitDeadline(request.getWaitSeconds()), s -> s.releaseAlloc(request));
  }

  /** Mount points under the CSI root no volume record names; with {@code remove}, unmounted. */
  public dev.csisupervisor.admin.v1.CollectOrphansResponse collectOrphans(boolean remove) throws AdminException {
    return volumes(VOLUME_DEADLINE, s -> s.collectOrphans(
        dev.csisupervisor.admin.v1.CollectOrphansRequest.newBuilder().setRemove(remove).build()));
  }

  /** The deadline of a call that answers after {@code waitSeconds} at most (0: the agent's 30 s), with margin. */
  private static Duration waitDeadline(int waitSeconds) {
    long wait = waitSeconds == 0 ? 30 : Integer.toUnsignedLong(waitSeconds);
    return Duration.ofSeconds(wait + 30);
  }

  public dev.csisupervisor.admin.v1.ListVolumesResponse listVolumes() throws AdminException {
    return volumes(DEFAULT_DEADLINE, s -> s.listVolumes(dev.csisupervisor.admin.v1.ListVolumesRequest.getDefaultInstance()));
  }

  public dev.csisupervisor.admin.v1.GetVolumeStatsResponse volumeStats(
      dev.csisupervisor.admin.v1.GetVolumeStatsRequest request) throws AdminException {
    return volumes(VOLUME_DEADLINE, s -> s.getVolumeStats(request));
  }

  public dev.csisupervisor.admin.v1.ExpandVolumeResponse expandVolume(
      dev.csisupervisor.admin.v1.ExpandVolumeRequest request) throws AdminException {
    return volumes(VOLUME_DEADLINE, s -> s.expandVolume(request));
  }

  private AgentAdminGrpc.AgentAdminBlockingStub deadline() {
    return stub.withDeadlineAfter(DEFAULT_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** A gRPC error as a message for people. */
  public AdminException translate(StatusRuntimeException e) {
    Status s = e.getStatus();
    if (s.getCode() == Status.Code.UNAVAILABLE) {
      String cause = s.getCause() != null && s.getCause().getMessage() != null
          ? s.getCause().getMessage() : s.getDescription();
      boolean refused = cause != null && cause.toLowerCase().contains("refused");
      boolean denied = cause != null && cause.toLowerCase().contains("permission denied");
      if (denied) {
        return new AdminException("cannot reach the agent at " + socket + ": permission denied"
            + " (try as the agent's user)", false);
      }
      if (refused || !Files.exists(socket)) {
        return new AdminException("no agent is running at " + socket + " ("
            + (refused ? "connection refused" : "no such socket") + ")", true);
      }
      return new AdminException("the agent at " + socket + " is unavailable: "
          + (cause == null ? s.getCode() : cause), true);
    }
    if (s.getCode() == Status.Code.DEADLINE_EXCEEDED) {
      return new AdminException("the agent at " + socket + " did not answer in time", false);
    }
    return new AdminException("the agent at " + socket + " answered " + s.getCode()
        + (s.getDescription() == null ? "" : ": " + s.getDescription()), false);
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
  }

  /** An admin call failed; the message is for people. */
  public static final class AdminException extends Exception {
    private static final long serialVersionUID = 1L;
    private final boolean noAgent;

    public AdminException(String message, boolean noAgent) {
      super(message);
      this.noAgent = noAgent;
    }

    /** Whether the failure means no agent could be reached at the socket. */
    public boolean noAgent() {
      return noAgent;
    }
  }
}
