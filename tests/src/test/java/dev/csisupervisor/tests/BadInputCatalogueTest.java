package dev.csisupervisor.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.csisupervisor.client.ConnectionRefusedException;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiClientOptions;
import dev.csisupervisor.client.NotASocketException;
import dev.csisupervisor.client.NotCsiServerException;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.client.SocketNotFoundException;
import dev.csisupervisor.client.SocketPathTooLongException;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.RestoreProblem;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateFileCorruptException;
import dev.csisupervisor.state.StateFileLockedException;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.PrestartRequest;
import dev.csisupervisor.supervisor.StopRequest;
import dev.csisupervisor.supervisor.TaskContext;
import dev.csisupervisor.supervisor.TaskEventEmitter;
import dev.csisupervisor.supervisor.TaskMount;
import dev.csisupervisor.testing.ShortTempDir;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bad-input catalogue: every public entry point of the registry, the state store, the supervisor hook's
 * configuration and the CSI client, fed empty, oversized, path-traversing, control-character, unknown-enum and
 * wrongly-typed values. Each case is one named dynamic test that checks three things:
 * <ol>
 *   <li>the call fails with the expected exception type (a null may be {@code NullPointerException} or
 *       {@code IllegalArgumentException}: both styles are in use, the message is what counts);
 *   <li>the message names the field (and for client calls the socket path), and never carries a raw control
 *       character from the input (it must be escaped, so a log line cannot be forged);
 *   <li>nothing already there changed: the registry's registrations, its subscriber's events, both state stores'
 *       records and commit count, and every file under the CSI root are the same before and after.
 * </ol>
 * A second factory holds the boundary values that must be ACCEPTED (so that the validators are not simply
 * rejecting everything). Bad input for the agent's config, admin API and CLI is covered in the agent module.
 */
class BadInputCatalogueTest {
  private static final AtomicInteger rejectedCases = new AtomicInteger();
  private static final AtomicInteger acceptedCases = new AtomicInteger();
  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  @TempDir Path tmp;
  private ShortTempDir shortDir;
  private Path csiRoot;
  private InMemoryStateStore memoryStore;
  private JournalStateStore fileStore;
  private PluginRegistry registry;
  private final List<PluginEvent> events = new CopyOnWriteArrayList<>();
  private ScheduledExecutorService scheduler;
  private CsiPluginSupervisor supervisor;

  @FunctionalInterface
  interface Action {
    void run() throws Exception;
  }

  /**
   * One catalogue entry: the call, what it must throw, and what its message must mention. There is no way to mark a
   * case as a known bug: a defect is a failing case until it is fixed.
   */
  private record Case(String name, List<Class<? extends Throwable>> expected, Action action, List<String> mentions) {}

  private static Case bad(String name, Class<? extends Throwable> expected, Action action, String... mentions) {
    return new Case(name, List.of(expected), action, List.of(mentions));
  }

  /** A null argument: either exception style, naming the field. */
  private static Case nul(String name, Action action, String... mentions) {
    return new Case(name, List.of(IllegalArgumentException.class, NullPointerException.class), action, List.of(mentions));
  }

  @BeforeEach
  void setUp() throws Exception {
    shortDir = new ShortTempDir("bad");
    csiRoot = shortDir.path().resolve("root");
    Files.createDirectories(csiRoot);
    memoryStore = new InMemoryStateStore();
    registry = PluginRegistry.builder().stateStore(memoryStore).build();
    registry.register(info(PluginType.CSI_NODE, "ebs", "alloc-1"));
    registry.register(info(PluginType.CSI_CONTROLLER, "ebs", "alloc-1"));
    registry.register(info(PluginType.CSI_NODE, "nfs", "alloc-2"));
    PluginListener recorder = events::add;
    registry.subscribe(PluginType.CSI_NODE, recorder, Runnable::run);
    registry.subscribe(PluginType.CSI_CONTROLLER, recorder, Runnable::run);
    fileStore = JournalStateStore.open(tmp.resolve("state"), JournalStateStore.Options.defaults().withStrict(true));
    fileStore.put("plugin/csi-node/ebs/alloc-1", new byte[] {1, 2, 3});
    fileStore.put("other/record", "kept".getBytes(StandardCharsets.UTF_8));
    scheduler = Executors.newSingleThreadScheduledExecutor();
    supervisor = CsiPluginSupervisor.builder().csiRoot(csiRoot).registry(registry).scheduler(scheduler)
        .random(new Random(1)).build();
  }

  @AfterEach
  void tearDown() {
    supervisor.close();
    scheduler.shutdownNow();
    registry.close();
    fileStore.close();
    shortDir.close();
  }

  @AfterAll
  static void printCatalogueSize() {
    System.out.println("bad-input catalogue: " + rejectedCases.get() + " rejected inputs, " + acceptedCases.get()
        + " accepted boundary values");
  }

  // ---- the runner ---------------------------------------------------------------------------------------------

  /** Everything a bad input must leave alone. */
  private record Snapshot(Map<PluginType, List<PluginInfo>> registrations, Map<String, String> memoryRecords,
      long memoryCommits, Map<String, String> fileRecords, int events, List<String> files) {}

  private Snapshot snapshot() throws IOException {
    Map<PluginType, List<PluginInfo>> regs = new EnumMap<>(PluginType.class);
    for (PluginType t : PluginType.values()) {
      regs.put(t, registry.listAll(t));
    }
    List<String> files;
    try (Stream<Path> walk = Files.walk(shortDir.path())) {
      files = walk.map(p -> shortDir.path().relativize(p).toString()).sorted().toList();
    }
    return new Snapshot(regs, encode(memoryStore.loadAll()), memoryStore.commitCount(), encode(fileStore.loadAll()),
        events.size(), files);
  }

