package dev.csisupervisor.mockplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.GetPluginInfoRequest;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Many plugins share one small event loop group in one JVM, and each still answers as itself. */
@Timeout(60)
class ManyPluginsTest {

  private static final int PLUGINS = Integer.getInteger("mockplugin.manyPlugins", 200);

  @TempDir
  Path dir;

  @Test
  void manyPlugins_onOneSharedTwoThreadGroup_allServe_andAllStopCleanly() throws Exception {
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, EpollIoHandler.newFactory());
    List<MockCsiPlugin> plugins = new ArrayList<>();
    try {
      long startNanos = System.nanoTime();
      for (int i = 0; i < PLUGINS; i++) {
        plugins.add(MockCsiPlugin.builder()
            .socket(dir.resolve("p" + i + ".sock"))
            .name("plugin-" + i + ".csi.dev")
            .mode(i % 2 == 0 ? MockMode.NODE : MockMode.CONTROLLER)
            .eventLoopGroup(group)
            .start());
      }
      long startedNanos = System.nanoTime();
      for (int i = 0; i < PLUGINS; i++) {
        try (Csi csi = new Csi(plugins.get(i).socket())) {
          assertTrue(csi.ready());
          assertEquals("plugin-" + i + ".csi.dev",
              csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
        }
      }
      long probedNanos = System.nanoTime();
      for (MockCsiPlugin plugin : plugins) {
        plugin.close();
      }
      long stoppedNanos = System.nanoTime();
      System.out.printf("%d plugins: start %d ms, first probe+info on a new channel each %d ms, stop %d ms%n",
          PLUGINS, TimeUnit.NANOSECONDS.toMillis(startedNanos - startNanos),
          TimeUnit.NANOSECONDS.toMillis(probedNanos - startedNanos),
          TimeUnit.NANOSECONDS.toMillis(stoppedNanos - probedNanos));
      try (var files = Files.list(dir)) {
        assertEquals(0, files.count(), "every socket file removed");
      }
    } finally {
      plugins.forEach(MockCsiPlugin::close);
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }
  }
}
