package dev.csisupervisor.agent;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.PrestartRequest;
import dev.csisupervisor.supervisor.PrestartResponse;
import dev.csisupervisor.supervisor.StopRequest;
import dev.csisupervisor.supervisor.TaskContext;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's "embed the library in a Java scheduler" example, kept compiling and working. The
 * block between the markers is what the README shows.
 */
class EmbeddingExampleTest {
  @TempDir Path dir;

  @Test
  void readmeExample_registersAndDeregisters() throws Exception {
    Path dataDir = dir;
    String allocId = "alloc-1";
    List<String> seen = new CopyOnWriteArrayList<>();
    MockCsiPlugin[] plugin = new MockCsiPlugin[1];

    // README example begins
    StateStore store = JournalStateStore.open(dataDir);                 // <data_dir>/state/ (journal + checkpoints)
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).build();
    ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2);
    CsiPluginSupervisor supervisor = CsiPluginSupervisor.builder()
        .csiRoot(dataDir.resolve("csi")).registry(registry).scheduler(scheduler).build();

    // A volume manager follows the node plugins: snapshot first, then every change in order.
    Subscription sub = registry.subscribe(PluginType.CSI_NODE,
        (PluginEvent e) -> seen.add(e.kind() + " " + e.plugin().name()),
        Executors.newSingleThreadExecutor());

    // The task runner, for a task that runs a CSI plugin:
    CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext(allocId, "ebs-node"),
        CsiPluginConfig.builder("ebs", PluginKind.NODE).probeInterval(Duration.ofSeconds(5))
            .build(),
        event -> System.out.println(event.type() + ": " + event.message()),
        reason -> System.out.println("restart the task: " + reason));   // must not block
    PrestartResponse pre = hook.prestart(PrestartRequest.withEnv(Map.of())); // mounts + CSI_ENDPOINT
    // ... start the task with pre.mounts() and pre.env() ...
    plugin[0] = startPlugin(hook.socketPath());
    hook.poststart(PoststartRequest.of());      // probe until ready, fingerprint, register
    // README example ends

    await().atMost(Duration.ofSeconds(30)).until(() -> seen.contains("REGISTERED ebs"));
    assertEquals(allocId, registry.find(PluginType.CSI_NODE, "ebs").orElseThrow().allocId());
    assertTrue(pre.env().containsKey("CSI_ENDPOINT"));

    // README: when the task stops
    hook.stop(StopRequest.because("task stopped"));   // deregister
    await().atMost(Duration.ofSeconds(30)).until(() -> seen.contains("DEREGISTERED ebs"));
    assertTrue(registry.find(PluginType.CSI_NODE, "ebs").isEmpty());

    sub.close();
    supervisor.close();
    registry.close();
    store.close();
    scheduler.shutdownNow();
    plugin[0].close();
  }

  private static MockCsiPlugin startPlugin(Path socket) throws Exception {
    return MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE).name("ebs.csi.dev").build()
        .start();
  }
}
