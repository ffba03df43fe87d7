package dev.csisupervisor.agent.discovery;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** A real discovery directory with real mock CSI plugins on unix sockets. */
class DiscoveryDirTest {
  private static final Duration WAIT = Duration.ofSeconds(20);

  private Path dir;
  private ScheduledExecutorService scheduler;
  private ExecutorService closer;
  private final List<MockCsiPlugin> plugins = new ArrayList<>();
  private final Map<String, Supervised> supervised = new ConcurrentHashMap<>();
  private final List<String> events = Collections.synchronizedList(new ArrayList<>());
  private DiscoveryDir discovery;

  /** What the fake supervision was asked to do. */
  static final class Supervised {
    final PluginKind kind;
    final Path socket;
    volatile String stopped;
    volatile String detached;

    Supervised(PluginKind kind, Path socket) {
      this.kind = kind;
      this.socket = socket;
    }
  }

  @BeforeEach
  void setUp() throws IOException {
    // Short: a unix socket path holds at most 107 bytes.
    dir = Files.createTempDirectory(Path.of("/tmp"), "d");
    scheduler = Executors.newScheduledThreadPool(2);
    closer = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() throws IOException {
    if (discovery != null) {
      discovery.close();
    }
    plugins.forEach(MockCsiPlugin::close);
    scheduler.shutdownNow();
    closer.shutdownNow();
    FileTrees.deleteQuietly(dir);
  }

  private DiscoveryDir.Builder builder(SocketClassifier classifier) {
    return DiscoveryDir.builder(dir)
        .scheduler(scheduler)
        .classifier(classifier)
        .supervision((id, kind, socket) -> {
          Supervised s = new Supervised(kind, socket);
          supervised.put(id, s);
          return new DiscoveryDir.Handle() {
            @Override
            public void stop(String reason) {
              s.stopped = reason;
            }

            @Override
            public void detach(String reason) {
              s.detached = reason;
            }
          };
        })
        .listener((id, type, message) -> events.add(id + "|" + type + "|" + message))
        .backoff(Duration.ofMillis(50), Duration.ofMillis(200))
        .rescanInterval(Duration.ofMillis(300));
  }

  private void start(SocketClassifier classifier) throws IOException {
    discovery = builder(classifier).build();
    discovery.start();
  }

  private void startReal() throws IOException {
    start(new CsiSocketClassifier(Duration.ofSeconds(2), closer));
  }

  private MockCsiPlugin plugin(String file, MockMode mode) throws IOException {
    MockCsiPlugin p = MockCsiPlugin.builder().socket(dir.resolve(file)).mode(mode)
        .name(file + ".csi.dev").build().start();
    plugins.add(p);
    return p;
  }

  private Optional<DiscoveryDir.Entry> entry(String id) {
    return discovery.entries().stream().filter(e -> e.id().equals(id)).findFirst();
  }

  private boolean sawEvent(String id, String type) {
    synchronized (events) {
      return events.stream().anyMatch(e -> e.startsWith(id + "|" + type + "|"));
    }
  }

  /** A socket file with nothing accepting: bound, then the listener closed. */
  private Path staleSocket(String name) throws IOException {
    Path p = dir.resolve(name);
    try (ServerSocketChannel ch = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.bind(UnixDomainSocketAddress.of(p));
    }
    assertTrue(Files.exists(p), "closing the listener leaves the file");
    return p;
  }

  @Test
  void existingSockets_arePickedUpAtStart_andClassifiedByTheirAnswers() throws Exception {
    plugin("ctl.sock", MockMode.CONTROLLER);
    plugin("nodeplugin", MockMode.NODE);
    plugin("mono.sock", MockMode.MONOLITH);
    startReal();
    await().atMost(WAIT).until(() -> supervised.size() == 3);
    assertEquals(PluginKind.CONTROLLER, supervised.get("ctl").kind);
    assertEquals(PluginKind.NODE, supervised.get("nodeplugin").kind);
    assertEquals(PluginKind.MONOLITH, supervised.get("mono").kind);
    assertEquals(dir.resolve("ctl.sock"), supervised.get("ctl").socket);
    assertEquals(DiscoveryDir.State.SUPERVISED, entry("mono").orElseThrow().state());
    assertTrue(sawEvent("mono", DiscoveryDir.DISCOVERED));
    assertEquals(java.util.Set.of("ctl", "nodeplugin", "mono"), discovery.candidateIds());
  }

  @Test
  void socketAppearingLater_isSupervised_andDisappearing_isStopped() throws Exception {
    startReal();
    assertTrue(discovery.entries().isEmpty());
    MockCsiPlugin p = plugin("late.sock", MockMode.NODE);
    await().atMost(WAIT).until(() -> supervised.containsKey("late"));
    p.close();
    Files.deleteIfExists(dir.resolve("late.sock"));
    await().atMost(WAIT).until(() -> supervised.get("late").stopped != null);
    assertTrue(supervised.get("late").stopped.contains("removed"), supervised.get("late").stopped);
    assertTrue(entry("late").isEmpty());
    assertTrue(sawEvent("late", DiscoveryDir.REMOVED));
  }

  @Test
  void replacedSocket_isStoppedAndSupervisedAgain() throws Exception {
    startReal();
    MockCsiPlugin first = plugin("r.sock", MockMode.CONTROLLER);
    await().atMost(WAIT).until(() -> supervised.containsKey("r"));
    Supervised before = supervised.get("r");
    first.close();
    Files.deleteIfExists(dir.resolve("r.sock"));
    plugin("r.sock", MockMode.MONOLITH);
    await().atMost(WAIT).until(() -> supervised.get("r") != before
        && supervised.get("r").kind == PluginKind.MONOLITH);
    assertTrue(before.stopped != null, "the old one was stopped first");
  }

  @Test
  void dotFilesAndNonSockets_areSkipped() throws Exception {
    plugin(".hidden.sock", MockMode.NODE);
    Files.writeString(dir.resolve("notes.txt"), "not a socket");
    Files.createDirectory(dir.resolve("sub"));
    plugin("real.sock", MockMode.NODE);
    startReal();
    await().atMost(WAIT).until(() -> supervised.containsKey("real"));
    assertEquals(java.util.Set.of("real"), supervised.keySet());
    assertEquals(1, discovery.entries().size(), discovery.entries().toString());
  }

  @Test
  void badNames_areReportedAndIgnored() throws Exception {
    plugin("bad name.sock", MockMode.NODE);
    plugin("x+y", MockMode.NODE);
    plugin(".sock.sock", MockMode.NODE); // a dot-file: skipped, not reported
    startReal();
    await().atMost(WAIT).until(() -> discovery.entries().size() == 2);
    DiscoveryDir.Entry bad = entry("bad name").orElseThrow();
    assertEquals(DiscoveryDir.State.IGNORED, bad.state());
    assertTrue(bad.message().contains("plugin id must be 1 to 128 of A-Z a-z 0-9 . _ -, got"
        + " 'bad name' (from the file name bad name.sock)"), bad.message());
    assertEquals(DiscoveryDir.State.IGNORED, entry("x+y").orElseThrow().state());
    assertTrue(sawEvent("x+y", DiscoveryDir.IGNORED));
    assertTrue(supervised.isEmpty());
    assertTrue(discovery.candidateIds().isEmpty());
  }

  @Test
  void idOfAConfiguredPlugin_isIgnored() throws Exception {
    plugin("ebs.sock", MockMode.NODE);
    discovery = builder(new CsiSocketClassifier(Duration.ofSeconds(2), closer))
        .reserved("ebs"::equals).build();
    discovery.start();
    await().atMost(WAIT).until(() -> entry("ebs").isPresent());
    assertEquals(DiscoveryDir.State.IGNORED, entry("ebs").orElseThrow().state());
    assertTrue(entry("ebs").orElseThrow().message().contains("already used by a plugin in the"
        + " config"));
    assertTrue(supervised.isEmpty());
  }

  @Test
  void twoSocketsOneId_secondIgnoredUntilTheFirstGoes() throws Exception {
    MockCsiPlugin a = plugin("dup", MockMode.NODE);
    startReal();
    await().atMost(WAIT).until(() -> supervised.containsKey("dup"));
    plugin("dup.sock", MockMode.CONTROLLER);
    await().atMost(WAIT).until(() -> discovery.entries().size() == 2);
    DiscoveryDir.Entry second = discovery.entries().stream()
        .filter(e -> e.socket().getFileName().toString().equals("dup.sock")).findFirst()
        .orElseThrow();
    assertEquals(DiscoveryDir.State.IGNORED, second.state());
    assertTrue(second.message().contains("already used by the socket " + dir.resolve("dup")),
        second.message());
    a.close();
    Files.deleteIfExists(dir.resolve("dup"));
    await().atMost(WAIT).until(() -> supervised.get("dup").kind == PluginKind.CONTROLLER);
  }

  @Test
  void staleSocket_isReportedAndRetriedWithBackoff_neverSupervised() throws Exception {
    staleSocket("stale.sock");
    startReal();
    await().atMost(WAIT).until(() -> entry("stale").map(e -> e.state()
        == DiscoveryDir.State.RETRYING).orElse(false));
    DiscoveryDir.Entry e = entry("stale").orElseThrow();
    assertTrue(e.message().startsWith("stale socket: nothing is accepting connections on it"),
        e.message());
    assertTrue(sawEvent("stale", DiscoveryDir.NOT_ANSWERING));
    assertTrue(discovery.candidateIds().contains("stale"), "it may still come up");
    assertTrue(supervised.isEmpty());
    int reported;
    synchronized (events) {
      reported = (int) events.stream().filter(x -> x.startsWith("stale|")).count();
    }
    assertEquals(1, reported, "retries are not reported again: " + events);
  }

  @Test
  void notYetAnswering_isRetriedUntilItAnswers() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    staleSocket("flaky.sock");
    start(socket -> calls.incrementAndGet() < 4
        ? CompletableFuture.failedFuture(new IllegalStateException("not yet"))
        : CompletableFuture.completedFuture(PluginKind.NODE));
    await().atMost(WAIT).until(() -> supervised.containsKey("flaky"));
    assertEquals(4, calls.get());
    assertEquals("", entry("flaky").orElseThrow().message());
  }