  private static Map<String, String> encode(Map<String, byte[]> records) {
    Map<String, String> m = new TreeMap<>();
    records.forEach((k, v) -> m.put(k, Base64.getEncoder().encodeToString(v)));
    return m;
  }

  private Stream<DynamicTest> rejected(List<Case> cases) {
    Set<String> names = new HashSet<>();
    for (Case c : cases) {
      assertTrue(names.add(c.name()), "duplicate case name " + c.name());
    }
    rejectedCases.addAndGet(cases.size());
    return cases.stream().map(c -> DynamicTest.dynamicTest(c.name(), () -> runRejected(c)));
  }

  private void runRejected(Case c) throws Exception {
    Snapshot before = snapshot();
    Throwable thrown = null;
    try {
      c.action().run();
    } catch (Throwable t) {
      thrown = t;
    }
    if (thrown == null) {
      fail(c.name() + ": accepted, expected " + c.expected());
    }
    Throwable t = thrown;
    assertTrue(c.expected().stream().anyMatch(e -> e.isInstance(t)),
        c.name() + ": threw " + t + ", expected one of " + c.expected());
    String message = String.valueOf(t.getMessage());
    List<String> defects = new ArrayList<>();
    for (String m : c.mentions()) {
      if (!message.contains(m)) {
        defects.add("message must mention '" + m + "': " + escape(message));
      }
    }
    if (message.chars().anyMatch(Character::isISOControl)) {
      defects.add("message carries a raw control character: " + escape(message));
    }
    assertEquals(before, snapshot(), c.name() + ": state changed although the input was rejected");
    assertEquals(List.of(), defects, c.name());
  }

  private Stream<DynamicTest> accepted(Map<String, Action> cases) {
    acceptedCases.addAndGet(cases.size());
    return cases.entrySet().stream().map(e -> DynamicTest.dynamicTest(e.getKey(), () -> e.getValue().run()));
  }

  private static String escape(String s) {
    return s.chars().mapToObj(ch -> Character.isISOControl(ch) ? String.format("\\u%04x", ch) : String.valueOf((char) ch))
        .collect(Collectors.joining());
  }

  // ---- values -------------------------------------------------------------------------------------------------

  static PluginInfo info(PluginType type, String name, String alloc) {
    return new PluginInfo(type, name, "1.0", alloc, Path.of("/csi", name, "csi.sock"), Map.of("k", "v"),
        Fingerprint.EMPTY, PluginHealth.healthy(T0), false);
  }

  /** A PluginInfo with every component given (restored: false), so that each case can pass one bad value. */
  private static PluginInfo with(PluginType type, String name, String version, String alloc, Path socket,
      Map<String, String> options, Fingerprint fp, PluginHealth health) {
    return new PluginInfo(type, name, version, alloc, socket, options, fp, health, false);
  }

  private static final PluginType N = PluginType.CSI_NODE;
  private static final Path SOCK = Path.of("/csi/x/csi.sock");
  private static final Map<String, String> OPTS = Map.of("k", "v");
  private static final PluginHealth OK = PluginHealth.healthy(T0);
  private static final String LONG_129 = "x".repeat(129);
  private static final String HUGE = "y".repeat(1 << 20);

  private static Fingerprint fp(String name, long maxVolumes, Set<String> pluginCaps) {
    return new Fingerprint(name, "1", Map.of(), pluginCaps, Set.of(), Set.of(), "n", maxVolumes, Map.of());
  }

  /**
   * Plugin ids that must be refused wherever one is taken (the registry's plugin name, the hook's plugin id): they
   * become directory names under the CSI root, so one rule, one table.
   */
  private static Map<String, String> badPluginIds() {
    Map<String, String> bad = new java.util.LinkedHashMap<>();
    bad.put("empty", "");
    bad.put("blank", "   ");
    bad.put("dot", ".");
    bad.put("dot dot", "..");
    bad.put("path traversal ../etc", "../etc");
    bad.put("traversal ../../etc", "../../etc");
    bad.put("slash a/b", "a/b");
    bad.put("absolute /etc", "/etc");
    bad.put("129 characters", LONG_129);
    bad.put("1 MiB", HUGE);
    bad.put("NUL", "a\u0000b");
    bad.put("newline", "a\nb");
    bad.put("tab", "e\tbs");
    bad.put("escape sequence", "a\u001b[31mb");
    bad.put("DEL", "a\u007fb");
    bad.put("non-ASCII", "plügin");
    bad.put("space", "my plugin");
    bad.put("backslash", "a\\b");
    bad.put("shell metacharacters", "a;rm -rf");
    bad.put("glob", "ebs*");
    return bad;
  }

  // ---- registry -----------------------------------------------------------------------------------------------

