package dev.csisupervisor.tasks.artifact;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.tasks.artifact.ArtifactException.Reason;
import java.io.IOException;
import java.net.http.HttpClient;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's plugin artifacts: {@code <data_dir>/plugins/<id>_<sha256 prefix>/}, one directory
 * per revision.
 *
 * <p>{@link #fetch} downloads an artifact (see {@link ArtifactSpec}), verifies its SHA-256 before
 * anything else touches it, installs it into a hidden staging directory and renames that into
 * place, so a revision directory is either complete or absent; the downloaded file is deleted in
 * every case. A revision that is already installed is not downloaded again. Old revisions stay
 * until {@link #prune} is called (the agent does once the new revision is healthy).
 *
 * <p>Thread-safe. Downloads and unpacking run on the {@code io} executor, retry delays on the
 * scheduler; futures complete on {@code io}. Concurrent fetches of one revision share one
 * download.
 */
public final class ArtifactStore {
  private static final Logger log = LoggerFactory.getLogger(ArtifactStore.class);
  private static final String DOWNLOADS = ".downloads";
  private static final Pattern REVISION_DIR =
      Pattern.compile("(.+)_([0-9a-f]{" + ArtifactSpec.REVISION_DIGITS + "})");

  private final Path root;
  private final Executor io;
  private final Downloader downloader;
  private final long maxUnpackedBytes;
  private final int maxEntries;
  private final Map<String, CompletableFuture<Revision>> inFlight = new ConcurrentHashMap<>();
  private final AtomicLong sequence = new AtomicLong();

  private ArtifactStore(Builder b) {
    this.root = requireNonNull(b.root, "root").toAbsolutePath().normalize();
    this.io = requireNonNull(b.io, "io");
    HttpClient given = b.client;
    Duration connectTimeout = b.connectTimeout;
    Supplier<HttpClient> client = () -> given != null ? given : HttpClient.newBuilder()
        .connectTimeout(connectTimeout)
        .followRedirects(HttpClient.Redirect.NORMAL)
        .build();
    this.downloader = new Downloader(client, requireNonNull(b.scheduler, "scheduler"), io,
        b.initialBackoff, b.maxBackoff, b.random);
    this.maxUnpackedBytes = b.maxUnpackedBytes;
    this.maxEntries = b.maxEntries;
  }

  /** A store rooted at {@code root} (created on first use, mode 0700). */
  public static Builder builder(Path root) {
    return new Builder(root);
  }

  public Path root() {
    return root;
  }

  /** {@code <root>/<id>_<sha256 prefix>}: where a revision of this artifact is installed. */
  public Path revisionDir(String pluginId, ArtifactSpec spec) {
    return root.resolve(pluginId + "_" + spec.revision());
  }

  /** The revision of {@code spec}, if it is installed and its entry is there. */
  public Optional<Revision> installed(String pluginId, ArtifactSpec spec) {
    Path dir = revisionDir(pluginId, spec);
    Path exe = dir.resolve(spec.entry()).normalize();
    if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS) && Files.isRegularFile(exe)
        && Files.isExecutable(exe)) {
      return Optional.of(new Revision(pluginId, spec.sha256(), dir, exe));
    }
    return Optional.empty();
  }

  /**
   * The installed revision of {@code spec}: at once if installed, else after downloading,
   * verifying and unpacking it.
   *
   * @return a future failed with {@link ArtifactException} (possibly wrapped in a
   *     {@link CompletionException}) when the artifact cannot be made ready
   */
  public CompletableFuture<Revision> fetch(String pluginId, ArtifactSpec spec) {
    requireNonNull(pluginId, "pluginId");
    requireNonNull(spec, "spec");
    Optional<Revision> have = installed(pluginId, spec);
    if (have.isPresent()) {
      return CompletableFuture.completedFuture(have.get());
    }
    String key = revisionDir(pluginId, spec).getFileName() + "|" + spec.entry() + "|"
        + spec.url();
    CompletableFuture<Revision> f = inFlight.computeIfAbsent(key, k -> start(pluginId, spec));
    f.whenComplete((r, e) -> inFlight.remove(key, f));
    return f;
  }

  private CompletableFuture<Revision> start(String pluginId, ArtifactSpec spec) {
    Path target = revisionDir(pluginId, spec);
    long n = sequence.incrementAndGet();
    Path downloads = root.resolve(DOWNLOADS);
    try {
      createPrivateDir(root);
      createPrivateDir(downloads);
    } catch (IOException e) {
      return CompletableFuture.failedFuture(new ArtifactException(Reason.IO,
          "cannot create " + downloads + ": " + e, false, e));
    }
    log.info("plugin={}: downloading {} (sha256 {})", pluginId, spec.displayUrl(),
        spec.revision());
    Path part = downloads.resolve(target.getFileName() + "-" + n + ".part");
    return downloader.download(pluginId, spec, part)
        .thenApplyAsync(file -> {
          try {
            return install(pluginId, spec, file, target, n);
          } catch (ArtifactException e) {
            throw new CompletionException(e);
          } finally {
            Downloader.deleteQuietly(file);
          }
        }, io);
  }

  private Revision install(String pluginId, ArtifactSpec spec, Path file, Path target, long n)
      throws ArtifactException {
    Path staging = root.resolve("." + target.getFileName() + ".tmp-" + n);
    try {
      try {
        Files.createDirectory(staging, PosixFilePermissions.asFileAttribute(
            PosixFilePermissions.fromString("rwx------")));
      } catch (IOException e) {
        throw new ArtifactException(Reason.IO, "cannot create " + staging + ": " + e, false, e);
      }
      Path exe = new Installer(staging, spec, maxUnpackedBytes, maxEntries).install(file);
      try {
        Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
      } catch (FileAlreadyExistsException | AtomicMoveNotSupportedException e) {
        // Installed meanwhile by an earlier run: the same checksum, so the same content.
        if (installed(pluginId, spec).isEmpty()) {
          throw new ArtifactException(Reason.IO, "cannot install into " + target
              + ": it exists and is incomplete; remove it", false, e);
        }
      } catch (IOException e) {
        if (Files.isDirectory(target) && installed(pluginId, spec).isPresent()) {
          log.debug("plugin={}: {} was installed meanwhile", pluginId, target);
        } else {
          throw new ArtifactException(Reason.IO, "cannot move " + staging + " to " + target
              + ": " + e, false, e);
        }
      }
      Path installedExe = target.resolve(staging.relativize(exe));
      log.info("plugin={}: installed revision {} from {}", pluginId, target.getFileName(),
          spec.displayUrl());
      return new Revision(pluginId, spec.sha256(), target, installedExe);
    } finally {
      deleteTree(staging);
    }
  }

  /**
   * Removes every revision of {@code pluginId} except {@code keep}.
   *
   * @return the removed revision directories
   */
  public List<Path> prune(String pluginId, Revision keep) {
    requireNonNull(pluginId, "pluginId");
    List<Path> removed = new ArrayList<>();
    for (Path dir : revisionDirs()) {
      Matcher m = REVISION_DIR.matcher(dir.getFileName().toString());
      if (m.matches() && m.group(1).equals(pluginId)
          && (keep == null || !dir.equals(keep.dir()))) {
        deleteTree(dir);
        removed.add(dir);
      }
    }
    if (!removed.isEmpty()) {
      log.info("plugin={}: removed {} old revision(s): {}", pluginId, removed.size(), removed);
    }
    return removed;
  }

  /**
   * Removes the revisions of plugins not in {@code pluginIds}, unfinished staging directories
   * and leftover downloads (of a run that was killed mid-way).
   *
   * @return the removed paths
   */
  public List<Path> removeAllBut(Set<String> pluginIds) {
    List<Path> removed = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      return removed;
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
      for (Path p : ds) {
        String name = p.getFileName().toString();
        Matcher m = REVISION_DIR.matcher(name);
        if (name.equals(DOWNLOADS)) {
          try (DirectoryStream<Path> parts = Files.newDirectoryStream(p)) {
            for (Path part : parts) {
              deleteTree(part);
              removed.add(part);
            }
          }
        } else if (name.startsWith(".") && name.contains(".tmp-")) {
          deleteTree(p);
          removed.add(p);
        } else if (m.matches() && !pluginIds.contains(m.group(1))) {
          deleteTree(p);
          removed.add(p);
        }
      }
    } catch (IOException e) {
      log.warn("cannot clean {}: {}", root, e.toString());
    }
    if (!removed.isEmpty()) {
      log.info("removed {} artifact revision(s) and leftovers no longer needed: {}",
          removed.size(), removed);
    }
    return removed;
  }

  private List<Path> revisionDirs() {
    List<Path> out = new ArrayList<>();
    if (!Files.isDirectory(root)) {
      return out;
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(root)) {
      for (Path p : ds) {
        if (REVISION_DIR.matcher(p.getFileName().toString()).matches()
            && Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
          out.add(p);
        }
      }
    } catch (IOException e) {
      log.warn("cannot list {}: {}", root, e.toString());
    }
    return out;
  }

  private static void createPrivateDir(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      Files.createDirectories(dir);
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
    }
  }

  /** Deletes a tree without following links (a link inside is removed, not its target). */
  static void deleteTree(Path dir) {
    if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try {
      Files.walkFileTree(dir, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs)
            throws IOException {
          Files.delete(file);
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
          Files.delete(d);
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException e) {
      log.warn("cannot remove {}: {}", dir, e.toString());
    }
  }

  /** Builder; the scheduler and the io executor are required. */
  public static final class Builder {
    private final Path root;
    private ScheduledExecutorService scheduler;
    private Executor io;
    private HttpClient client;
    private Duration connectTimeout = Duration.ofSeconds(10);
    private Duration initialBackoff = Duration.ofSeconds(1);
    private Duration maxBackoff = Duration.ofSeconds(30);
    private Random random = new Random();
    private long maxUnpackedBytes = Installer.DEFAULT_MAX_BYTES;
    private int maxEntries = Installer.DEFAULT_MAX_ENTRIES;

    private Builder(Path root) {
      this.root = root;
    }

    /** Where retry delays are scheduled. */
    public Builder scheduler(ScheduledExecutorService v) { this.scheduler = v; return this; }
    /** Where downloads and unpacking run (they block on I/O). */
    public Builder io(Executor v) { this.io = v; return this; }
    public Builder httpClient(HttpClient v) { this.client = v; return this; }
    public Builder connectTimeout(Duration v) { this.connectTimeout = requireNonNull(v); return this; }
    /** The delay before the second attempt; it doubles each attempt up to {@code max}. */
    public Builder retryBackoff(Duration initial, Duration max) {
      this.initialBackoff = requireNonNull(initial);
      this.maxBackoff = requireNonNull(max);
      return this;
    }
    public Builder random(Random v) { this.random = requireNonNull(v); return this; }
    /** An archive unpacking to more than this many bytes is refused. */
    public Builder maxUnpackedBytes(long v) { this.maxUnpackedBytes = v; return this; }

    public ArtifactStore build() {
      return new ArtifactStore(this);
    }
  }
}
