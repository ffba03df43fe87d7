package dev.csisupervisor.tests;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.ForwardingCsiClient;
import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeManager;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * A child "agent" for {@link VolumeCrashTest}: opens the durable state, registers the node plugin
 * served by the parent, and mounts or unmounts one volume, printing where it is and stopping dead
 * (the CSI future never completes) at the step the parent names, so that the parent's SIGKILL
 * lands exactly there.
 *
 * <p>Args: {@code DATA_DIR CSI_ROOT SOCKET mount|unmount VOLUME ALLOC STOP}, STOP one of
 * {@code before:<Rpc>} (the intent is committed, the call not sent), {@code after:<Rpc>} (the
 * call done, its result not committed), {@code done} (the operation finished).
 */
public final class VolumeHostMain {
  static final String PLUGIN = "crash";
  static final VolumeCapability CAP = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  static final String SECRET = "never-on-disk-7731";

  public static void main(String[] args) throws Exception {
    Path dataDir = Path.of(args[0]);
    Path csiRoot = Path.of(args[1]);
    Path socket = Path.of(args[2]);
    String op = args[3];
    String volume = args[4];
    String alloc = args[5];
    String stop = args[6];
    JournalStateStore store = JournalStateStore.open(dataDir);
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).build();
    registry.register(nodePlugin(socket));
    VolumeManager manager = VolumeManager.builder().registry(registry).stateStore(store).csiRoot(csiRoot)
        .scheduler(Executors.newScheduledThreadPool(1)).mountTable(java.util.Optional.empty()) // the mock mounts nothing
        .clientFactory(s -> new Stopping(create(s), stop)).build();
    System.out.println("READY");
    CompletableFuture<?> f = op.equals("mount")
        ? manager.mount(VolumeClaim.of(PLUGIN, volume, alloc, CAP, false).withSecrets(Secrets.of(Map.of("key", SECRET))))
        : manager.unmount(PLUGIN, volume, alloc);
    f.join();
    System.out.println("AT done");
    Thread.sleep(Long.MAX_VALUE);
  }

  static PluginInfo nodePlugin(Path socket) {
    Fingerprint f = new Fingerprint(PLUGIN, "1", Map.of(), Set.of(), Set.of(),
        Set.of("STAGE_UNSTAGE_VOLUME"), "node-1", 0, Map.of());
    return new PluginInfo(PluginType.CSI_NODE, PLUGIN, "1", "alloc-crash", socket, Map.of(), f,
        PluginHealth.healthy(Instant.now()), false);
  }

  private static CsiClient create(Path socket) {
    try {
      return CsiClient.create(socket);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** The real client, but dead still at the named step. */
  private static final class Stopping extends ForwardingCsiClient {
    private final CsiClient real;
    private final String stop;

    Stopping(CsiClient real, String stop) {
      this.real = real;
      this.stop = stop;
    }

    @Override
    protected CsiClient delegate() {
      return real;
    }

    private <T> CompletableFuture<T> step(String rpc, Supplier<CompletableFuture<T>> call) {
      if (stop.equals("before:" + rpc)) {
        System.out.println("AT " + stop);
        return new CompletableFuture<>();
      }
      CompletableFuture<T> f = call.get();
      if (stop.equals("after:" + rpc)) {
        CompletableFuture<T> never = new CompletableFuture<>();
        f.whenComplete((v, e) -> System.out.println("AT " + stop + (e == null ? "" : " failed " + e)));
        return never;
      }
      return f;
    }

    @Override public CompletableFuture<Void> nodeStageVolumeAsync(NodeStageRequest r) {
      return step("NodeStageVolume", () -> real.nodeStageVolumeAsync(r));
    }
    @Override public CompletableFuture<Void> nodeUnstageVolumeAsync(String v, Path p) {
      return step("NodeUnstageVolume", () -> real.nodeUnstageVolumeAsync(v, p));
    }
    @Override public CompletableFuture<Void> nodePublishVolumeAsync(NodePublishRequest r) {
      return step("NodePublishVolume", () -> real.nodePublishVolumeAsync(r));
    }
    @Override public CompletableFuture<Void> nodeUnpublishVolumeAsync(String v, Path p) {
      return step("NodeUnpublishVolume", () -> real.nodeUnpublishVolumeAsync(v, p));
    }
  }
}