  @TestFactory
  Stream<DynamicTest> registryApi() {
    List<Case> c = new ArrayList<>();
    // PluginInfo: the plugin name, which is also a directory name.
    badPluginIds().forEach((label, v) -> c.add(bad("PluginInfo.name " + label, IllegalArgumentException.class,
        () -> with(N, v, "1", "a", SOCK, OPTS, Fingerprint.EMPTY, OK), "name")));
    c.add(nul("PluginInfo.name null", () -> with(N, null, "1", "a", SOCK, OPTS, Fingerprint.EMPTY, OK), "name"));
    // PluginInfo: the allocation id.
    Map<String, String> badAllocs = new java.util.LinkedHashMap<>();
    badAllocs.put("empty", "");
    badAllocs.put("blank", " \t ");
    badAllocs.put("129 characters", LONG_129);
    badAllocs.put("1 MiB", HUGE);
    badAllocs.put("NUL", "a\u0000");
    badAllocs.put("newline", "alloc\n1");
    badAllocs.put("carriage return", "alloc\r1");
    badAllocs.put("DEL", "a\u007f");
    badAllocs.put("C1 control", "a\u0085b");
    badAllocs.forEach((label, v) -> c.add(bad("PluginInfo.allocId " + label, IllegalArgumentException.class,
        () -> with(N, "p", "1", v, SOCK, OPTS, Fingerprint.EMPTY, OK), "allocId")));
    c.add(nul("PluginInfo.allocId null", () -> with(N, "p", "1", null, SOCK, OPTS, Fingerprint.EMPTY, OK), "allocId"));
    c.add(nul("PluginInfo.type null", () -> with(null, "p", "1", "a", SOCK, OPTS, Fingerprint.EMPTY, OK), "type"));
    c.add(nul("PluginInfo.version null", () -> with(N, "p", null, "a", SOCK, OPTS, Fingerprint.EMPTY, OK), "version"));
    c.add(nul("PluginInfo.socketPath null", () -> with(N, "p", "1", "a", null, OPTS, Fingerprint.EMPTY, OK), "socketPath"));
    c.add(bad("PluginInfo.socketPath empty", IllegalArgumentException.class,
        () -> with(N, "p", "1", "a", Path.of(""), OPTS, Fingerprint.EMPTY, OK), "socketPath"));
    c.add(nul("PluginInfo.options null", () -> with(N, "p", "1", "a", SOCK, null, Fingerprint.EMPTY, OK), "options"));
    Map<String, String> nullValue = new HashMap<>();
    nullValue.put("k", null);
    c.add(bad("PluginInfo.options null value", IllegalArgumentException.class,
        () -> with(N, "p", "1", "a", SOCK, nullValue, Fingerprint.EMPTY, OK), "options"));
    Map<String, String> nullKey = new HashMap<>();
    nullKey.put(null, "v");
    c.add(bad("PluginInfo.options null key", IllegalArgumentException.class,
        () -> with(N, "p", "1", "a", SOCK, nullKey, Fingerprint.EMPTY, OK), "options"));
    c.add(nul("PluginInfo.fingerprint null", () -> with(N, "p", "1", "a", SOCK, OPTS, null, OK), "fingerprint"));
    c.add(nul("PluginInfo.health null", () -> with(N, "p", "1", "a", SOCK, OPTS, Fingerprint.EMPTY, null), "health"));
    c.add(bad("Fingerprint.maxVolumesPerNode negative", IllegalArgumentException.class,
        () -> fp("x", -1, Set.of()), "fingerprint.maxVolumesPerNode"));
    c.add(bad("Fingerprint.maxVolumesPerNode Long.MIN_VALUE", IllegalArgumentException.class,
        () -> fp("x", Long.MIN_VALUE, Set.of()), "fingerprint.maxVolumesPerNode"));
    c.add(nul("Fingerprint.name null", () -> fp(null, 0, Set.of()), "fingerprint.name"));
    Set<String> nullCap = new HashSet<>(Arrays.asList("CONTROLLER_SERVICE", null));
    c.add(bad("Fingerprint.pluginCapabilities null element", IllegalArgumentException.class,
        () -> fp("x", 0, nullCap), "fingerprint.pluginCapabilities"));
    c.add(nul("PluginHealth.message null", () -> new PluginHealth(true, null, T0), "message"));
    c.add(nul("PluginHealth.since null", () -> new PluginHealth(true, "", null), "since"));
    c.add(bad("PluginEvent.sequence 0", IllegalArgumentException.class,
        () -> new PluginEvent(0, N, PluginEvent.Kind.REGISTERED, info(N, "p", "a"), T0), "sequence"));
    c.add(bad("PluginEvent.type differs from plugin.type", IllegalArgumentException.class,
        () -> new PluginEvent(1, PluginType.CSI_CONTROLLER, PluginEvent.Kind.REGISTERED, info(N, "p", "a"), T0),
        "plugin.type"));
    c.add(nul("PluginEvent.kind null", () -> new PluginEvent(1, N, null, info(N, "p", "a"), T0), "kind"));
    c.add(nul("RestoreProblem.key null", () -> new RestoreProblem(null, "why"), "key"));
    c.add(nul("PluginKey.name null", () -> new PluginKey(N, null, "a"), "name"));
    c.add(bad("PluginKey.name traversal", IllegalArgumentException.class, () -> new PluginKey(N, "..", "a"), "name"));

    // Registry calls.
    c.add(nul("register(null)", () -> registry.register(null), "info"));
    c.add(nul("deregister type null", () -> registry.deregister(null, "ebs", "alloc-1"), "type"));
    c.add(bad("deregister name traversal", IllegalArgumentException.class,
        () -> registry.deregister(N, "../ebs", "alloc-1"), "name"));
    c.add(bad("deregister name empty", IllegalArgumentException.class, () -> registry.deregister(N, "", "alloc-1"), "name"));
    c.add(nul("deregister name null", () -> registry.deregister(N, null, "alloc-1"), "name"));
    c.add(bad("deregister allocId empty", IllegalArgumentException.class, () -> registry.deregister(N, "ebs", ""), "allocId"));
    c.add(bad("deregister allocId control", IllegalArgumentException.class,
        () -> registry.deregister(N, "ebs", "alloc-1\n"), "allocId"));
    c.add(bad("deregister allocId oversized", IllegalArgumentException.class,
        () -> registry.deregister(N, "ebs", HUGE), "allocId"));
    c.add(bad("find name traversal", IllegalArgumentException.class, () -> registry.find(N, "../../etc/passwd"), "name"));
    c.add(nul("find type null", () -> registry.find(null, "ebs"), "type"));
    c.add(nul("list type null", () -> registry.list(null), "type"));
    c.add(nul("listAll type null", () -> registry.listAll(null), "type"));
    c.add(bad("pluginForAlloc allocId empty", IllegalArgumentException.class,
        () -> registry.pluginForAlloc(N, "ebs", ""), "allocId"));
    c.add(bad("pluginForAlloc name with NUL", IllegalArgumentException.class,
        () -> registry.pluginForAlloc(N, "eb\u0000s", "alloc-1"), "name"));
    c.add(nul("subscribe type null", () -> registry.subscribe(null, e -> {}, Runnable::run), "type"));
    c.add(nul("subscribe listener null", () -> registry.subscribe(N, null, Runnable::run), "listener"));
    c.add(nul("subscribe executor null", () -> registry.subscribe(N, e -> {}, null), "executor"));
    c.add(nul("reconcile null", () -> registry.reconcile(null), "liveAllocIds"));
    Set<String> withNull = new HashSet<>(Arrays.asList("alloc-1", null));
    c.add(nul("reconcile set with null", () -> registry.reconcile(withNull), "liveAllocIds element"));
    c.add(bad("dispense name traversal", IllegalArgumentException.class, () -> registry.dispense(N, "../ebs"), "name"));
    c.add(nul("dispense type null", () -> registry.dispense(null, "ebs"), "type"));
    c.add(nul("dispense clientType null", () -> registry.dispense(N, "ebs", null), "clientType"));
    c.add(bad("dispense without a dispenser", IllegalStateException.class, () -> registry.dispense(N, "ebs"),
        "no dispenser", "csi-node"));

    // Unknown enums and wrong types through the string API.
    Map<String, String> badTypes = new java.util.LinkedHashMap<>();
    badTypes.put("empty", "");
    badTypes.put("unknown word", "csi");
    badTypes.put("short form", "node");
    badTypes.put("trailing space", "csi-node ");
    badTypes.put("leading space", " csi-node");
    badTypes.put("mixed separators", "csi_node-");
    badTypes.put("with NUL", "csi-node\u0000");
    badTypes.put("number", "1");
    badTypes.put("ordinal of CSI_CONTROLLER", "0");
    badTypes.put("boolean", "true");
    badTypes.put("JSON object", "{\"type\":\"csi-node\"}");
    badTypes.put("list", "csi-controller,csi-node");
    badTypes.put("10k characters", "c".repeat(10_000));
    badTypes.forEach((label, v) -> c.add(bad("PluginType.parse " + label, IllegalArgumentException.class,
        () -> PluginType.parse(v), "unknown plugin type", "csi-controller, csi-node")));
    c.add(bad("PluginType.parse null", IllegalArgumentException.class, () -> PluginType.parse(null),
        "unknown plugin type null"));
    Map<String, String> badKeys = new java.util.LinkedHashMap<>();
    badKeys.put("empty", "");
    badKeys.put("prefix only", "plugin/");
    badKeys.put("no allocId", "plugin/csi-node/ebs");
    badKeys.put("unknown type", "plugin/csi-volume/ebs/a1");
    badKeys.put("name traversal", "plugin/csi-node/../a1");
    badKeys.put("empty name", "plugin/csi-node//a1");
    badKeys.put("other prefix", "other/csi-node/ebs/a1");
    badKeys.put("empty allocId", "plugin/csi-node/ebs/");
    badKeys.put("allocId with control", "plugin/csi-node/ebs/a\u0001");
    badKeys.forEach((label, v) -> c.add(bad("PluginKey.fromStoreKey " + label, IllegalArgumentException.class,
        () -> PluginKey.fromStoreKey(v), "store key")));
    c.add(bad("PluginKey.fromStoreKey null", IllegalArgumentException.class, () -> PluginKey.fromStoreKey(null),
        "store key"));

    // The builder.
    c.add(bad("builder maxSubscriberBacklog 0", IllegalArgumentException.class,
        () -> PluginRegistry.builder().maxSubscriberBacklog(0), "maxSubscriberBacklog"));
    c.add(bad("builder maxSubscriberBacklog negative", IllegalArgumentException.class,
        () -> PluginRegistry.builder().maxSubscriberBacklog(Integer.MIN_VALUE), "maxSubscriberBacklog"));
    c.add(bad("builder restoreGracePeriod zero", IllegalArgumentException.class,
        () -> PluginRegistry.builder().restoreGracePeriod(Duration.ZERO, scheduler), "gracePeriod"));
    c.add(bad("builder restoreGracePeriod negative", IllegalArgumentException.class,
        () -> PluginRegistry.builder().restoreGracePeriod(Duration.ofSeconds(-1), scheduler), "gracePeriod"));
    c.add(nul("builder restoreGracePeriod null", () -> PluginRegistry.builder().restoreGracePeriod(null, scheduler),
        "gracePeriod"));
    c.add(nul("builder restoreGracePeriod scheduler null",
        () -> PluginRegistry.builder().restoreGracePeriod(Duration.ofSeconds(1), null), "scheduler"));
    c.add(bad("builder closeTimeout negative", IllegalArgumentException.class,
        () -> PluginRegistry.builder().closeTimeout(Duration.ofMillis(-1)), "closeTimeout"));
    c.add(nul("builder closeTimeout null", () -> PluginRegistry.builder().closeTimeout(null), "closeTimeout"));
    c.add(nul("builder stateStore null", () -> PluginRegistry.builder().stateStore(null), "stateStore"));
    c.add(nul("builder clock null", () -> PluginRegistry.builder().clock(null), "clock"));
    c.add(nul("builder dispenser type null", () -> PluginRegistry.builder().dispenser(null, p -> p), "type"));
    c.add(nul("builder dispenser null", () -> PluginRegistry.builder().dispenser(N, null), "dispenser"));
    c.add(bad("builder build without a store", IllegalStateException.class, () -> PluginRegistry.builder().build(),
        "stateStore"));
    return rejected(c);
  }

