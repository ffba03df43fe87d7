package dev.csisupervisor.mockplugin;

import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * A test that starts one mock plugin on a socket in its temporary directory and talks to it with
 * {@link Csi}; both are closed after each test.
 */
abstract class PluginOnSocketTest {
  @TempDir
  Path dir;

  MockCsiPlugin plugin;
  Csi csi;

  /** Where every plugin of this test class starts from; override to add common settings. */
  MockCsiPlugin.Builder builder() {
    return MockCsiPlugin.builder().socket(dir.resolve("csi.sock"));
  }

  void start(Consumer<MockCsiPlugin.Builder> configure) throws Exception {
    MockCsiPlugin.Builder builder = builder();
    configure.accept(builder);
    plugin = builder.start();
    csi = new Csi(plugin.socket());
  }

  @AfterEach
  void closePluginAndClient() {
    if (csi != null) {
      csi.close();
    }
    if (plugin != null) {
      plugin.close();
    }
  }
}
