package dev.csisupervisor.mockplugin;

import dev.csisupervisor.testing.FakeScheduler;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two mock plugins, {@code a} (node na) and {@code b} (node nb), each on its own unix socket: with {@code shared},
 * on one cloud file (as two plugin processes on one machine); without, {@code b} is {@code a} (the in-memory
 * driver alone). Both read the test's {@link CloudCalls.HandClock}; their timed answers (a snapshot's cut) wait on
 * {@link #waits}, in virtual time.
 */
abstract class MockCloudTestBase {
  @TempDir
  Path dir;

  final CloudCalls.HandClock clock = new CloudCalls.HandClock();
  final FakeScheduler waits = new FakeScheduler();
  MockCsiPlugin a;
  MockCsiPlugin b;
  Csi ca;
  Csi cb;

  Path cloudFile() {
    return dir.resolve("cloud");
  }

  void start(boolean shared, UnaryOperator<MockCsiPlugin.Builder> more) throws Exception {
    a = more.apply(builder("na", shared)).start();
    ca = new Csi(a.socket());
    if (shared) {
      b = more.apply(builder("nb", true)).start();
      cb = new Csi(b.socket());
    } else {
      cb = ca;
    }
  }

  private MockCsiPlugin.Builder builder(String node, boolean shared) throws Exception {
    Files.createDirectories(dir.resolve(node));
    MockCsiPlugin.Builder builder = MockCsiPlugin.builder().socket(dir.resolve(node).resolve("csi.sock"))
        .nodeId(node).clock(clock).waits(waits);
    return shared ? builder.cloud(cloudFile(), Duration.ZERO) : builder;
  }

  /** The cloud as another process would open it. */
  SharedCloud cloud() {
    return new SharedCloud(cloudFile(), Duration.ZERO);
  }

  @AfterEach
  void closeAll() {
    for (AutoCloseable c : new AutoCloseable[] {ca, cb, a, b}) {
      try {
        if (c != null) {
          c.close();
        }
      } catch (Exception ignored) {
        // closing
      }
    }
  }
}