  // ---- state store --------------------------------------------------------------------------------------------

  @TestFactory
  Stream<DynamicTest> stateStore() throws IOException {
    List<Case> c = new ArrayList<>();
    byte[] v = {1};
    for (String kind : List.of("memory", "mapdb")) {
      StateStore s = kind.equals("memory") ? memoryStore : fileStore;
      String p = kind + " ";
      c.add(nul(p + "put key null", () -> s.put(null, v), "key"));
      c.add(bad(p + "put key empty", IllegalArgumentException.class, () -> s.put("", v), "key"));
      c.add(bad(p + "put key blank", IllegalArgumentException.class, () -> s.put(" \t ", v), "key"));
      c.add(bad(p + "put key newline only", IllegalArgumentException.class, () -> s.put("\n", v), "key"));
      c.add(nul(p + "put value null", () -> s.put("plugin/csi-node/ebs/alloc-1", null), "value"));
      c.add(nul(p + "delete key null", () -> s.delete(null), "key"));
      c.add(bad(p + "delete key empty", IllegalArgumentException.class, () -> s.delete(""), "key"));
      c.add(nul(p + "get key null", () -> s.get(null), "key"));
      c.add(bad(p + "get key blank", IllegalArgumentException.class, () -> s.get("  "), "key"));
      c.add(nul(p + "apply null", () -> s.apply(null), "changes"));
      // A bad element anywhere fails the whole commit: the good change before it must not land either.
      List<StateChange> withNull = Arrays.asList(new StateChange.Put("plugin/csi-node/ebs/alloc-1", new byte[] {9}), null);
      c.add(nul(p + "apply list with a null element", () -> s.apply(withNull), "changes[1]"));
    }
    c.add(bad("StateChange.Put key empty", IllegalArgumentException.class, () -> new StateChange.Put("", new byte[0]), "key"));
    c.add(nul("StateChange.Put value null", () -> new StateChange.Put("k", null), "value"));
    c.add(nul("StateChange.Delete key null", () -> new StateChange.Delete(null), "key"));
    c.add(bad("StateChange.Delete key blank", IllegalArgumentException.class, () -> new StateChange.Delete("   "), "key"));
    c.add(bad("closed store put", IllegalStateException.class, () -> {
      InMemoryStateStore closed = new InMemoryStateStore();
      closed.close();
      closed.put("k", v);
    }, "closed"));

    // Opening the journal store.
    Path dir = tmp.resolve("other");
    c.add(nul("open dataDir null", () -> JournalStateStore.open(null), "dataDir"));
    c.add(nul("open options null", () -> JournalStateStore.open(dir, null), "options"));
    for (long size : new long[] {-1, 0, 4095, (1L << 30) + 1}) {
      c.add(bad("Options.segmentBytes " + size, IllegalArgumentException.class,
          () -> JournalStateStore.Options.defaults().withSegmentBytes(size), "segmentBytes", String.valueOf(size)));
    }
    c.add(nul("Options.clock null", () -> JournalStateStore.Options.defaults().withClock(null), "clock"));
    c.add(bad("state key over 65535 bytes", IllegalArgumentException.class,
        () -> fileStore.put("k".repeat(65_536), v), "key", "65535"));
    Path regularFile = tmp.resolve("a-file");
    Files.writeString(regularFile, "not a directory");
    c.add(bad("open dataDir is a regular file", StateStoreException.class, () -> JournalStateStore.open(regularFile),
        regularFile.toString(), "not a directory"));
    Path dirAsFile = tmp.resolve("dir-as-file");
    Files.createDirectories(dirAsFile);
    Files.writeString(dirAsFile.resolve(JournalStateStore.DIRECTORY), "a file where the state directory goes");
    c.add(bad("open state directory is a file", StateStoreException.class, () -> JournalStateStore.open(dirAsFile),
        "not a directory"));
    c.add(bad("open a store another store holds", StateFileLockedException.class,
        () -> JournalStateStore.open(tmp.resolve("state")), "locked", fileStore.directory().toString()));
    Path garbage = tmp.resolve("garbage");
    Files.createDirectories(garbage.resolve(JournalStateStore.DIRECTORY));
    byte[] junk = new byte[64 * 1024];
    new Random(7).nextBytes(junk);
    Path junkCheckpoint = garbage.resolve(JournalStateStore.DIRECTORY).resolve("checkpoint-0000000000000007.db");
    Files.write(junkCheckpoint, junk);
    c.add(bad("open strict a checkpoint of random bytes", StateFileCorruptException.class, () -> {
      try {
        JournalStateStore.open(garbage, JournalStateStore.Options.defaults().withStrict(true));
      } finally {
        assertArrayEquals(junk, Files.readAllBytes(junkCheckpoint), "strict mode must leave a corrupt file untouched");
      }
    }, "corrupt", "strict", junkCheckpoint.getFileName().toString()));
    Path legacy = tmp.resolve("legacy");
    Files.createDirectories(legacy);
    Files.write(legacy.resolve("registry.db"), junk);
    c.add(bad("open strict an earlier version's state file of random bytes", StateFileCorruptException.class, () -> {
      try {
        JournalStateStore.open(legacy, JournalStateStore.Options.defaults().withStrict(true));
      } finally {
        assertArrayEquals(junk, Files.readAllBytes(legacy.resolve("registry.db")), "left untouched");
      }
    }, "corrupt", "registry.db"));
    return rejected(c);
  }

