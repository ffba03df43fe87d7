package dev.csisupervisor.client;

import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.testing.ShortTempDir;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * A test with a short temporary directory holding one socket path, a mock plugin (or a
 * {@link RawSocketServer} that is no plugin) and a client on it: the test starts what it needs;
 * whatever it started is closed after it.
 */
abstract class PluginSocketTest {
  ShortTempDir dir;
  Path socket;
  MockCsiPlugin plugin;
  RawSocketServer rawServer;
  CsiClient client;

  @BeforeEach
  void makeSocketDir() {
    dir = new ShortTempDir("csic");
    socket = dir.resolve("csi.sock");
  }

  /** Starts a server that is not a CSI plugin on the socket. */
  void startRawServer(RawSocketServer.Behaviour behaviour) throws IOException {
    rawServer = RawSocketServer.start(socket, behaviour);
  }

  @AfterEach
  void closeWhatTheTestStarted() throws Exception {
    closeAll(rawServer, client, plugin, dir);
  }

  /** Closes each in turn, skipping what was not started. */
  private static void closeAll(AutoCloseable... started) throws Exception {
    for (AutoCloseable closeable : started) {
      if (closeable != null) {
        closeable.close();
      }
    }
  }
}
