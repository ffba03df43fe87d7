package dev.csisupervisor.agent.admin;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.admin.v1.CollectOrphansRequest;
import dev.csisupervisor.admin.v1.CollectOrphansResponse;
import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.CreateVolumeResponse;
import dev.csisupervisor.admin.v1.DeleteVolumeRequest;
import dev.csisupervisor.admin.v1.DeleteVolumeResponse;
import dev.csisupervisor.admin.v1.ExpandVolumeRequest;
import dev.csisupervisor.admin.v1.ExpandVolumeResponse;
import dev.csisupervisor.admin.v1.GetVolumeStatsRequest;
import dev.csisupervisor.admin.v1.GetVolumeStatsResponse;
import dev.csisupervisor.admin.v1.ListVolumesRequest;
import dev.csisupervisor.admin.v1.ListVolumesResponse;
import dev.csisupervisor.admin.v1.MountVolumeRequest;
import dev.csisupervisor.admin.v1.MountVolumeResponse;
import dev.csisupervisor.admin.v1.OrphanMountInfo;
import dev.csisupervisor.admin.v1.ReleaseAllocRequest;
import dev.csisupervisor.admin.v1.ReleaseAllocResponse;
import dev.csisupervisor.admin.v1.UnmountVolumeRequest;
import dev.csisupervisor.admin.v1.UnmountVolumeResponse;
import dev.csisupervisor.admin.v1.VolumeAdminGrpc;
import dev.csisupervisor.admin.v1.VolumeUsageStat;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.common.Printable;
import dev.csisupervisor.common.SecretsFiles;
import dev.csisupervisor.volumes.UnmountRequest;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeException;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin API's {@code VolumeAdmin} service over the agent's {@link VolumeManager}. Answers when
 * the manager's future completes (no thread waits); an unmount or an allocation's release answers
 * after its wait at most, on the agent's scheduler. Bad input is {@code INVALID_ARGUMENT} naming the
 * field; a {@link VolumeException} keeps its reason as a code (see {@link #status}). Secrets go from
 * the request to the plugin only; of a secrets file the manager keeps the path. Thread-safe.
 */
public final class VolumeAdminService extends VolumeAdminGrpc.VolumeAdminImplBase {
  private static final Logger log = LoggerFactory.getLogger(VolumeAdminService.class);
  private static final Duration DEFAULT_UNMOUNT_WAIT = Duration.ofSeconds(30);

  private final VolumeManager volumes;
  private final ScheduledExecutorService scheduler;
  private final Function<String, Optional<String>> unknownPlugin;

  /** Every plugin id is asked of the manager (which waits for it up to its mount wait). */
  public VolumeAdminService(VolumeManager volumes, ScheduledExecutorService scheduler) {
    this(volumes, scheduler, id -> Optional.empty());
  }

  /**
   * @param unknownPlugin for a plugin id no mount, create, delete or expansion could ever reach (the config does not
   *     name it and discovery has not seen it), why it is refused at once, naming the plugin ids there are; empty for
   *     an id that may come
   */
  public VolumeAdminService(VolumeManager volumes, ScheduledExecutorService scheduler,
      Function<String, Optional<String>> unknownPlugin) {
    this.volumes = Objects.requireNonNull(volumes, "volumes");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.unknownPlugin = Objects.requireNonNull(unknownPlugin, "unknownPlugin");
  }

  /**
   * Refuses at once ({@code NOT_FOUND}, naming the agent's plugins) a plugin id no call could ever reach; whether it
   * did. A known id that is not ready yet is the manager's to wait for (up to its mount wait).
   */
  private boolean refusedUnknown(String pluginId, StreamObserver<?> response) {
    Optional<String> unknown = pluginId.isEmpty() ? Optional.empty() : unknownPlugin.apply(pluginId);
    unknown.ifPresent(why -> response.onError(Status.NOT_FOUND.withDescription(why).asException()));
    return unknown.isPresent();
  }

  @Override
  public void createVolume(CreateVolumeRequest r, StreamObserver<CreateVolumeResponse> response) {
    if (refusedUnknown(r.getPlugin(), response)) {
      return;
    }
    answer(response, () -> volumes.create(r.getPlugin(), r.getName(), range(r.getRequiredBytes(), r.getLimitBytes()),
            List.of(AdminVolumeProtos.capability(r.getAccess(), "access")), r.getParametersMap(),
            secrets(r.getSecretsMap()),
            AdminVolumeProtos.topology(r.getTopologyMap(), "topology")),
        v -> CreateVolumeResponse.newBuilder().setVolumeId(v.volumeId()).setCapacityBytes(v.capacityBytes())
            .putAllVolumeContext(v.volumeContext()).addAllAccessibleTopology(AdminVolumeProtos.topologies(
                v.accessibleTopology())).build());
  }

  @Override
  public void deleteVolume(DeleteVolumeRequest r, StreamObserver<DeleteVolumeResponse> response) {
    if (refusedUnknown(r.getPlugin(), response)) {
      return;
    }
    answer(response, () -> volumes.delete(r.getPlugin(), r.getVolumeId(), secrets(r.getSecretsMap())),
        v -> DeleteVolumeResponse.getDefaultInstance());
  }

  @Override
  public void mountVolume(MountVolumeRequest r, StreamObserver<MountVolumeResponse> response) {
    if (refusedUnknown(r.getPlugin(), response)) {
      return;
    }
    answer(response, () -> volumes.mount(claim(r)),
        m -> MountVolumeResponse.newBuilder().setTargetPath(m.targetPath().toString())
            .setStagingPath(m.stagingPath().map(Object::toString).orElse("")).setUsage(m.usage().dirName()).build());
  }

  @Override
  public void unmountVolume(UnmountVolumeRequest r, StreamObserver<UnmountVolumeResponse> response) {
    // Asked before the unmount: an alloc that never had the volume here is told so (the unmount is done at once).
    boolean held = volumes.find(r.getPlugin(), r.getVolumeId()).map(v -> v.allocs().contains(r.getAllocId()))
        .orElse(false);
    CompletableFuture<Void> unmount;
    try {
      unmount = volumes.unmount(unmountRequest(r));
    } catch (IllegalArgumentException | NullPointerException e) {
      response.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asException());
      return;
    }
    Supplier<String> pending = r.getForce()
        ? () -> "recorded and retried: " + waitingFor(List.of(r.getPlugin() + "/" + r.getVolumeId()))
        : () -> "it is recorded and finishes when node plugin " + r.getPlugin() + " is ready and answers";
    answerWithin(response, r.getWaitSeconds(), unmount.thenApply(v -> UnmountVolumeResponse.newBuilder()
        .setDone(true).setMessage(held ? "" : "volume " + r.getVolumeId() + " of plugin " + r.getPlugin()
            + " was not mounted for alloc " + r.getAllocId() + " on this node: nothing to unmount").build()), wait -> UnmountVolumeResponse.newBuilder().setDone(false)
        .setMessage("pending after " + wait.toSeconds() + " s: " + pending.get() + "; see csi-agent status")
        .build());
  }

  @Override
  public void releaseAlloc(ReleaseAllocRequest r, StreamObserver<ReleaseAllocResponse> response) {
    List<String> held = volumes.list().stream().filter(v -> v.allocs().contains(r.getAllocId()))
        .map(v -> v.pluginId() + "/" + v.volumeId()).toList();
    CompletableFuture<List<String>> release;
    try {
      release = volumes.releaseAlloc(r.getAllocId(), r.getForce());
    } catch (IllegalArgumentException | NullPointerException e) {
      response.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asException());
      return;
    }
    answerWithin(response, r.getWaitSeconds(), release.thenApply(names -> ReleaseAllocResponse.newBuilder()
        .addAllVolumes(names).setDone(true).build()), wait -> ReleaseAllocResponse.newBuilder()
        .addAllVolumes(held).setDone(false)
        .setMessage("pending after " + wait.toSeconds() + " s (recorded and retried): " + waitingFor(held)
            + "; see csi-agent volume list")
        .build());
  }

  @Override
  public void collectOrphans(CollectOrphansRequest r, StreamObserver<CollectOrphansResponse> response) {
    answer(response, () -> volumes.collectOrphans(r.getRemove()), orphans -> {
      CollectOrphansResponse.Builder b = CollectOrphansResponse.newBuilder();
      orphans.forEach(o -> b.addOrphans(OrphanMountInfo.newBuilder().setPath(o.path().toString())
          .setRemoved(o.removed()).setError(o.error().orElse(""))));
      return b.build();
    });
  }

  /**
   * The manager's claim for the request: secrets by value, and, with {@code secrets_file}, the file's path (the
   * record keeps it) and, when none are given by value, the secrets read from it now.
   */
  private static VolumeClaim claim(MountVolumeRequest r) {
    VolumeClaim c = new VolumeClaim(r.getPlugin(), r.getVolumeId(), r.getAllocId(),
        AdminVolumeProtos.capability(r.getAccess(), "access"), r.getReadOnly(), r.getVolumeContextMap(),
        r.getPublishContextMap(), secrets(r.getSecretsMap()));
    if (r.getSecretsFile().isEmpty()) {
      return c;
    }
    Path file = secretsFile(r.getSecretsFile());
    return c.withSecretsFile(secrets(r.getSecretsCount() > 0 ? r.getSecretsMap() : readSecrets(file)), file);
  }

  private static Map<String, String> readSecrets(Path file) {
    try {
      return SecretsFiles.read(file);
    } catch (IOException | IllegalArgumentException e) {
      throw new IllegalArgumentException("secrets_file: " + e.getMessage(), e); // the messages show no value
    }
  }

  /**
   * The manager's unmount for the request: secrets by value, or read now from {@code secrets_file} (which the
   * record keeps, to read again for the controller step); forced.
   *
   * @throws IllegalArgumentException naming {@code secrets_file} if it is not an absolute path to a readable
   *     secrets file
   */
  private static UnmountRequest unmountRequest(UnmountVolumeRequest r) {
    UnmountRequest u = UnmountRequest.of(r.getPlugin(), r.getVolumeId(), r.getAllocId());
    if (!r.getSecretsFile().isEmpty()) {
      Path file = secretsFile(r.getSecretsFile());
      u = u.withSecretsFile(secrets(r.getSecretsCount() > 0 ? r.getSecretsMap() : readSecrets(file)), file);
    } else if (r.getSecretsCount() > 0) {
      u = u.withSecrets(secrets(r.getSecretsMap()));
    }
    return r.getForce() ? u.forced() : u;
  }

  /** {@code secrets_file} as an absolute path, or why it is none. */
  private static Path secretsFile(String value) {
    Path file;
    try {
      file = Path.of(value);
    } catch (InvalidPathException e) {
      throw new IllegalArgumentException("secrets_file is not a path: " + Printable.quote(value), e);
    }
    if (!file.isAbsolute()) {
      throw new IllegalArgumentException("secrets_file must be an absolute path (the agent reads it again"
          + " later), got " + Printable.quote(value));
    }
    return file.normalize();
  }

  /** {@code "<plugin>/<volume>: <what it waits for>"} for each of {@code keys} still pending, or "in progress". */
  private String waitingFor(List<String> keys) {
    Map<String, String> waiting = volumes.waitingFor();
    List<String> lines = keys.stream().filter(waiting::containsKey).map(k -> k + ": " + waiting.get(k)).toList();
    return lines.isEmpty() ? "in progress" : String.join("; ", lines);
  }

  /**
   * Answers with {@code done}'s value when it completes, or with {@code pending} after the request's wait
   * ({@code 0}: {@link #DEFAULT_UNMOUNT_WAIT}), on the scheduler; the work goes on either way.
   */
  private <R> void answerWithin(StreamObserver<R> response, int waitSeconds, CompletableFuture<R> done,
      Function<Duration, R> pending) {
    Duration wait = waitSeconds == 0 ? DEFAULT_UNMOUNT_WAIT : Duration.ofSeconds(Integer.toUnsignedLong(waitSeconds));
    CompletableFuture<R> answer = new CompletableFuture<>();
    done.whenComplete((v, e) -> {
      if (e == null) {
        answer.complete(v);
      } else {
        answer.completeExceptionally(e);
      }
    });
    ScheduledFuture<?> timer = scheduler.schedule(() -> answer.complete(pending.apply(wait)), wait.toNanos(),
        TimeUnit.NANOSECONDS);
    answer.whenComplete((v, e) -> timer.cancel(false));
    reply(response, answer);
  }

  @Override
  public void listVolumes(ListVolumesRequest r, StreamObserver<ListVolumesResponse> response) {
    response.onNext(ListVolumesResponse.newBuilder()
        .addAllVolumes(AdminVolumeProtos.volumes(volumes.list(), volumes)).build());
    response.onCompleted();
  }

  @Override
  public void getVolumeStats(GetVolumeStatsRequest r, StreamObserver<GetVolumeStatsResponse> response) {
    answer(response, () -> volumes.stats(r.getPlugin(), r.getVolumeId(),
        r.getAllocId().isEmpty() ? Optional.empty() : Optional.of(r.getAllocId())), VolumeAdminService::stats);
  }

  @Override
  public void expandVolume(ExpandVolumeRequest r, StreamObserver<ExpandVolumeResponse> response) {
    if (refusedUnknown(r.getPlugin(), response)) {
      return;
    }
    answer(response, () -> volumes.expand(r.getPlugin(), r.getVolumeId(),
            range(r.getRequiredBytes(), r.getLimitBytes()).orElseThrow(() -> new IllegalArgumentException(
                "required_bytes or limit_bytes must be set")), secrets(r.getSecretsMap())),
        bytes -> ExpandVolumeResponse.newBuilder().setCapacityBytes(bytes)
            .setNodeExpansionPending(volumes.find(r.getPlugin(), r.getVolumeId())
                .flatMap(VolumeRecord::nodeExpansion).isPresent()).build());
  }

  private static GetVolumeStatsResponse stats(VolumeStats s) {
    GetVolumeStatsResponse.Builder b = GetVolumeStatsResponse.newBuilder();
    s.usage().forEach(u -> b.addUsage(VolumeUsageStat.newBuilder().setAvailable(u.available()).setTotal(u.total())
        .setUsed(u.used()).setUnit(u.unit().name())));
    s.condition().ifPresent(c -> b.setHasCondition(true).setAbnormal(c.abnormal()).setConditionMessage(c.message()));
    return b.build();
  }

  private static Optional<CapacityRange> range(long required, long limit) {
    return required == 0 && limit == 0 ? Optional.empty() : Optional.of(new CapacityRange(required, limit));
  }

  private static Secrets secrets(Map<String, String> values) {
    return Secrets.of(values);
  }

  /** Starts the call (bad input answers INVALID_ARGUMENT at once) and answers when it completes. */
  private static <T, R> void answer(StreamObserver<R> response, Supplier<CompletableFuture<T>> call,
      Function<T, R> toProto) {
    CompletableFuture<T> f;
    try {
      f = call.get();
    } catch (IllegalArgumentException | NullPointerException e) {
      response.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asException());
      return;
    }
    reply(response, f.thenApply(toProto));
  }

  private static <R> void reply(StreamObserver<R> response, CompletableFuture<R> f) {
    f.whenComplete((value, failure) -> {
      try {
        if (failure == null) {
          response.onNext(value);
          response.onCompleted();
        } else {
          response.onError(status(failure).asException());
        }
      } catch (RuntimeException e) {
        log.debug("admin volume call ended before its answer: {}", e.toString()); // the client went away
      }
    });
  }

  /** A failed volume operation as a gRPC status; the message is the manager's (it names the RPC, code, plugin). */
  static Status status(Throwable failure) {
    Throwable t = Futures.unwrap(failure);
    Optional<VolumeException> v = VolumeException.find(t);
    if (v.isEmpty()) {
      if (t instanceof IllegalArgumentException) {
        return Status.INVALID_ARGUMENT.withDescription(t.getMessage());
      }
      return Status.INTERNAL.withDescription(String.valueOf(t));
    }
    VolumeException e = v.get();
    Status.Code code = switch (e.reason()) {
      case PLUGIN_UNAVAILABLE, STATE_ERROR, CLOSED -> Status.Code.UNAVAILABLE;
      case UNSUPPORTED, ACCESS_CONFLICT, IN_USE, STILL_MOUNTED, CLUSTER_REFUSED -> Status.Code.FAILED_PRECONDITION;
      case LIMIT_REACHED -> Status.Code.RESOURCE_EXHAUSTED;
      case NOT_MOUNTED -> Status.Code.NOT_FOUND;
      case LOCAL_IO -> Status.Code.INTERNAL;
      case CSI_ERROR -> e.code().map(c -> Status.Code.values()[c.value()]).orElse(Status.Code.UNAVAILABLE);
    };
    return Status.fromCode(code).withDescription(e.getMessage());
  }
}