  // ---- hook configuration -------------------------------------------------------------------------------------

  private static CsiPluginConfig.Builder config(String id) {
    return CsiPluginConfig.builder(id, PluginKind.NODE);
  }

  @TestFactory
  Stream<DynamicTest> hookConfig() throws IOException {
    List<Case> c = new ArrayList<>();
    badPluginIds().forEach((label, id) -> c.add(bad("CsiPluginConfig.pluginId " + label, IllegalArgumentException.class,
        () -> config(id).build(), "pluginId")));
    c.add(nul("CsiPluginConfig.pluginId null", () -> config(null).build(), "pluginId"));
    c.add(nul("CsiPluginConfig.type null", () -> CsiPluginConfig.builder("ebs", null).build(), "type"));
    Map<String, String> badMounts = new java.util.LinkedHashMap<>();
    badMounts.put("empty", "");
    badMounts.put("relative", "csi");
    badMounts.put("traversal inside", "/csi/../etc");
    badMounts.put("traversal at the end", "/csi/..");
    badMounts.put("root parent", "/..");
    badMounts.forEach((label, m) -> c.add(bad("CsiPluginConfig.mountDir " + label, IllegalArgumentException.class,
        () -> config("ebs").mountDir(m).build(), "mountDir")));
    c.add(nul("CsiPluginConfig.mountDir null", () -> config("ebs").mountDir(null).build(), "mountDir"));
    c.add(bad("CsiPluginConfig.healthTimeout negative", IllegalArgumentException.class,
        () -> config("ebs").healthTimeout(Duration.ofMillis(-1)).build(), "healthTimeout"));
    c.add(nul("CsiPluginConfig.healthTimeout null", () -> config("ebs").healthTimeout(null).build(), "healthTimeout"));
    for (String field : List.of("probeInterval", "probeTimeout", "initialBackoff", "maxBackoff")) {
      for (Duration d : List.of(Duration.ZERO, Duration.ofNanos(-1))) {
        c.add(bad("CsiPluginConfig." + field + " " + d, IllegalArgumentException.class,
            () -> setDuration(config("ebs"), field, d).build(), field));
      }
      c.add(nul("CsiPluginConfig." + field + " null", () -> setDuration(config("ebs"), field, null).build(), field));
    }
    c.add(bad("CsiPluginConfig.maxBackoff below initialBackoff", IllegalArgumentException.class,
        () -> config("ebs").initialBackoff(Duration.ofSeconds(2)).maxBackoff(Duration.ofSeconds(1)).build(),
        "maxBackoff", "initialBackoff"));
    c.add(bad("CsiPluginConfig.externalSocket relative", IllegalArgumentException.class,
        () -> config("ebs").externalSocket(Path.of("run/csi.sock")).build(), "externalSocket"));
    Path tooLong = Path.of("/" + "s".repeat(107));
    c.add(bad("CsiPluginConfig.externalSocket 108 bytes", IllegalArgumentException.class,
        () -> config("ebs").externalSocket(tooLong).build(), "externalSocket", "107"));
    Path multibyte = Path.of("/" + "é".repeat(54)); // 109 bytes, 55 characters
    c.add(bad("CsiPluginConfig.externalSocket 109 bytes in 55 characters", IllegalArgumentException.class,
        () -> config("ebs").externalSocket(multibyte).build(), "externalSocket", "107"));

    Map<String, String> badTokens = new java.util.LinkedHashMap<>();
    badTokens.put("empty", "");
    badTokens.put("blank", "  ");
    badTokens.put("129 characters", LONG_129);
    badTokens.put("NUL", "a\u0000");
    badTokens.put("newline", "a\nb");
    badTokens.put("escape sequence", "\u001b[2J");
    badTokens.forEach((label, v) -> {
      c.add(bad("TaskContext.allocId " + label, IllegalArgumentException.class, () -> new TaskContext(v, "task"), "allocId"));
      c.add(bad("TaskContext.taskName " + label, IllegalArgumentException.class, () -> new TaskContext("alloc", v), "taskName"));
    });
    c.add(nul("TaskContext.allocId null", () -> new TaskContext(null, "task"), "allocId"));
    c.add(nul("TaskContext.taskName null", () -> new TaskContext("alloc", null), "taskName"));

    // The supervisor: the socket path only known once csiRoot is known.
    Path deepRoot = shortDir.path().resolve("d".repeat(60)).resolve("e".repeat(30));
    c.add(bad("hook whose socket path exceeds 107 bytes", IllegalArgumentException.class, () -> {
      try (CsiPluginSupervisor deep = CsiPluginSupervisor.builder().csiRoot(deepRoot).registry(registry)
          .scheduler(scheduler).build()) {
        deep.hook(new TaskContext("alloc-9", "t"), config("plugin-with-a-long-id").build(), TaskEventEmitter.discarding(),
            r -> {});
      }
    }, "socket path", "107"));
    c.add(bad("supervisor csiRoot relative", IllegalArgumentException.class,
        () -> CsiPluginSupervisor.builder().csiRoot(Path.of("csi")).registry(registry).scheduler(scheduler).build(),
        "csiRoot"));
    c.add(nul("supervisor csiRoot null",
        () -> CsiPluginSupervisor.builder().registry(registry).scheduler(scheduler).build(), "csiRoot"));
    c.add(nul("supervisor registry null",
        () -> CsiPluginSupervisor.builder().csiRoot(csiRoot).scheduler(scheduler).build(), "registry"));
    c.add(nul("supervisor scheduler null",
        () -> CsiPluginSupervisor.builder().csiRoot(csiRoot).registry(registry).build(), "scheduler"));
    c.add(nul("supervisor clock null", () -> CsiPluginSupervisor.builder().csiRoot(csiRoot).registry(registry)
        .scheduler(scheduler).clock(null).build(), "clock"));
    c.add(nul("supervisor random null", () -> CsiPluginSupervisor.builder().csiRoot(csiRoot).registry(registry)
        .scheduler(scheduler).random(null).build(), "random"));
    TaskContext task = new TaskContext("alloc-9", "plugin");
    CsiPluginConfig good = config("ebs9").build();
    c.add(nul("hook task null", () -> supervisor.hook(null, good, TaskEventEmitter.discarding(), r -> {}), "task"));
    c.add(nul("hook config null", () -> supervisor.hook(task, null, TaskEventEmitter.discarding(), r -> {}), "config"));
    c.add(nul("hook events null", () -> supervisor.hook(task, good, null, r -> {}), "events"));
    c.add(nul("hook lifecycle null", () -> supervisor.hook(task, good, TaskEventEmitter.discarding(), null), "lifecycle"));
    c.add(bad("hook on a closed supervisor", IllegalStateException.class, () -> {
      CsiPluginSupervisor closed = CsiPluginSupervisor.builder().csiRoot(csiRoot).registry(registry)
          .scheduler(scheduler).build();
      closed.close();
      closed.hook(task, good, TaskEventEmitter.discarding(), r -> {});
    }, "closed"));
    c.add(nul("prestart request null", () -> newHook(task, good).prestart(null), "request"));
    c.add(nul("poststart request null", () -> newHook(task, good).poststart(null), "request"));
    c.add(nul("stop request null", () -> newHook(task, good).stop(null), "request"));
    c.add(bad("prestart after stop", IllegalStateException.class, () -> {
      CsiPluginSupervisorHook h = newHook(task, good);
      h.stop(StopRequest.because("test"));
      h.prestart(PrestartRequest.withEnv(Map.of()));
    }, "ebs9", "stopped"));
    c.add(bad("poststart after stop", IllegalStateException.class, () -> {
      CsiPluginSupervisorHook h = newHook(task, good);
      h.stop(StopRequest.because("test"));
      h.poststart(PoststartRequest.of());
    }, "ebs9", "stopped"));
    c.add(bad("PoststartRequest pid negative", IllegalArgumentException.class, () -> new PoststartRequest(-1), "pid"));
    c.add(nul("StopRequest reason null", () -> new StopRequest(null), "reason"));
    c.add(nul("PrestartRequest taskEnv null", () -> new PrestartRequest(null), "taskEnv"));
    Map<String, String> envWithNull = new HashMap<>();
    envWithNull.put("CSI_ENDPOINT", null);
    c.add(nul("PrestartRequest taskEnv null value", () -> new PrestartRequest(envWithNull), "taskEnv"));
    c.add(bad("TaskMount taskPath relative", IllegalArgumentException.class,
        () -> new TaskMount(csiRoot, "csi", TaskMount.Propagation.PRIVATE, false), "taskPath"));
    return rejected(c);
  }

