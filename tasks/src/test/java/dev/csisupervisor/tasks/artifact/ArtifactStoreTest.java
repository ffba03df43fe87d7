package dev.csisupervisor.tasks.artifact;

import static dev.csisupervisor.testing.TestArchives.dir;
import static dev.csisupervisor.testing.TestArchives.fifo;
import static dev.csisupervisor.testing.TestArchives.file;
import static dev.csisupervisor.testing.TestArchives.hardlink;
import static dev.csisupervisor.testing.TestArchives.sha256;
import static dev.csisupervisor.testing.TestArchives.symlink;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.testing.ArtifactServer;
import dev.csisupervisor.testing.TestArchives;

import dev.csisupervisor.tasks.artifact.ArtifactException.Reason;
import dev.csisupervisor.tasks.artifact.ArtifactSpec.Unpack;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Artifacts served by a loopback HTTP server started here, and from file: URLs. */
class ArtifactStoreTest {
  private static final String SCRIPT = "#!/bin/sh\necho plugin\n";

  @TempDir Path tmp;
  private Path root;
  private Path marker;
  private ArtifactServer server;
  private ScheduledExecutorService scheduler;
  private ExecutorService io;
  private ArtifactStore store;

  @BeforeEach
  void setUp() throws IOException {
    root = tmp.resolve("data/plugins");
    marker = tmp.resolve("marker");
    server = new ArtifactServer();
    scheduler = Executors.newSingleThreadScheduledExecutor();
    io = Executors.newFixedThreadPool(2);
    store = ArtifactStore.builder(root).scheduler(scheduler).io(io)
        .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(40)).random(new Random(1))
        .build();
  }

  @AfterEach
  void tearDown() {
    server.close();
    scheduler.shutdownNow();
    io.shutdownNow();
  }

  private static ArtifactSpec spec(URI url, byte[] content, Unpack unpack, String entry) {
    return new ArtifactSpec(url, sha256(content), unpack, entry, Duration.ofSeconds(10), 3);
  }

  /** Serves {@code body} at {@code path}: the spec of that artifact. */
  private ArtifactSpec served(String path, byte[] body, Unpack unpack, String entry) {
    server.serve(path, body);
    return spec(server.url(path), body, unpack, entry);
  }

  private Revision fetch(ArtifactSpec spec) throws Exception {
    return store.fetch("p1", spec).get(30, TimeUnit.SECONDS);
  }

  private ArtifactException fails(ArtifactSpec spec) {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> store.fetch("p1", spec).get(30, TimeUnit.SECONDS));
    Throwable t = e.getCause();
    while (!(t instanceof ArtifactException) && t.getCause() != null) {
      t = t.getCause();
    }
    assertTrue(t instanceof ArtifactException, "expected an ArtifactException: " + e);
    return (ArtifactException) t;
  }

  /** Nothing but installed revision directories (and an empty downloads dir) under the root. */
  private List<String> leftovers() throws IOException {
    if (!Files.exists(root)) {
      return List.of();
    }
    try (Stream<Path> s = Files.walk(root)) {
      return s.filter(p -> !p.equals(root) && !p.equals(root.resolve(".downloads")))
          .map(p -> root.relativize(p).toString()).sorted().toList();
    }
  }

  /** A script that would create the marker file if it were ever run. */
  private String touching() {
    return "#!/bin/sh\ntouch " + marker + "\n";
  }

  // ---- good artifacts ------------------------------------------------------------------------

  @Test
  void singleFile_isVerifiedInstalledExecutable_andTheDownloadRemoved() throws Exception {
    byte[] body = SCRIPT.getBytes(StandardCharsets.UTF_8);
    ArtifactSpec spec = served("/dl/my-plugin", body, Unpack.NONE, "my-plugin");
    Revision r = fetch(spec);
    assertEquals(root.resolve("p1_" + sha256(body).substring(0, 12)), r.dir());
    assertEquals(r.dir().resolve("my-plugin"), r.executable());
    assertTrue(Files.isExecutable(r.executable()));
    assertEquals("rwx------", PosixFilePermissions.toString(
        Files.getPosixFilePermissions(r.executable())));
    assertEquals(SCRIPT, Files.readString(r.executable()));
    assertEquals(List.of(r.name(), r.name() + "/my-plugin"), leftovers(),
        "the downloaded file is gone, nothing else is left");
    assertEquals(r, store.installed("p1", spec).orElseThrow());
  }

  @Test
  void installedRevision_isNotDownloadedAgain() throws Exception {
    byte[] body = SCRIPT.getBytes(StandardCharsets.UTF_8);
    ArtifactSpec spec = served("/p", body, Unpack.NONE, "p");
    Revision first = fetch(spec);
    Revision again = fetch(spec);
    assertEquals(first, again);
    assertEquals(1, server.requests("/p"));
  }

  @Test
  void concurrentFetchesOfOneRevision_shareOneDownload() throws Exception {
    byte[] body = SCRIPT.getBytes(StandardCharsets.UTF_8);
    ArtifactSpec spec = served("/p", body, Unpack.NONE, "p");
    CompletableFuture<Revision> a = store.fetch("p1", spec);
    CompletableFuture<Revision> b = store.fetch("p1", spec);
    assertEquals(a.get(30, TimeUnit.SECONDS), b.get(30, TimeUnit.SECONDS));
    assertEquals(1, server.requests("/p"));
  }

  @Test
  void tarGz_isUnpackedWithModesDirsAndInsideLinks() throws Exception {
    byte[] tgz = TestArchives.tarGz(List.of(
        dir("./"),
        dir("bin"),
        file("bin/plugin", SCRIPT, 0755),
        file("lib/data.txt", "data", 0644),
        symlink("bin/current", "plugin"),
        symlink("lib/up", "../bin"),
        hardlink("bin/plugin-copy", "bin/plugin"),
        file("bin/setuid", "x", 04777)));
    Revision r = fetch(served("/a.tgz", tgz, Unpack.TAR_GZ, "bin/current"));
    assertEquals(r.dir().resolve("bin/current"), r.executable());
    assertTrue(Files.isExecutable(r.executable()));
    assertEquals("data", Files.readString(r.dir().resolve("lib/data.txt")));
    assertEquals("rw-r--r--", PosixFilePermissions.toString(
        Files.getPosixFilePermissions(r.dir().resolve("lib/data.txt"))));
    assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(
        r.dir().resolve("bin/setuid"))), "no set-id or world-writable bits");
    assertTrue(Files.isSymbolicLink(r.dir().resolve("lib/up")));
    assertEquals(SCRIPT, Files.readString(r.dir().resolve("bin/plugin-copy")));
    assertFalse(leftovers().stream().anyMatch(n -> n.contains(".tmp-") || n.endsWith(".part")),
        leftovers().toString());
  }

  @Test
  void zip_isUnpackedWithUnixModes() throws Exception {
    byte[] zip = TestArchives.zip(List.of(
        dir("plugin"),
        file("plugin/run", SCRIPT, 0755),
        file("plugin/README", "hi", 0644),
        symlink("plugin/latest", "run")));
    Revision r = fetch(served("/a.zip", zip, Unpack.ZIP, "plugin/latest"));
    assertTrue(Files.isExecutable(r.executable()));
    assertFalse(Files.isExecutable(r.dir().resolve("plugin/README")));
  }

  @Test
  void fileUrl_isCopiedAndVerified() throws Exception {
    byte[] body = SCRIPT.getBytes(StandardCharsets.UTF_8);
    Path src = tmp.resolve("src/plugin.sh");
    Files.createDirectories(src.getParent());
    Files.write(src, body);
    Revision r = fetch(spec(src.toUri(), body, Unpack.NONE, "plugin.sh"));
    assertEquals(SCRIPT, Files.readString(r.executable()));
    assertTrue(Files.exists(src), "the source file is left alone");
  }

  // ---- bad downloads -----------------------------------------------------------------------

  @Test
  void wrongChecksum_isNeverInstalledOrRun() throws Exception {
    byte[] body = touching().getBytes(StandardCharsets.UTF_8);
    server.serve("/evil", body);
    byte[] other = "something else".getBytes(StandardCharsets.UTF_8);
    ArtifactSpec spec = spec(server.url("/evil"), other, Unpack.NONE, "evil");
    ArtifactException e = fails(spec);
    assertEquals(Reason.CHECKSUM, e.reason());
    assertTrue(e.getMessage().contains("expected sha256 " + sha256(other) + ", got "
        + sha256(body)), e.getMessage());
    assertEquals(1, server.requests("/evil"), "a wrong checksum is not retried");
    assertEquals(List.of(), leftovers(), "nothing installed, the download deleted");
    assertTrue(store.installed("p1", spec).isEmpty());
    assertFalse(Files.exists(marker), "never run");
  }

  @Test
  void wrongChecksumArchive_isNeverUnpacked() throws Exception {
    byte[] tgz = TestArchives.tarGz(List.of(file("bin/plugin", touching(), 0755)));
    server.serve("/a.tgz", tgz);
    ArtifactSpec spec = new ArtifactSpec(server.url("/a.tgz"), "0".repeat(64), Unpack.TAR_GZ,
        "bin/plugin", Duration.ofSeconds(10), 3);
    assertEquals(Reason.CHECKSUM, fails(spec).reason());
    assertEquals(List.of(), leftovers());
    assertFalse(Files.exists(marker));
  }

  @Test
  void httpNotFound_failsAtOnce() throws Exception {
    ArtifactSpec spec = spec(server.url("/missing"), new byte[1], Unpack.NONE, "x");
    ArtifactException e = fails(spec);
    assertEquals(Reason.HTTP, e.reason());
    assertTrue(e.getMessage().contains("HTTP 404 from " + server.url("/missing")),
        e.getMessage());
    assertEquals(1, server.requests("/missing"), "a client error is not retried");
  }

  @Test
  void serverError_isRetriedWithBackoff_thenSucceeds() throws Exception {
    byte[] body = SCRIPT.getBytes(StandardCharsets.UTF_8);
    server.serve("/flaky", body).fail("/flaky", 503, 2);
    Revision r = fetch(spec(server.url("/flaky"), body, Unpack.NONE, "flaky"));
    assertTrue(Files.isExecutable(r.executable()));
    assertEquals(3, server.requests("/flaky"));
  }

  @Test
  void serverError_afterAllAttempts_failsNamingThem() throws Exception {
    server.serve("/down", new byte[1]).fail("/down", 500, 99);
    ArtifactSpec spec = new ArtifactSpec(server.url("/down"), sha256(new byte[1]), Unpack.NONE,
        "down", Duration.ofSeconds(10), 2);
    ArtifactException e = fails(spec);
    assertEquals(Reason.HTTP, e.reason());
    assertTrue(e.getMessage().contains("HTTP 500") && e.getMessage().contains("after 2 attempts"),
        e.getMessage());
    assertEquals(2, server.requests("/down"));
    assertEquals(List.of(), leftovers());
  }

  @Test
  void hangingServer_timesOut() throws Exception {
    server.hang("/slow");
    ArtifactSpec spec = new ArtifactSpec(server.url("/slow"), "a".repeat(64), Unpack.NONE,
        "slow", Duration.ofMillis(300), 2);
    long start = System.nanoTime();
    ArtifactException e = fails(spec);
    assertEquals(Reason.TIMEOUT, e.reason());
    assertTrue(e.getMessage().contains("300 ms"), e.getMessage());
    assertEquals(2, server.requests("/slow"), "a timeout is retried");
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10));
  }

  @Test
  void connectionRefused_isAnIoError() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    ArtifactSpec spec = new ArtifactSpec(URI.create("http://127.0.0.1:" + port + "/x"),
        "a".repeat(64), Unpack.NONE, "x", Duration.ofSeconds(5), 2);
    ArtifactException e = fails(spec);
    assertEquals(Reason.IO, e.reason());
    assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
  }

  @Test
  void missingFileUrl_failsNamingIt() {
    ArtifactSpec spec = new ArtifactSpec(tmp.resolve("nope").toUri(), "a".repeat(64),
        Unpack.NONE, "x", Duration.ofSeconds(5), 3);
    ArtifactException e = fails(spec);
    assertEquals(Reason.IO, e.reason());
    assertTrue(e.getMessage().contains("no such file"), e.getMessage());
  }

  // ---- bad archives ------------------------------------------------------------------------

  static Stream<Arguments> hostileTars() {
    return Stream.of(
        Arguments.of("path traversal", List.of(file("../evil", "x", 0755)), "contains '..'"),
        Arguments.of("deep traversal", List.of(file("bin/../../evil", "x", 0755)),
            "contains '..'"),
        Arguments.of("absolute path", List.of(file("/tmp/evil", "x", 0755)),
            "is an absolute path"),
        Arguments.of("symlink escaping", List.of(symlink("bin", "../.."),
            file("bin/evil", "x", 0755)), "outside the target directory"),
        Arguments.of("symlink absolute", List.of(symlink("etc", "/etc")),
            "absolute path /etc"),
        Arguments.of("hard link escaping", List.of(hardlink("x", "../../outside")),
            "outside the target directory"),
        Arguments.of("hard link absolute", List.of(hardlink("x", "/etc/passwd")),
            "absolute path"),
        Arguments.of("write over a link", List.of(symlink("a", "b"), file("a", "x", 0644)),
            "appears twice"),
        Arguments.of("fifo", List.of(fifo("pipe")), "FIFO"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hostileTars")
  void hostileTar_isRefused_nothingWrittenOutside(String what, List<TestArchives.E> entries,
      String expected) throws Exception {
    Path outside = tmp.resolve("outside");
    Files.writeString(outside, "untouched");
    byte[] tgz = TestArchives.tarGz(entries);
    ArtifactException e = fails(served("/h.tgz", tgz, Unpack.TAR_GZ, "bin/plugin"));
    assertEquals(Reason.ARCHIVE, e.reason(), e.getMessage());
    assertTrue(e.getMessage().contains(expected), e.getMessage());
    assertEquals(List.of(), leftovers(), "the staging directory is removed");
    assertEquals("untouched", Files.readString(outside));
    try (Stream<Path> s = Files.list(tmp)) {
      assertEquals(Set.of("data", "outside"), Set.copyOf(s.map(p -> p.getFileName().toString())
          .toList()), "nothing written next to the data dir");
    }
    assertFalse(Files.exists(Path.of("/tmp/evil")));
  }

  @Test
  void hostileZip_traversalIsRefused() throws Exception {
    byte[] zip = TestArchives.zip(List.of(file("../evil", "x", 0755)));
    ArtifactException e = fails(served("/h.zip", zip, Unpack.ZIP, "run"));
    assertEquals(Reason.ARCHIVE, e.reason());
    assertTrue(e.getMessage().contains("contains '..'"), e.getMessage());
    assertFalse(Files.exists(tmp.resolve("data/evil")));
  }

  @Test
  void hostileZip_symlinkEscapeIsRefused() throws Exception {
    byte[] zip = TestArchives.zip(List.of(symlink("run", "../../../bin/sh")));
    ArtifactException e = fails(served("/h.zip", zip, Unpack.ZIP, "run"));
    assertEquals(Reason.ARCHIVE, e.reason());
    assertTrue(e.getMessage().contains("outside the target directory"), e.getMessage());
  }

  @Test
  void truncatedArchive_isRefusedAsCorrupt() throws Exception {
    // Random content so gzip cannot make it tiny; then cut it in the middle.
    byte[] random = new byte[200_000];
    new Random(7).nextBytes(random);
    byte[] whole = TestArchives.tarGz(List.of(new TestArchives.FileE("bin/plugin", random, 0755)));
    byte[] cut = Arrays.copyOf(whole, whole.length / 2);
    ArtifactException e = fails(served("/cut.tgz", cut, Unpack.TAR_GZ, "bin/plugin"));
    assertEquals(Reason.ARCHIVE, e.reason());
    assertTrue(e.getMessage().contains("truncated or corrupt"), e.getMessage());
    assertEquals(List.of(), leftovers());
  }

  @Test
  void notAnArchive_isRefusedAsCorrupt() throws Exception {
    byte[] junk = "this is not gzip".getBytes(StandardCharsets.UTF_8);
    server.serve("/junk.zip", junk).serve("/junk.tgz", junk);
    assertEquals(Reason.ARCHIVE,
        fails(spec(server.url("/junk.zip"), junk, Unpack.ZIP, "x")).reason());
    assertEquals(Reason.ARCHIVE,
        fails(spec(server.url("/junk.tgz"), junk, Unpack.TAR_GZ, "x")).reason());
  }

  @Test
  void missingEntry_failsListingWhatIsThere() throws Exception {
    byte[] tgz = TestArchives.tarGz(List.of(file("bin/other", SCRIPT, 0755)));
    ArtifactException e = fails(served("/a.tgz", tgz, Unpack.TAR_GZ, "bin/plugin"));
    assertEquals(Reason.ENTRY_MISSING, e.reason());
    assertTrue(e.getMessage().contains("entry bin/plugin is not in")
        && e.getMessage().contains("bin/other"), e.getMessage());
    assertEquals(List.of(), leftovers());
  }

  @Test
  void entryNotExecutable_fails() throws Exception {
    byte[] tgz = TestArchives.tarGz(List.of(file("bin/plugin", SCRIPT, 0644), dir("bin/d")));
    ArtifactException e = fails(served("/a.tgz", tgz, Unpack.TAR_GZ, "bin/plugin"));
    assertEquals(Reason.ENTRY_NOT_EXECUTABLE, e.reason());
    assertTrue(e.getMessage().contains("not executable (mode rw-r--r--)"), e.getMessage());
    ArtifactException d = fails(spec(server.url("/a.tgz"), tgz, Unpack.TAR_GZ, "bin/d"));
    assertEquals(Reason.ENTRY_NOT_EXECUTABLE, d.reason());
    assertTrue(d.getMessage().contains("is a directory"), d.getMessage());
  }

  @Test
  void oversizedArchive_isRefused() throws Exception {
    ArtifactStore small = ArtifactStore.builder(root).scheduler(scheduler).io(io)
        .maxUnpackedBytes(1000).build();
    byte[] tgz = TestArchives.tarGz(List.of(file("bin/plugin", "x".repeat(5000), 0755)));
    server.serve("/big.tgz", tgz);
    ExecutionException e = assertThrows(ExecutionException.class, () -> small.fetch("p1",
        spec(server.url("/big.tgz"), tgz, Unpack.TAR_GZ, "bin/plugin")).get(30,
        TimeUnit.SECONDS));
    assertTrue(e.getMessage().contains("more than 1000 bytes"), e.getMessage());
    assertEquals(List.of(), leftovers());
  }

  // ---- revisions -----------------------------------------------------------------------------

  @Test
  void prune_keepsOnlyTheGivenRevision_ofThatPlugin() throws Exception {
    byte[] v1 = "#!/bin/sh\necho 1\n".getBytes(StandardCharsets.UTF_8);
    byte[] v2 = "#!/bin/sh\necho 2\n".getBytes(StandardCharsets.UTF_8);
    server.serve("/v1", v1).serve("/v2", v2);
    Revision r1 = fetch(spec(server.url("/v1"), v1, Unpack.NONE, "p"));
    Revision r2 = fetch(spec(server.url("/v2"), v2, Unpack.NONE, "p"));
    Revision other = store.fetch("p1_x", spec(server.url("/v1"), v1, Unpack.NONE, "p"))
        .get(30, TimeUnit.SECONDS);
    assertTrue(Files.isDirectory(r1.dir()) && Files.isDirectory(r2.dir()),
        "both kept until told");
    assertEquals(List.of(r1.dir()), store.prune("p1", r2));
    assertFalse(Files.exists(r1.dir()));
    assertTrue(Files.isDirectory(r2.dir()));
    assertTrue(Files.isDirectory(other.dir()), "another plugin's revisions are not touched");
  }

  @Test
  void removeAllBut_dropsUnconfiguredPluginsAndLeftovers() throws Exception {
    byte[] v1 = SCRIPT.getBytes(StandardCharsets.UTF_8);
    Revision keep = fetch(served("/v1", v1, Unpack.NONE, "p"));
    Revision gone = store.fetch("old", spec(server.url("/v1"), v1, Unpack.NONE, "p"))
        .get(30, TimeUnit.SECONDS);
    Path staging = Files.createDirectories(root.resolve(".p1_0123456789ab.tmp-7/bin"));
    Path part = Files.writeString(root.resolve(".downloads/p1_0123456789ab-3.part.1"), "x");
    store.removeAllBut(Set.of("p1"));
    assertTrue(Files.isDirectory(keep.dir()));
    assertFalse(Files.exists(gone.dir()));
    assertFalse(Files.exists(staging.getParent()));
    assertFalse(Files.exists(part));
  }

  @Test
  void deleteTree_removesLinksNotTheirTargets() throws Exception {
    Path outside = Files.writeString(tmp.resolve("keep-me"), "x");
    Path d = Files.createDirectories(tmp.resolve("tree/sub"));
    Files.createSymbolicLink(d.resolve("link"), outside);
    Files.createSymbolicLink(tmp.resolve("tree/dirlink"), tmp);
    ArtifactStore.deleteTree(tmp.resolve("tree"));
    assertFalse(Files.exists(tmp.resolve("tree"), LinkOption.NOFOLLOW_LINKS));
    assertTrue(Files.exists(outside));
  }
}
