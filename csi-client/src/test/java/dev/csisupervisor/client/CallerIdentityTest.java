package dev.csisupervisor.client;

import static dev.csisupervisor.client.VolumeRpc.await;
import static dev.csisupervisor.client.VolumeRpc.failureOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.NodeGrpc;
import dev.csisupervisor.mockplugin.Caller;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link CsiClient#withCallerIdentity}: the headers a view's calls carry, read by the mock plugin's server over a
 * real unix socket, and what the view leaves alone.
 */
@Timeout(30)
class CallerIdentityTest extends PluginSocketTest {

  @BeforeEach
  void startPluginAndClient() throws Exception {
    plugin = MockCsiPlugin.builder().socket(socket).allCapabilities().start();
    client = CsiClient.create(socket);
  }

  @Test
  void view_sendsBothHeadersOnEveryCall_andTheClientItCameFromSendsNone() throws Exception {
    CsiClient view = client.withCallerIdentity("a1", 7);
    assertEquals(Optional.of(new CallerIdentity("a1", 7)), view.callerIdentity());
    assertEquals(Optional.empty(), client.callerIdentity());

    await(view.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(),
        List.of(VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER)), Map.of(), Secrets.none())));
    await(view.probeAsync());
    await(view.nodeInfoAsync());
    Caller a1 = new Caller("a1", 7);
    assertEquals(Optional.of(a1), plugin.lastCaller(ControllerGrpc.getCreateVolumeMethod()));
    assertEquals(Optional.of(a1), plugin.lastCaller(IdentityGrpc.getProbeMethod()));
    assertEquals(Optional.of(a1), plugin.lastCaller(NodeGrpc.getNodeGetInfoMethod()));

    await(client.probeAsync());
    assertEquals(Optional.empty(), plugin.lastCaller(IdentityGrpc.getProbeMethod()), "the original is unaffected");
    await(view.probeAsync());
    assertEquals(Optional.of(a1), plugin.lastCaller(IdentityGrpc.getProbeMethod()), "and the view still carries it");
  }

  @Test
  void anyNodeId_travels_percentEncoded_andAViewOfAViewReplacesTheIdentity() throws Exception {
    CsiClient view = client.withCallerIdentity("nœud 1/a:b", 1).withCallerIdentity("nœud 2/a:b", Long.MAX_VALUE);
    await(view.probeAsync());
    assertEquals(Optional.of(new Caller("nœud 2/a:b", Long.MAX_VALUE)),
        plugin.lastCaller(IdentityGrpc.getProbeMethod()));
    assertEquals("n%C5%93ud+1%2Fa%3Ab", new CallerIdentity("nœud 1/a:b", 1).agentHeaderValue());
    assertEquals("a1.example-host_7", new CallerIdentity("a1.example-host_7", 1).agentHeaderValue(),
        "a host name goes as it is");
  }

  @Test
  void badIdentity_isRefused_namingTheField() {
    IllegalArgumentException blank = assertThrows(IllegalArgumentException.class,
        () -> client.withCallerIdentity(" ", 3));
    assertTrue(blank.getMessage().startsWith("agentNodeId must not be blank"), blank.getMessage());
    NullPointerException none = assertThrows(NullPointerException.class, () -> client.withCallerIdentity(null, 3));
    assertEquals("agentNodeId", none.getMessage());
    for (long bad : new long[] {0, -1, Long.MIN_VALUE}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> client.withCallerIdentity("a1", bad));
      assertEquals("electionRevision must be >= 1, got " + bad, e.getMessage());
    }
  }

  @Test
  void closingTheView_stopsOnlyTheView_andClosingTheClientStopsItsViews() throws Exception {
    CsiClient view = client.withCallerIdentity("a1", 2);
    CsiClient other = client.withCallerIdentity("a1", 3);
    await(view.probeAsync());
    view.close();
    view.close(); // idempotent
    CallCancelledException e = assertInstanceOf(CallCancelledException.class, failureOf(view.probeAsync()));
    assertTrue(e.getMessage().contains("caller a1@2") && e.getMessage().contains("is closed"), e.getMessage());
    await(client.probeAsync());
    await(other.probeAsync());
    assertTrue(view.toString().contains("caller a1@2, CLOSED"), view.toString());

    client.close();
    assertInstanceOf(CallCancelledException.class, failureOf(other.probeAsync()));
  }

  @Test
  void forwardingClient_forwardsTheView_andAClientThatIsNoGrpcClient_refusesIt() throws Exception {
    CsiClient forwarding = new ForwardingCsiClient() {
      @Override
      protected CsiClient delegate() {
        return client;
      }
    };
    CsiClient view = forwarding.withCallerIdentity("a9", 9);
    assertNotSame(client, view);
    await(view.probeAsync());
    assertEquals(Optional.of(new Caller("a9", 9)), plugin.lastCaller(IdentityGrpc.getProbeMethod()));

    CsiClient notGrpc = (CsiClient) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {CsiClient.class}, (proxy, method, args) -> {
          if (method.isDefault()) {
            return java.lang.reflect.InvocationHandler.invokeDefault(proxy, method, args);
          }
          throw new AssertionError("not called: " + method);
        });
    assertThrows(UnsupportedOperationException.class, () -> notGrpc.withCallerIdentity("a1", 1));
    assertThrows(IllegalArgumentException.class, () -> notGrpc.withCallerIdentity("a1", 0), "checked first");
    assertEquals(Optional.empty(), notGrpc.callerIdentity());
  }
}
