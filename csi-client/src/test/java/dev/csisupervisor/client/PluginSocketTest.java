package dev.csisupervisor.client;

import dev.csisupervisor.mockplugin.MockCsiPlugin;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * A test with a short temporary directory holding one socket path, a mock plugin and a client on
 * it: the test starts what it needs; whatever it started is closed after it.
 */
abstract class PluginSocketTest {
  ShortTempDir dir;
  Path socket;
  MockCsiPlugin plugin;
  CsiClient client;

  @BeforeEach
  void makeSocketDir() {
    dir = new ShortTempDir();
    socket = dir.resolve("csi.sock");
  }

  @AfterEach
  void closeClientAndPlugin() {
    if (client != null) {
      client.close();
    }
    if (plugin != null) {
      plugin.close();
    }
    dir.close();
  }
}