  private CsiPluginSupervisorHook newHook(TaskContext task, CsiPluginConfig config) {
    return supervisor.hook(task, config, TaskEventEmitter.discarding(), r -> {});
  }

  private static CsiPluginConfig.Builder setDuration(CsiPluginConfig.Builder b, String field, Duration d) {
    return switch (field) {
      case "probeInterval" -> b.probeInterval(d);
      case "probeTimeout" -> b.probeTimeout(d);
      case "initialBackoff" -> b.initialBackoff(d);
      case "maxBackoff" -> b.maxBackoff(d);
      default -> throw new IllegalArgumentException(field);
    };
  }

  // ---- CSI client -------------------------------------------------------------------------------------------

  @TestFactory
  Stream<DynamicTest> clientInputs() throws IOException {
    List<Case> c = new ArrayList<>();
    Path base = shortDir.path();
    c.add(bad("create empty path", IllegalArgumentException.class, () -> CsiClient.create(Path.of("")), "socket"));
    c.add(nul("create null path", () -> CsiClient.create(null), "socket"));
    c.add(nul("create null options", () -> CsiClient.create(base.resolve("x.sock"), null), "options"));
    Path p108 = Path.of("/tmp/" + "p".repeat(103));
    c.add(bad("create 108-byte path", SocketPathTooLongException.class, () -> CsiClient.create(p108),
        "108 bytes", "107", p108.toString()));
    Path p1000 = Path.of("/tmp/" + "p".repeat(995));
    c.add(bad("create 1000-byte path", SocketPathTooLongException.class, () -> CsiClient.create(p1000), "1000 bytes"));
    Path multibyte = Path.of("/tmp/" + "ü".repeat(55)); // 115 bytes in 60 characters
    c.add(bad("create path of 60 characters but 115 bytes", SocketPathTooLongException.class,
        () -> CsiClient.create(multibyte), "115 bytes"));
    Path relative = Path.of("r".repeat(107 - 1));
    c.add(bad("create relative path too long once absolute", SocketPathTooLongException.class,
        () -> CsiClient.create(relative), relative.toAbsolutePath().toString()));
    c.add(bad("options callTimeout zero", IllegalArgumentException.class,
        () -> CsiClientOptions.defaults().withCallTimeout(Duration.ZERO), "callTimeout"));
    c.add(bad("options callTimeout negative", IllegalArgumentException.class,
        () -> CsiClientOptions.defaults().withCallTimeout(Duration.ofSeconds(-5)), "callTimeout"));
    c.add(nul("options callTimeout null", () -> CsiClientOptions.defaults().withCallTimeout(null), "callTimeout"));
    c.add(bad("options maxInboundMessageBytes zero", IllegalArgumentException.class,
        () -> CsiClientOptions.defaults().withMaxInboundMessageBytes(0), "maxInboundMessageBytes"));
    c.add(bad("options maxInboundMessageBytes negative", IllegalArgumentException.class,
        () -> CsiClientOptions.defaults().withMaxInboundMessageBytes(-1), "maxInboundMessageBytes"));

    // Paths that exist (or not) but hold no CSI plugin: the probe's error names the path and what is there.
    Path missing = base.resolve("missing.sock");
    c.add(bad("probe a missing path", SocketNotFoundException.class, () -> probe(missing), missing.toString(), "does not exist"));
    Path traversal = base.resolve("x/../../" + base.getFileName() + "/nowhere/csi.sock");
    c.add(bad("probe a path with traversal", SocketNotFoundException.class, () -> probe(traversal), "does not exist"));
    Path control = base.resolve("bad\nname.sock");
    c.add(bad("probe a path with a newline", SocketNotFoundException.class, () -> probe(control), "does not exist"));
    Path regular = base.resolve("regular.sock");
    Files.writeString(regular, "I am a file");
    c.add(bad("probe a regular file", NotASocketException.class, () -> probe(regular), regular.toString(), "a regular file"));
    Path directory = base.resolve("dir.sock");
    Files.createDirectories(directory);
    c.add(bad("probe a directory", NotASocketException.class, () -> probe(directory), "a directory"));
    Path underFile = regular.resolve("csi.sock");
    c.add(bad("probe a path under a regular file", SocketNotFoundException.class, () -> probe(underFile),
        underFile.toString()));
    Path stale = base.resolve("stale.sock");
    try (ServerSocketChannel ch = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.bind(UnixDomainSocketAddress.of(stale));
    }
    c.add(bad("probe a stale socket", ConnectionRefusedException.class, () -> probe(stale), stale.toString()));
    Path http = base.resolve("http.sock");
    c.add(bad("probe a server that is not CSI", NotCsiServerException.class, () -> {
      NonCsiServer server = NonCsiServer.start(http);
      try {
        probe(http);
      } finally {
        server.close();
      }
    }, http.toString(), "not a CSI plugin"));
    c.add(nul("fingerprint kind null", () -> {
      try (CsiClient client = CsiClient.create(missing)) {
        client.fingerprintAsync(null);
      }
    }, "kind"));
    return rejected(c);
  }

