package dev.csisupervisor.cli;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageLite;
import com.google.protobuf.Parser;
import dev.csisupervisor.admin.v1.AgentAdminGrpc;
import dev.csisupervisor.admin.v1.GetAgentStatusRequest;
import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.admin.v1.GetPluginRequest;
import dev.csisupervisor.admin.v1.GetPluginResponse;
import dev.csisupervisor.admin.v1.ListPluginsRequest;
import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.admin.v1.ReloadConfigRequest;
import dev.csisupervisor.admin.v1.ReloadConfigResponse;
import dev.csisupervisor.admin.v1.WatchEventsRequest;
import dev.csisupervisor.admin.v1.WatchEventsResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;

/**
 * A blocking client of the agent's admin API, for the CLI and tests. Every call has a deadline; a followed event
 * stream ({@link #watch}) has one until its first answer. Errors become {@link AdminException}s that say plainly when no
 * agent is running at the socket.
 *
 * <p>Each call is a connection of its own ({@link GrpcCall}: HTTP/2 by hand, no gRPC channel or Netty, which a
 * short-lived CLI would spend most of its time loading).
 *
 * <p>Thread-safe; close it when done.
 */
public final class AdminClient implements AutoCloseable {
  private static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(10);
  private static final String ADMIN = AgentAdminGrpc.SERVICE_NAME + "/";
  private static final String VOLUMES = dev.csisupervisor.admin.v1.VolumeAdminGrpc.SERVICE_NAME + "/";

  private final Path socket;
  /** The deadline of quick calls, and of an event stream's first answer. */
  private final Duration deadline;
  /** The event streams {@link #watch} opened: closed with the client. */
  private final java.util.Set<GrpcCall> streams = java.util.concurrent.ConcurrentHashMap.newKeySet();

  private AdminClient(Path socket, Duration deadline) {
    this.socket = socket;
    this.deadline = deadline;
  }

  /**
   * A client for the agent at {@code socket}.
   *
   * @throws AdminException if there is no socket file there (no agent is running)
   */
  public static AdminClient connect(Path socket) throws AdminException {
    return connect(socket, DEFAULT_DEADLINE);
  }

  /** {@link #connect(Path)} with {@code deadline} for the quick calls in place of 10 s (tests). */
  static AdminClient connect(Path socket, Duration deadline) throws AdminException {
    requireNonNull(socket, "socket");
    requireNonNull(deadline, "deadline");
    if (deadline.isNegative() || deadline.isZero()) {
      throw new IllegalArgumentException("deadline must be positive, got " + deadline);
    }
    String problem = unreachable(socket);
    if (problem != null) {
      throw new AdminException(problem, !problem.contains("permission denied"));
    }
    return new AdminClient(socket, deadline);
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
    try {
      GrpcCall.unary(socket, ADMIN + "GetAgentStatus", GetAgentStatusRequest.getDefaultInstance().toByteArray(),
          Duration.ofSeconds(2));
      return true;
    } catch (StatusRuntimeException e) {
      return e.getStatus().getCode() != Status.Code.UNAVAILABLE
          && e.getStatus().getCode() != Status.Code.DEADLINE_EXCEEDED;
    }
  }

  /** One unary call: {@code method} of {@link #ADMIN} or {@link #VOLUMES}; a failure for people. */
  private <R> R unary(String method, MessageLite request, Parser<R> answer, Duration deadline)
      throws AdminException {
    try {
      return call(method, request, answer, deadline);
    } catch (StatusRuntimeException e) {
      throw translate(e);
    }
  }

  /** One unary call, its answer parsed; a failure as gRPC's status. */
  private <R> R call(String method, MessageLite request, Parser<R> answer, Duration deadline) {
    byte[] bytes = GrpcCall.unary(socket, method, request.toByteArray(), deadline);
    try {
      return answer.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      throw Status.INTERNAL.withDescription("cannot read the answer to " + method + ": " + e.getMessage())
          .asRuntimeException();
    }
  }

