package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import io.grpc.ManagedChannel;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** One channel per client, reused by every call; replaced only after a failed connection attempt. */
class ChannelReuseTest extends PluginSocketTest {
  @BeforeEach
  void createClient() throws Exception {
    client = CsiClient.create(socket);
  }

  private ManagedChannel channel() {
    return ((GrpcCsiClient) client).currentChannel();
  }

  @Test
  void everyCall_usesTheSameChannel() throws Exception {
    plugin = MockCsiPlugin.builder().socket(socket).mode(MockMode.MONOLITH).build().start();
    ManagedChannel first = channel();
    for (int i = 0; i < 20; i++) {
      client.probe();
    }
    client.fingerprint(PluginKind.MONOLITH);
    assertSame(first, channel());
  }

  @Test
  void missingSocket_isDecidedWithoutTouchingTheChannel() {
    ManagedChannel first = channel();
    assertThrows(SocketNotFoundException.class, client::probe);
    assertThrows(SocketNotFoundException.class, client::probe);
    assertSame(first, channel());
  }

  /** The channels before and after a connection attempt. */
  private record Attempt(ManagedChannel before, ManagedChannel after) {}

  /** Probes a stale socket: the refused connection attempt replaces the channel. */
  private Attempt refusedProbe() throws Exception {
    RawSocketServer.makeStaleSocket(socket);
    ManagedChannel before = channel();
    assertThrows(ConnectionRefusedException.class, client::probe);
    return new Attempt(before, channel());
  }

  @Test
  void failedConnect_replacesTheChannel_andShutsTheOldOneDown() throws Exception {
    Attempt refused = refusedProbe();
    assertNotSame(refused.before(), refused.after());
    assertTrue(refused.before().isShutdown());

    plugin = MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE).build().start();
    client.probe();
    client.probe();
    assertSame(refused.after(), channel());
  }

  @Test
  void close_shutsDownCurrentAndReplacedChannels() throws Exception {
    Attempt refused = refusedProbe();
    client.close();
    assertTrue(refused.before().isTerminated());
    assertTrue(refused.after().isTerminated());
  }
}
