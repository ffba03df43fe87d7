package dev.csisupervisor.client;

import static dev.csisupervisor.client.VolumeRpc.await;
import static dev.csisupervisor.client.VolumeRpc.failureOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import io.grpc.Status;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * How every volume call fails, against the mock plugin's per-RPC faults over a real unix socket:
 * the plugin's error status exactly as sent, a hung call at the volume deadline, and never a
 * secret in what a failure says.
 */
@Timeout(60)
class CsiClientVolumeErrorsTest extends PluginSocketTest {
  private static final Duration VOLUME_TIMEOUT = Duration.ofMillis(200);
  private static final String SECRET_VALUE = "s3cr3t-v4lue";
  private static final String SECRET_FLAG = "password=hunter2";
  private static final Secrets SECRETS = Secrets.of(Map.of("password", SECRET_VALUE));
  private static final VolumeCapability WITH_FLAGS =
      VolumeCapability.mount("ext4", List.of("noatime", SECRET_FLAG), AccessMode.SINGLE_NODE_WRITER);

  private List<VolumeRpc> rpcs() {
    return VolumeRpc.all(dir.path(), SECRETS, WITH_FLAGS);
  }

  private void start(CsiClientOptions options) throws Exception {
    plugin = MockCsiPlugin.builder().socket(socket).allCapabilities().start();
    client = CsiClient.create(socket, options);
  }

  @ParameterizedTest
  @EnumSource(value = Status.Code.class, names = {"NOT_FOUND", "ALREADY_EXISTS", "FAILED_PRECONDITION",
      "RESOURCE_EXHAUSTED", "ABORTED", "UNAVAILABLE", "INTERNAL", "OUT_OF_RANGE", "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED"})
  void pluginErrorStatus_isCsiStatusException_withCodeAndMessageAsSent(Status.Code code) throws Exception {
    start(CsiClientOptions.defaults());
    for (VolumeRpc rpc : rpcs()) {
      String message = rpc + " says: volume 'vol-1' is busy (" + code + ")";
      plugin.failCalls(rpc.method(), code, message, 1);
      CsiStatusException e = assertInstanceOf(CsiStatusException.class, failureOf(rpc.callOn(client)), rpc.toString());
      assertEquals(StatusCode.valueOf(code.name()), e.code(), rpc.toString());
      assertEquals(message, e.description(), rpc.toString());
      assertEquals(CsiErrorKind.PLUGIN_ERROR, e.kind());
      assertEquals(Optional.of(rpc.fullName()), e.getMethod());
      assertEquals(rpc.fullName() + " on " + socket + " failed: " + code + ": " + message, e.getMessage());
      assertEquals(1, plugin.callCount(rpc.method()), rpc + " is called once, not retried");
    }
  }

  @Test
  void deadlineExceededSentByThePlugin_isItsAnswer_notTheClientsDeadline() throws Exception {
    start(CsiClientOptions.defaults());
    plugin.failCalls(IdentityGrpc.getProbeMethod(), Status.Code.DEADLINE_EXCEEDED, "backend timed out", 1);
    CsiStatusException e = assertInstanceOf(CsiStatusException.class, failureOf(client.probeAsync()));
    assertEquals(StatusCode.DEADLINE_EXCEEDED, e.code());
    assertEquals("csi.v1.Identity/Probe on " + socket + " failed: DEADLINE_EXCEEDED: backend timed out",
        e.getMessage());
  }

  @Test
  void pluginErrorWithoutMessage_hasAnEmptyDescription() throws Exception {
    start(CsiClientOptions.defaults());
    for (VolumeRpc rpc : rpcs()) {
      plugin.failCalls(rpc.method(), Status.Code.ABORTED, null, 1);
      CsiStatusException e = assertInstanceOf(CsiStatusException.class, failureOf(rpc.callOn(client)), rpc.toString());
      assertEquals(StatusCode.ABORTED, e.code());
      assertEquals("", e.description());
      assertEquals(rpc.fullName() + " on " + socket + " failed: ABORTED", e.getMessage());
    }
  }

