package dev.csisupervisor.benchmarks;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.supervisor.PluginLayout;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The child process of {@link SupervisionAtScale}: serves COUNT mock node plugins at
 * {@code <csiRoot>/node/<id>/csi.sock} on one shared epoll loop of THREADS threads, so their CPU
 * and memory are not counted against the supervisor. Protocol on stdin/stdout, one line each:
 * it prints {@code READY <count>} once every plugin serves; {@code STATS} answers
 * {@code STATS <total probes received> <process cpu ns>}; {@code EXIT} or end of input halts it.
 */
final class PluginFarm {
  private PluginFarm() {}

  static String pluginId(int i) {
    return String.format("sup-%04d", i);
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      throw new IllegalArgumentException("usage: plugin-farm CSI_ROOT COUNT THREADS");
    }
    Path csiRoot = Path.of(args[0]);
    int count = Integer.parseInt(args[1]);
    int threads = Integer.parseInt(args[2]);
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory("farm", true),
        EpollIoHandler.newFactory());
    MockCsiPlugin[] plugins = new MockCsiPlugin[count];
    for (int i = 0; i < count; i++) {
      plugins[i] = MockCsiPlugin.builder()
          .socket(PluginLayout.socket(csiRoot, PluginKind.NODE, pluginId(i)))
          .mode(MockMode.NODE)
          .name("farm.csi.example.com")
          .eventLoopGroup(group)
          .createParentDirs(true)
          .start();
    }
    System.out.println("READY " + count);
    System.out.flush();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null && !line.equals("EXIT"); line = in.readLine()) {
      if (line.equals("STATS")) {
        long probes = 0;
        for (MockCsiPlugin p : plugins) {
          probes += p.probeCount();
        }
        System.out.println("STATS " + probes + " " + os.getProcessCpuTime());
        System.out.flush();
      }
    }
    // The parent deletes the directory; a graceful stop of every server would only cost time.
    Runtime.getRuntime().halt(0);
  }
}