  public Path socket() {
    return socket;
  }

  public List<Plugin> listPlugins(PluginType type) throws AdminException {
    return unary(ADMIN + "ListPlugins", ListPluginsRequest.newBuilder().setType(type).build(),
        ListPluginsResponse.parser(), deadline).getPluginsList();
  }

  /** The plugin, or empty if none of that type and name is registered. */
  public Optional<Plugin> getPlugin(PluginType type, String name) throws AdminException {
    return getPluginDetails(type, name).map(GetPluginResponse::getPlugin);
  }

  /** The plugin and the agent's task for it, or empty if none of that type and name is registered. */
  public Optional<GetPluginResponse> getPluginDetails(PluginType type, String name)
      throws AdminException {
    try {
      return Optional.of(call(ADMIN + "GetPlugin", GetPluginRequest.newBuilder().setType(type).setName(name).build(),
          GetPluginResponse.parser(), deadline));
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.NOT_FOUND) {
        return Optional.empty();
      }
      throw translate(e);
    }
  }

  public GetAgentStatusResponse status() throws AdminException {
    return unary(ADMIN + "GetAgentStatus", GetAgentStatusRequest.getDefaultInstance(),
        GetAgentStatusResponse.parser(), deadline);
  }

  /** Asks the agent to re-read its config file: what changed, or the file's problems. */
  public ReloadConfigResponse reload() throws AdminException {
    // A reload applies changes without waiting for processes; the deadline is generous.
    return unary(ADMIN + "ReloadConfig", ReloadConfigRequest.getDefaultInstance(), ReloadConfigResponse.parser(),
        Duration.ofSeconds(60));
  }

  /**
   * The event stream, followed: snapshots, then events, until the agent ends it (a final {@code Lagged}
   * message, or shutdown) or the client is closed; the first answer within the client's deadline. The iterator's
   * {@code hasNext}/{@code next} throw {@link StatusRuntimeException}; pass it to {@link #translate}.
   */
  public Iterator<WatchEventsResponse> watch(PluginType type) {
    return watch(type, true);
  }

  /**
   * The event stream as {@link #watch(PluginType)}; without {@code follow}, for its snapshots only: then the
   * whole stream is bounded by the client's deadline (an agent that never sends them is an error, not a hang).
   */
  public Iterator<WatchEventsResponse> watch(PluginType type, boolean follow) {
    requireNonNull(type, "type");
    byte[] request = WatchEventsRequest.newBuilder().setType(type).build().toByteArray();
    GrpcCall call = follow ? GrpcCall.follow(socket, ADMIN + "WatchEvents", request, deadline)
        : GrpcCall.start(socket, ADMIN + "WatchEvents", request, deadline);
    streams.add(call);
    return new Iterator<>() {
      private WatchEventsResponse next;
      private boolean ended;

      @Override
      public boolean hasNext() {
        if (next == null && !ended) {
          byte[] bytes;
          try {
            bytes = call.next();
          } catch (StatusRuntimeException e) {
            end();
            throw e;
          }
          if (bytes == null) {
            end();
          } else {
            try {
              next = WatchEventsResponse.parseFrom(bytes);
            } catch (InvalidProtocolBufferException e) {
              end();
              throw Status.INTERNAL.withDescription("cannot read an event: " + e.getMessage()).asRuntimeException();
            }
          }
        }
        return next != null;
      }

      @Override
      public WatchEventsResponse next() {
        if (!hasNext()) {
          throw new java.util.NoSuchElementException();
        }
        WatchEventsResponse n = next;
        next = null;
        return n;
      }

      private void end() {
        ended = true;
        streams.remove(call);
        call.close();
      }
    };
  }

  // ---- volumes ----

  /** A volume call that may take a while (a mount waits for its plugin, a driver formats a disk). */
  private static final Duration VOLUME_DEADLINE = Duration.ofMinutes(10);

  public dev.csisupervisor.admin.v1.CreateVolumeResponse createVolume(
      dev.csisupervisor.admin.v1.CreateVolumeRequest request) throws AdminException {
    return unary(VOLUMES + "CreateVolume", request, dev.csisupervisor.admin.v1.CreateVolumeResponse.parser(),
        VOLUME_DEADLINE);
  }

  public dev.csisupervisor.admin.v1.DeleteVolumeResponse deleteVolume(
      dev.csisupervisor.admin.v1.DeleteVolumeRequest request) throws AdminException {
    return unary(VOLUMES + "DeleteVolume", request, dev.csisupervisor.admin.v1.DeleteVolumeResponse.parser(),
        VOLUME_DEADLINE);
  }

  public dev.csisupervisor.admin.v1.MountVolumeResponse mountVolume(
      dev.csisupervisor.admin.v1.MountVolumeRequest request) throws AdminException {
    return unary(VOLUMES + "MountVolume", request, dev.csisupervisor.admin.v1.MountVolumeResponse.parser(),
        VOLUME_DEADLINE);
  }

  /** Answers after the unmount or the request's wait (the agent's default 30 s), whichever is first. */
  public dev.csisupervisor.admin.v1.UnmountVolumeResponse unmountVolume(
      dev.csisupervisor.admin.v1.UnmountVolumeRequest request) throws AdminException {
    return unary(VOLUMES + "UnmountVolume", request, dev.csisupervisor.admin.v1.UnmountVolumeResponse.parser(),
        waitDeadline(request.getWaitSeconds()));
  }

  /** Unmounts every volume of an allocation; answers like {@link #unmountVolume}. */
  public dev.csisupervisor.admin.v1.ReleaseAllocResponse releaseAlloc(
      dev.csisupervisor.admin.v1.ReleaseAllocRequest request) throws AdminException {
    return unary(VOLUMES + "ReleaseAlloc", request, dev.csisupervisor.admin.v1.ReleaseAllocResponse.parser(),
        waitDeadline(request.getWaitSeconds()));
  }

  /** Mount points under the CSI root no volume record names; with {@code remove}, unmounted. */
  public dev.csisupervisor.admin.v1.CollectOrphansResponse collectOrphans(boolean remove) throws AdminException {
    return unary(VOLUMES + "CollectOrphans",
        dev.csisupervisor.admin.v1.CollectOrphansRequest.newBuilder().setRemove(remove).build(),
        dev.csisupervisor.admin.v1.CollectOrphansResponse.parser(), VOLUME_DEADLINE);
  }

  /** The deadline of a call that answers after {@code waitSeconds} at most (0: the agent's 30 s), with margin. */
  private static Duration waitDeadline(int waitSeconds) {
    long wait = waitSeconds == 0 ? 30 : Integer.toUnsignedLong(waitSeconds);
    return Duration.ofSeconds(wait + 30);
  }

  public dev.csisupervisor.admin.v1.ListVolumesResponse listVolumes() throws AdminException {
    return unary(VOLUMES + "ListVolumes", dev.csisupervisor.admin.v1.ListVolumesRequest.getDefaultInstance(),
        dev.csisupervisor.admin.v1.ListVolumesResponse.parser(), deadline);
  }

  public dev.csisupervisor.admin.v1.GetVolumeStatsResponse volumeStats(
      dev.csisupervisor.admin.v1.GetVolumeStatsRequest request) throws AdminException {
    return unary(VOLUMES + "GetVolumeStats", request, dev.csisupervisor.admin.v1.GetVolumeStatsResponse.parser(),
        VOLUME_DEADLINE);
  }

  public dev.csisupervisor.admin.v1.ExpandVolumeResponse expandVolume(
      dev.csisupervisor.admin.v1.ExpandVolumeRequest request) throws AdminException {
    return unary(VOLUMES + "ExpandVolume", request, dev.csisupervisor.admin.v1.ExpandVolumeResponse.parser(),
        VOLUME_DEADLINE);
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

  /** Ends the event streams still open. */
  @Override
  public void close() {
    for (GrpcCall call : streams) {
      call.close();
    }
    streams.clear();
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