  private static void probe(Path socket) throws Exception {
    try (CsiClient client = CsiClient.create(socket, CsiClientOptions.defaults().withCallTimeout(Duration.ofSeconds(2)))) {
      client.probe();
    }
  }

  // ---- boundaries that must be accepted ------------------------------------------------------------------------

  @TestFactory
  Stream<DynamicTest> acceptedBoundaries() {
    Map<String, Action> a = new java.util.LinkedHashMap<>();
    a.put("PluginInfo.name of 128 characters", () -> with(N, "n".repeat(128), "1", "a", SOCK, OPTS, Fingerprint.EMPTY, OK));
    a.put("PluginInfo.name with dots, dashes, underscores", () -> with(N, "a.b_c-D9", "1", "a", SOCK, OPTS, Fingerprint.EMPTY, OK));
    a.put("PluginInfo.allocId of 128 characters", () -> with(N, "p", "1", "a".repeat(128), SOCK, OPTS, Fingerprint.EMPTY, OK));
    a.put("PluginInfo.version empty", () -> with(N, "p", "", "a", SOCK, OPTS, Fingerprint.EMPTY, OK));
    a.put("allocId with slashes and dots round-trips through store and restore", () -> {
      // Not a path anywhere: the store key keeps it after the name, and restore splits at most three times.
      PluginInfo odd = info(N, "ebs", "../x/y/..");
      InMemoryStateStore s = new InMemoryStateStore();
      try (PluginRegistry r = PluginRegistry.builder().stateStore(s).build()) {
        r.register(odd);
      }
      try (PluginRegistry r = PluginRegistry.builder().stateStore(s).build()) {
        assertEquals(List.of(), r.restoreProblems());
        assertEquals(odd, r.pluginForAlloc(N, "ebs", "../x/y/..").orElseThrow().withRestored(false));
      }
    });
    a.put("PluginType.parse ids and constant names in any case", () -> {
      assertEquals(PluginType.CSI_NODE, PluginType.parse("csi-node"));
      assertEquals(PluginType.CSI_NODE, PluginType.parse("CSI_NODE"));
      assertEquals(PluginType.CSI_CONTROLLER, PluginType.parse("Csi-Controller"));
    });
    a.put("PluginKey.fromStoreKey with an allocId holding slashes", () ->
        assertEquals(new PluginKey(N, "ebs", "a/b"), PluginKey.fromStoreKey("plugin/csi-node/ebs/a/b")));
    a.put("CsiPluginConfig.pluginId of 128 characters", () -> config("i".repeat(128)).build());
    a.put("CsiPluginConfig.externalSocket of exactly 107 bytes", () ->
        config("ebs").externalSocket(Path.of("/" + "s".repeat(106))).build());
    a.put("CsiPluginConfig.healthTimeout zero (wait forever)", () -> config("ebs").healthTimeout(Duration.ZERO).build());
    a.put("CsiPluginConfig.mountDir with a dot segment", () -> config("ebs").mountDir("/csi/./x").build());
    a.put("TaskContext with 128-character ids", () -> new TaskContext("a".repeat(128), "t".repeat(128)));
    a.put("CsiClient.create of a 107-byte path", () -> {
      try (CsiClient client = CsiClient.create(Path.of("/tmp/" + "p".repeat(102)))) {
        assertEquals(107, client.socket().toString().getBytes(StandardCharsets.UTF_8).length);
      }
    });
    a.put("state store key with control characters and a 1 MiB value round-trips", () -> {
      InMemoryStateStore s = new InMemoryStateStore();
      byte[] big = new byte[1 << 20];
      s.put("k\u0000\n", big);
      assertArrayEquals(big, s.get("k\u0000\n").orElseThrow());
    });
    a.put("clock is only used for quarantine names", () -> JournalStateStore.Options.defaults().withClock(Clock.systemUTC()));
    return accepted(a);
  }
}
