package dev.csisupervisor.supervisor;

import org.awaitility.core.ConditionFactory;
import org.awaitility.Awaitility;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** 200 plugins on one supervisor and a 2-thread scheduler: all register, all stop, no leaks. */
class ManySupervisedPluginsTest {
  private static final int PLUGINS = 200;

  @Test
  void twoHundredPlugins_registerAndStop_withoutLeakingThreads() throws Exception {
    Path root = Files.createTempDirectory(Path.of("/tmp"), "many");
    EventLoopGroup serverLoops = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
    List<MockCsiPlugin> plugins = new ArrayList<>();
    List<CsiPluginSupervisorHook> hooks = new ArrayList<>();
    ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2);
    PluginRegistry registry = PluginRegistry.builder().stateStore(new InMemoryStateStore())
        .build();
    CsiPluginSupervisor supervisor = CsiPluginSupervisor.builder().csiRoot(root)
        .registry(registry).scheduler(scheduler).build();
    try {
      // Warm up whatever is created once per JVM (client event loop, watch thread) so that the
      // count below measures what supervision itself holds.
      CsiPluginSupervisorHook warm = start(supervisor, "warm", serverLoops, plugins, hooks);
      await().atMost(Duration.ofSeconds(30)).until(() -> warm.phase()
          == CsiPluginSupervisorHook.Phase.REGISTERED);
      Set<String> before = liveThreads();

      for (int i = 0; i < PLUGINS; i++) {
        start(supervisor, "p" + i, serverLoops, plugins, hooks);
      }
      await().atMost(Duration.ofSeconds(90))
          .until(() -> registry.list(PluginType.CSI_NODE).size() == PLUGINS + 1);
      Set<String> during = liveThreads();
      during.removeAll(before);
      assertTrue(during.size() <= 2, "supervising 200 plugins added threads: " + during);

      hooks.forEach(h -> h.stop(StopRequest.because("test")));
      assertEquals(0, registry.list(PluginType.CSI_NODE).size());
      assertTrue(hooks.stream().allMatch(h -> h.phase() == CsiPluginSupervisorHook.Phase.STOPPED));
      Set<String> after = liveThreads();
      after.removeAll(before);
      assertTrue(after.size() <= 2, "threads left after stop: " + after);
    } finally {
      plugins.forEach(MockCsiPlugin::close);
      supervisor.close();
      registry.close();
      scheduler.shutdownNow();
      serverLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS);
      FileTrees.deleteQuietly(root);
    }
  }

  private static CsiPluginSupervisorHook start(CsiPluginSupervisor supervisor, String id,
      EventLoopGroup loops, List<MockCsiPlugin> plugins, List<CsiPluginSupervisorHook> hooks)
      throws Exception {
    CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext("alloc-" + id, "plugin"),
        CsiPluginConfig.builder(id, PluginKind.NODE).build(), TaskEventEmitter.discarding(),
        reason -> {});
    hook.prestart(PrestartRequest.withEnv(Map.of()));
    plugins.add(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.NODE)
        .eventLoopGroup(loops).start());
    hook.poststart(PoststartRequest.of());
    hooks.add(hook);
    return hook;
  }

  /** Names of live threads, excluding JDK-internal pools that come and go on their own. */
  private static Set<String> liveThreads() {
    return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
        .map(t -> t.getName() + "#" + t.getId())
        .filter(n -> !n.startsWith("ForkJoinPool") && !n.startsWith("Common-Cleaner")
            && !n.startsWith("Attach Listener"))
        .collect(Collectors.toSet());
  }

  /** Awaitility polling from the first moment and every 10 ms (by default it waits 100 ms before it first looks). */
  private static ConditionFactory await() {
    return Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10));
  }
}
