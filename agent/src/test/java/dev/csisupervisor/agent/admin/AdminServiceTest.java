package dev.csisupervisor.agent.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.cli.AdminClient;
import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginEvent;
import dev.csisupervisor.admin.v1.WatchEventsResponse;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The admin API over a real unix socket, against a registry in memory. */
class AdminServiceTest {
  private static final Instant T = Instant.parse("2026-01-01T00:00:00Z");
  /** The admin API's plugin types (the registry's {@link PluginType} is the one imported). */
  private static final dev.csisupervisor.admin.v1.PluginType NODE =
      dev.csisupervisor.admin.v1.PluginType.CSI_NODE;
  private static final dev.csisupervisor.admin.v1.PluginType CONTROLLER =
      dev.csisupervisor.admin.v1.PluginType.CSI_CONTROLLER;
  private static final dev.csisupervisor.admin.v1.PluginType ANY_TYPE =
      dev.csisupervisor.admin.v1.PluginType.PLUGIN_TYPE_UNSPECIFIED;

  @TempDir Path dir;
  private PluginRegistry registry;
  private ExecutorService executor;
  private AdminService service;
  private AdminServer server;
  private AdminClient client;

  @BeforeEach
  void setUp() throws Exception {
    registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
    executor = Executors.newSingleThreadExecutor();
  }

  private void serve(int maxBacklog) throws Exception {
    service = new AdminService(registry, () -> GetAgentStatusResponse.newBuilder().setPid(42)
        .build(), executor, maxBacklog);
    server = AdminServer.start(dir.resolve("agent.sock"), service);
    client = AdminClient.connect(server.socket());
  }

  @AfterEach
  void tearDown() {
    if (client != null) {
      client.close();
    }
    registry.close();
    if (server != null) {
      server.close();
    }
    executor.shutdownNow();
  }

  private static PluginInfo info(PluginType type, String name, String version, boolean healthy) {
    return new PluginInfo(type, name, version, "alloc-" + name, Path.of("/csi/" + name + ".sock"),
        Map.of("provider", name + ".csi"),
        new Fingerprint(name + ".csi", version, Map.of("k", "v"), java.util.Set.of(
            "CONTROLLER_SERVICE"), java.util.Set.of("CREATE_DELETE_VOLUME"), java.util.Set.of(),
            "", 0, Map.of()),
        new PluginHealth(healthy, healthy ? "" : "probe failed", T), false);
  }

  @Test
  void socket_isPrivate() throws Exception {
    serve(100);
    assertEquals("rw-------", PosixFilePermissions.toString(
        Files.getPosixFilePermissions(server.socket())));
  }

  @Test
  void listAndGet_showRegistry() throws Exception {
    serve(100);
    registry.register(info(PluginType.CSI_CONTROLLER, "ebs", "1.0", true));
    registry.register(info(PluginType.CSI_NODE, "nfs", "2.0", false));

    List<Plugin> all = client.listPlugins(ANY_TYPE);
    assertEquals(List.of("ebs", "nfs"), all.stream().map(Plugin::getName).toList());
    List<Plugin> nodes = client.listPlugins(NODE);
    assertEquals(1, nodes.size());
    assertFalse(nodes.get(0).getHealth().getHealthy());
    assertEquals("probe failed", nodes.get(0).getHealth().getMessage());

    Plugin ebs = client.getPlugin(CONTROLLER, "ebs").orElseThrow();
    assertEquals("1.0", ebs.getVersion());
    assertEquals("alloc-ebs", ebs.getAllocId());
    assertEquals(List.of("CREATE_DELETE_VOLUME"),
        ebs.getFingerprint().getControllerCapabilitiesList());
    assertEquals(T, dev.csisupervisor.cli.Format.instant(ebs.getHealth().getSince()));
    assertTrue(client.getPlugin(NODE, "ebs").isEmpty(), "NOT_FOUND for another type");
    assertEquals(42, client.status().getPid());
  }

  @Test
  void getPlugin_withoutType_isInvalidArgument() throws Exception {
    serve(100);
    AdminClient.AdminException e = assertThrows(AdminClient.AdminException.class,
        () -> client.getPlugin(ANY_TYPE, "x"));
    assertTrue(e.getMessage().contains("INVALID_ARGUMENT"), e.getMessage());
  }

  @Test
  void getPlugin_carriesTheAgentsTaskOfThatInstance() throws Exception {
    service = new AdminService(registry, () -> GetAgentStatusResponse.newBuilder()
        .addTasks(dev.csisupervisor.admin.v1.TaskStatus.newBuilder().setId("a")
            .setAllocId("other-alloc").setPid(1))
        .addTasks(dev.csisupervisor.admin.v1.TaskStatus.newBuilder().setId("a")
            .setAllocId("alloc-a").setPid(7).setRevision("a_0123456789ab"))
        .build(), executor, 10);
    server = AdminServer.start(dir.resolve("agent.sock"), service);
    client = AdminClient.connect(server.socket());
    registry.register(info(PluginType.CSI_NODE, "a", "1", true));
    registry.register(info(PluginType.CSI_NODE, "b", "1", true));
    var a = client.getPluginDetails(NODE, "a").orElseThrow();
    assertEquals(7, a.getTask().getPid(), "the task of the registered alloc");
    assertEquals("a_0123456789ab", a.getTask().getRevision());
    var b = client.getPluginDetails(NODE, "b").orElseThrow();
    assertFalse(b.hasTask(), "registered, but not the agent's");
    assertTrue(client.getPluginDetails(NODE, "zz").isEmpty());
  }

