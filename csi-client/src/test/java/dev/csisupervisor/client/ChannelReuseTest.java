package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One channel per client, reused by every call; replaced only after a failed connection attempt. */
class ChannelReuseTest {
  private ShortTempDir dir;
  private Path socket;
  private MockCsiPlugin plugin;
  private GrpcCsiClient client;

  @BeforeEach
  void setUp() throws Exception {
    dir = new ShortTempDir();
    socket = dir.resolve("csi.sock");
    client = (GrpcCsiClient) CsiClient.create(socket);
  }

  @AfterEach
  void tearDown() {
    client.close();
    if (plugin != null) {
      plugin.close();
    }
    dir.close();
  }

  @Test
  void everyCall_usesTheSameChannel() throws Exception {
    plugin = MockCsiPlugin.builder().socket(socket).mode(MockMode.MONOLITH).build().start();
    ManagedChannel first = client.currentChannel();
    for (int i = 0; i < 20; i++) {
      client.probe();
    }
    client.fingerprint(PluginKind.MONOLITH);
    assertSame(first, client.currentChannel());
  }

  @Test
  void missingSocket_isDecidedWithoutTouchingTheChannel() {
    ManagedChannel first = client.currentChannel();
    assertThrows(SocketNotFoundException.class, client::probe);
    assertThrows(SocketNotFoundException.class, client::probe);
    assertSame(first, client.currentChannel());
  }

  @Test
  void failedConnect_replacesTheChannel_andShutsTheOldOneDown() throws Exception {
    RawSocketServer.makeStaleSocket(socket);
    ManagedChannel first = client.currentChannel();
    assertThrows(ConnectionRefusedException.class, client::probe);
    ManagedChannel second = client.currentChannel();
    assertNotSame(first, second);
    assertTrue(first.isShutdown());

    plugin = MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE).build().start();
    client.probe();
    client.probe();
    assertSame(second, client.currentChannel());
  }

  @Test
  void close_shutsDownCurrentAndReplacedChannels() throws Exception {
    RawSocketServer.makeStaleSocket(socket);
    ManagedChannel first = client.currentChannel();
    assertThrows(ConnectionRefusedException.class, client::probe);
    ManagedChannel second = client.currentChannel();
    client.close();
    assertTrue(first.isTerminated());
    assertTrue(second.isTerminated());
  }
}