  @Test
  void notACsiServer_isRetried_notSupervised() throws Exception {
    start(socket -> CompletableFuture.failedFuture(new IllegalStateException(
        "neither a controller nor a node plugin")));
    staleSocket("odd.sock");
    await().atMost(WAIT).until(() -> entry("odd").map(e -> e.state()
        == DiscoveryDir.State.RETRYING).orElse(false));
    assertTrue(entry("odd").orElseThrow().message().contains("neither a controller nor a node"));
    assertTrue(supervised.isEmpty());
  }

  @Test
  void socketRemovedWhileRetrying_isForgotten() throws Exception {
    Path stale = staleSocket("gone.sock");
    startReal();
    await().atMost(WAIT).until(() -> entry("gone").isPresent());
    Files.delete(stale);
    await().atMost(WAIT).until(() -> entry("gone").isEmpty());
    assertTrue(supervised.isEmpty());
  }

  @Test
  void close_stopsOrDetachesEverySupervisedPlugin() throws Exception {
    plugin("a.sock", MockMode.NODE);
    startReal();
    await().atMost(WAIT).until(() -> supervised.containsKey("a"));
    discovery.close(true);
    assertTrue(supervised.get("a").detached != null);
    assertEquals(null, supervised.get("a").stopped);
    discovery.close(false);
    assertEquals(null, supervised.get("a").stopped, "close is idempotent");
  }

  @Test
  void startTwice_isRejected() throws Exception {
    startReal();
    assertThrows(IllegalStateException.class, discovery::start);
    assertFalse(discovery.dir().toString().isEmpty());
  }
}
