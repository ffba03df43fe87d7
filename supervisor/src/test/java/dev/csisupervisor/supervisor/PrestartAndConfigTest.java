package dev.csisupervisor.supervisor;

import dev.csisupervisor.testing.FakeScheduler;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.state.InMemoryStateStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PrestartAndConfigTest {
  @TempDir Path root;
  private final FakeScheduler scheduler = new FakeScheduler();
  private PluginRegistry registry;
  private CsiPluginSupervisor supervisor;

  @BeforeEach
  void setUp() {
    registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
    supervisor = CsiPluginSupervisor.builder().csiRoot(root).registry(registry)
        .scheduler(scheduler).registryExecutor(scheduler).clock(scheduler.clock()).random(new Random(1))
        .connector(new FakeConnection(scheduler, Duration.ofSeconds(5)).connector()).build();
  }

  @AfterEach
  void tearDown() {
    supervisor.close();
    registry.close();
  }

  private CsiPluginSupervisorHook hook(CsiPluginConfig config) {
    return supervisor.hook(new TaskContext("a1", "t"), config, TaskEventEmitter.discarding(),
        reason -> {});
  }

  @Test
  void prestart_createsPrivatePluginDir_andReturnsMountsAndEndpoint() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("ebs", PluginKind.NODE)
        .mountDir("/csi").build());
    PrestartResponse r = hook.prestart(PrestartRequest.withEnv(Map.of()));
    Path dir = root.resolve("node").resolve("ebs");
    assertTrue(Files.isDirectory(dir));
    assertEquals("rwx------",
        PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
    assertEquals(dir.resolve("csi.sock"), hook.socketPath());
    assertEquals(2, r.mounts().size());
    TaskMount plugin = r.mounts().get(0);
    assertEquals(dir, plugin.hostPath());
    assertEquals("/csi", plugin.taskPath());
    assertEquals(TaskMount.Propagation.BIDIRECTIONAL, plugin.propagation());
    assertEquals(Path.of("/dev"), r.mounts().get(1).hostPath());
    assertEquals(Map.of("CSI_ENDPOINT", "unix:///csi/csi.sock"), r.env());
  }

  @Test
  void prestart_isIdempotent_andRepairsDirMode() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("ebs", PluginKind.MONOLITH)
        .build());
    hook.prestart(PrestartRequest.withEnv(Map.of()));
    Path dir = root.resolve("monolith").resolve("ebs");
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    hook.prestart(PrestartRequest.withEnv(Map.of()));
    assertEquals("rwx------",
        PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
  }

  @Test
  void prestart_keepsTasksOwnCsiEndpoint() throws Exception {
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("ebs", PluginKind.NODE).build());
    PrestartResponse r = hook.prestart(
        PrestartRequest.withEnv(Map.of("CSI_ENDPOINT", "unix:///custom.sock")));
    assertTrue(r.env().isEmpty(), r.env().toString());
  }

  @Test
  void externalSocket_prestartTouchesNothing() throws Exception {
    Path ext = root.resolve("ext").resolve("plugin.sock");
    CsiPluginSupervisorHook hook = hook(CsiPluginConfig.builder("ext", PluginKind.NODE)
        .externalSocket(ext).build());
    PrestartResponse r = hook.prestart(PrestartRequest.withEnv(Map.of()));
    assertTrue(r.mounts().isEmpty());
    assertTrue(r.env().isEmpty());
    assertTrue(Files.notExists(root.resolve("ext")));
    assertEquals(ext, hook.socketPath());
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "..", ".", "a/b", "../etc", "/abs", "bad id", "tab\tid", "é"})
  void badPluginIds_areRejectedNamingTheField(String id) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CsiPluginConfig.builder(id, PluginKind.NODE).build());
    assertTrue(e.getMessage().startsWith("pluginId"), e.getMessage());
  }

  @Test
  void pluginIdOver128Chars_isRejected() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CsiPluginConfig.builder("x".repeat(129), PluginKind.NODE).build());
    assertTrue(e.getMessage().contains("at most 128"), e.getMessage());
    CsiPluginConfig.builder("x".repeat(128), PluginKind.NODE).build();
  }

  @Test
  void socketPathOverUnixLimit_isRejectedWhenTheHookIsMade() {
    Path deep = root.resolve("d".repeat(60));
    CsiPluginSupervisor sup = CsiPluginSupervisor.builder().csiRoot(deep).registry(registry)
        .scheduler(scheduler).build();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> sup.hook(new TaskContext("a1", "t"),
            CsiPluginConfig.builder("p".repeat(60), PluginKind.NODE).build(),
            TaskEventEmitter.discarding(), reason -> {}));
    assertTrue(e.getMessage().contains("unix socket limit of 107 bytes"), e.getMessage());
    sup.close();
  }

  @Test
  void externalSocketOverUnixLimit_isRejected() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CsiPluginConfig.builder("ext", PluginKind.NODE)
            .externalSocket(Path.of("/" + "s".repeat(110))).build());
    assertTrue(e.getMessage().startsWith("externalSocket"), e.getMessage());
  }

  @Test
  void badDurations_nameTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CsiPluginConfig.builder("p", PluginKind.NODE).probeInterval(Duration.ZERO).build());
    assertTrue(e.getMessage().startsWith("probeInterval"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> CsiPluginConfig.builder("p", PluginKind.NODE)
            .healthTimeout(Duration.ofSeconds(-1)).build());
    assertTrue(e.getMessage().startsWith("healthTimeout"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> CsiPluginConfig.builder("p", PluginKind.NODE)
            .initialBackoff(Duration.ofSeconds(10)).maxBackoff(Duration.ofSeconds(1)).build());
    assertTrue(e.getMessage().startsWith("maxBackoff"), e.getMessage());
  }

  @Test
  void relativeMountDir_isRejected() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CsiPluginConfig.builder("p", PluginKind.NODE).mountDir("csi").build());
    assertTrue(e.getMessage().startsWith("mountDir"), e.getMessage());
  }

  @Test
  void badTaskContext_namesTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new TaskContext(" ", "t"));
    assertTrue(e.getMessage().startsWith("allocId"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new TaskContext("a\u0001", "t"));
    assertTrue(e.getMessage().contains("control characters"), e.getMessage());
  }
}