  @Test
  void watch_sendsSnapshotThenOrderedEvents() throws Exception {
    serve(1000);
    registry.register(info(PluginType.CSI_NODE, "a", "1", true));
    Iterator<WatchEventsResponse> it = client.watch(NODE);
    WatchEventsResponse first = it.next();
    assertTrue(first.hasSnapshot());
    assertEquals(1, first.getSnapshot().getSequence());
    assertEquals("a", first.getSnapshot().getPlugins(0).getName());

    registry.register(info(PluginType.CSI_NODE, "a", "2", true));
    registry.register(info(PluginType.CSI_NODE, "b", "1", true));
    registry.deregister(PluginType.CSI_NODE, "a", "alloc-a");
    registry.register(info(PluginType.CSI_CONTROLLER, "c", "1", true)); // another type
    List<PluginEvent> events = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      events.add(it.next().getEvent());
    }
    assertEquals(List.of(2L, 3L, 4L), events.stream().map(PluginEvent::getSequence).toList());
    assertEquals(List.of(PluginEvent.Kind.UPDATED, PluginEvent.Kind.REGISTERED,
        PluginEvent.Kind.DEREGISTERED), events.stream().map(PluginEvent::getKind).toList());
    assertEquals("2", events.get(0).getPlugin().getVersion());
  }

  @Test
  void watchAllTypes_startsWithOneSnapshotPerType() throws Exception {
    serve(1000);
    registry.register(info(PluginType.CSI_CONTROLLER, "c", "1", true));
    Iterator<WatchEventsResponse> it = client.watch(ANY_TYPE);
    assertTrue(it.next().hasSnapshot());
    assertTrue(it.next().hasSnapshot());
    registry.register(info(PluginType.CSI_NODE, "n", "1", true));
    WatchEventsResponse e = it.next();
    assertEquals(NODE, e.getEvent().getType());
    assertEquals(1, e.getEvent().getSequence());
  }

  @Test
  void watcherThatDoesNotRead_getsLaggedAndTheStreamEnds() throws Exception {
    serve(5);
    Iterator<WatchEventsResponse> it = client.watch(NODE);
    assertTrue(it.next().hasSnapshot());
    // Big enough to fill the transport's flow-control window while the client reads nothing.
    String big = "v".repeat(2000);
    for (int i = 0; i < 400; i++) {
      registry.register(info(PluginType.CSI_NODE, "p", big + i, true));
    }
    long lastSeq = 0;
    WatchEventsResponse last = null;
    while (it.hasNext()) {
      last = it.next();
      if (last.hasEvent()) {
        assertEquals(lastSeq == 0 ? last.getEvent().getSequence() : lastSeq + 1,
            last.getEvent().getSequence(), "no gap before the lag notice");
        lastSeq = last.getEvent().getSequence();
      }
    }
    assertTrue(last != null && last.hasLagged(), "ends with Lagged: " + last);
    assertTrue(last.getLagged().getMessage().contains("watch again"));
    assertTrue(lastSeq < 400, "did not get everything: it was cut off");
    assertEquals(0, service.watcherCount());
  }

  @Test
  void registryClose_endsStreams() throws Exception {
    serve(100);
    Iterator<WatchEventsResponse> it = client.watch(NODE);
    assertTrue(it.next().hasSnapshot());
    registry.close();
    assertFalse(it.hasNext(), "completed, not failed");
  }

  @Test
  void noAgent_isSaidPlainly() throws Exception {
    AdminClient.AdminException e = assertThrows(AdminClient.AdminException.class,
        () -> AdminClient.connect(dir.resolve("none.sock")));
    assertTrue(e.noAgent());
    assertTrue(e.getMessage().startsWith("no agent is running at "), e.getMessage());

    // A file where the socket was, nobody listening (as after a killed agent).
    serve(100);
    server.close();
    Files.createFile(server.socket());
    try (AdminClient c = AdminClient.connect(server.socket())) {
      AdminClient.AdminException e2 = assertThrows(AdminClient.AdminException.class,
          () -> c.listPlugins(NODE));
      assertTrue(e2.noAgent(), e2.getMessage());
      assertTrue(e2.getMessage().startsWith("no agent is running at "), e2.getMessage());
    }
  }

  @Test
  void secondServer_onLiveSocket_isRefused() throws Exception {
    serve(100);
    IOException e = assertThrows(IOException.class,
        () -> AdminServer.start(server.socket(), service));
    assertTrue(e.getMessage().contains("another csi-agent"), e.getMessage());
  }

  @Test
  void regularFileInTheWay_isRefused() throws Exception {
    Path f = Files.writeString(dir.resolve("agent.sock"), "not a socket");
    IOException e = assertThrows(IOException.class, () -> AdminServer.start(f,
        new AdminService(registry, GetAgentStatusResponse::getDefaultInstance, executor, 10)));
    assertTrue(e.getMessage().contains("not a socket"), e.getMessage());
  }

}