  @Test
  void hungCall_failsAtTheVolumeDeadline_whileProbesKeepTheirOwn() throws Exception {
    start(CsiClientOptions.defaults().withVolumeCallTimeout(VOLUME_TIMEOUT));
    // Connected first (by a probe, with its 5 s): a cold JVM's first connection may take longer than 200 ms.
    assertEquals(ProbeResult.READY, client.probe());
    List<CompletableFuture<?>> calls = new ArrayList<>();
    long start = System.nanoTime();
    for (VolumeRpc rpc : rpcs()) {
      plugin.hangCalls(rpc.method(), 1);
      calls.add(rpc.callOn(client));
    }
    for (int i = 0; i < calls.size(); i++) {
      VolumeRpc rpc = rpcs().get(i);
      CsiDeadlineExceededException e = assertInstanceOf(CsiDeadlineExceededException.class, failureOf(calls.get(i)),
          rpc.toString());
      assertEquals(VOLUME_TIMEOUT, e.timeout());
      assertTrue(e.connected(), "the request reached the plugin");
      assertEquals(rpc.fullName() + " on " + socket + " got no answer within 200ms (deadline exceeded)",
          e.getMessage());
    }
    long elapsed = System.nanoTime() - start;
    assertTrue(elapsed >= VOLUME_TIMEOUT.toNanos(), "failed before the deadline: " + elapsed + " ns");
    // Not the call timeout's 5 s: each failure names the volume deadline it had (e.timeout() above).

    // A probe slower than the volume deadline is still answered: it has the call timeout (5 s).
    plugin.delayCalls(IdentityGrpc.getProbeMethod(), VOLUME_TIMEOUT.multipliedBy(2));
    assertEquals(ProbeResult.READY, client.probe());
    // And the volume calls are answered again once the plugin is (within 200 ms: tried until one is, a loaded
    // machine may miss a deadline that short).
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> {
      await(client.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(), List.of(WITH_FLAGS),
          Map.of(), Secrets.none())));
      return true;
    });
  }

  @Test
  void slowVolumeCall_withinItsDeadline_succeeds_thoughSlowerThanTheCallTimeout() throws Exception {
    start(CsiClientOptions.defaults().withCallTimeout(Duration.ofMillis(100)).withVolumeCallTimeout(Duration.ofSeconds(10)));
    plugin.delayCalls("CreateVolume", Duration.ofMillis(300));
    CsiVolume v = await(client.createVolumeAsync(new CreateVolumeRequest("data", Optional.empty(), List.of(WITH_FLAGS),
        Map.of(), Secrets.none())));
    assertEquals("vol-1", v.volumeId());
  }

  @Test
  void noFailure_showsASecretValue_orAMountFlag() throws Exception {
    start(CsiClientOptions.defaults().withVolumeCallTimeout(VOLUME_TIMEOUT));
    List<String> said = new ArrayList<>();
    for (VolumeRpc rpc : rpcs()) {
      plugin.failCalls(rpc.method(), Status.Code.INVALID_ARGUMENT, "bad request", 1);
      said.add(failureOf(rpc.callOn(client)).toString());
      plugin.hangCalls(rpc.method(), 1);
      said.add(failureOf(rpc.callOn(client)).toString());
    }
    long sentTheSecret = rpcs().stream()
        .filter(rpc -> plugin.lastRequest(rpc.method()).orElseThrow().toString().contains(SECRET_VALUE))
        .count();
    assertEquals(13, sentTheSecret, "every call that takes secrets did send them to the plugin");
    plugin.stop();
    for (VolumeRpc rpc : rpcs()) {
      said.add(failureOf(rpc.callOn(client)).toString()); // the plugin is gone
    }
    for (String text : said) {
      assertFalse(text.contains(SECRET_VALUE), text);
      assertFalse(text.contains(SECRET_FLAG), text);
    }
  }
}
