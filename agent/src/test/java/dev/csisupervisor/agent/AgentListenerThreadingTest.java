package dev.csisupervisor.agent;

import static dev.csisupervisor.agent.TestPlugins.FAST;
import static dev.csisupervisor.agent.TestPlugins.QUICK;
import static dev.csisupervisor.agent.TestPlugins.WAIT;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.supervisor.TaskEvent;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link AgentListener} calls happen outside every lock: a listener that asks the agent for the
 * task's status from another thread, and waits for the answer, must get it. (Called under the
 * plugin task's or the hook's lock, as before issue 11, it deadlocks until its timeout.)
 */
class AgentListenerThreadingTest {

  @TempDir Path dir;

  @Test
  void listenerAskingForTaskStatusFromAnotherThread_getsItForEveryEvent() throws Exception {
    PluginSpec spec = new PluginSpec("asker", PluginKind.NODE, ConfigLoader.BUILTIN_MOCK_PLUGIN,
        List.of("--type", "node", "--name", "asker.csi.dev"), Map.of(), null, FAST, QUICK);
    AgentConfig config = new AgentConfig(null, dir, dir.resolve("csi"), dir.resolve("agent.sock"),
        null, false, Duration.ofSeconds(5), 1 << 20, 1, List.of(spec));
    List<String> answered = new CopyOnWriteArrayList<>();
    List<String> threads = new CopyOnWriteArrayList<>();
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    try (Agent agent = Agent.create(config)) {
      agent.addListener(event -> {
        threads.add(Thread.currentThread().getName());
        try {
          CompletableFuture.supplyAsync(() -> agent.task("asker")).get(5, TimeUnit.SECONDS);
          answered.add(event.type());
        } catch (Exception e) {
          failures.add(e);
        }
      });
      agent.start();
      await().atMost(WAIT).until(() -> agent.registry().find(PluginType.CSI_NODE, "asker")
          .isPresent());
      await().atMost(WAIT).until(() -> answered.contains(TaskEvent.PLUGIN_REGISTERED));
      assertEquals(List.of(), failures);
      assertTrue(answered.contains(AgentEvent.PROCESS_STARTED), answered.toString());
      assertTrue(threads.stream().allMatch(t -> t.startsWith("csi-agent-listeners")),
          threads.toString());
    }
  }
}
