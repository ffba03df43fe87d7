package dev.csisupervisor.tasks.artifact;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.tasks.artifact.ArtifactException.Reason;
import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.common.ExponentialBackoff;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fetches an artifact's file (http, https or file URL) into a part file and verifies its SHA-256.
 * Each attempt has the artifact's timeout from start to end of the transfer; transient failures
 * (connection errors, timeouts, 5xx, 408, 429) are retried up to the artifact's attempts, with
 * exponential backoff scheduled on the scheduler (no thread waits in between). A wrong checksum
 * and a client error (4xx) are final. Attempts run on {@code io}.
 */
final class Downloader {
  private static final Logger log = LoggerFactory.getLogger(Downloader.class);

  private final Supplier<HttpClient> clientFactory;
  private HttpClient client; // made on the first download: its selector thread is not needed before
  private final ScheduledExecutorService scheduler;
  private final Executor io;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final Random random;

  Downloader(Supplier<HttpClient> clientFactory, ScheduledExecutorService scheduler, Executor io,
      Duration initialBackoff, Duration maxBackoff, Random random) {
    this.clientFactory = requireNonNull(clientFactory, "clientFactory");
    this.scheduler = requireNonNull(scheduler, "scheduler");
    this.io = requireNonNull(io, "io");
    this.initialBackoff = requireNonNull(initialBackoff, "initialBackoff");
    this.maxBackoff = requireNonNull(maxBackoff, "maxBackoff");
    this.random = requireNonNull(random, "random");
  }

  /**
   * Downloads {@code spec}'s URL to {@code partPrefix.<attempt>} and checks its SHA-256.
   *
   * @return a future of the verified file (the caller deletes it), or failed with an
   *     {@link ArtifactException}; no file of a failed download is left behind
   */
  CompletableFuture<Path> download(String pluginId, ArtifactSpec spec, Path partPrefix) {
    CompletableFuture<Path> result = new CompletableFuture<>();
    Backoff backoff = ExponentialBackoff.doubling(initialBackoff, maxBackoff, random);
    attempt(pluginId, spec, partPrefix, 1, backoff, result);
    return result;
  }

  private void attempt(String pluginId, ArtifactSpec spec, Path partPrefix, int n,
      Backoff backoff, CompletableFuture<Path> result) {
    try {
      io.execute(() -> attemptNow(pluginId, spec, partPrefix, n, backoff, result));
    } catch (RejectedExecutionException e) {
      result.completeExceptionally(new ArtifactException(Reason.IO, "download of "
          + spec.displayUrl() + " cancelled: the agent is stopping", false, e));
    }
  }

  private void attemptNow(String pluginId, ArtifactSpec spec, Path partPrefix, int n,
      Backoff backoff, CompletableFuture<Path> result) {
    if (result.isDone()) {
      return; // cancelled meanwhile
    }
    Path part = partPrefix.resolveSibling(partPrefix.getFileName() + "." + n);
    try {
      fetchOnce(spec, part);
      verify(spec, part);
      result.complete(part);
    } catch (ArtifactException e) {
      deleteQuietly(part);
      if (!e.retryable() || n >= spec.attempts()) {
        result.completeExceptionally(n > 1 && e.retryable()
            ? new ArtifactException(e.reason(), e.getMessage() + " (after " + n
                + " attempts)", false, e)
            : e);
        return;
      }
      Duration delay = backoff.next();
      log.warn("plugin={}: download attempt {} of {} failed: {}; retrying in {} ms", pluginId,
          n, spec.attempts(), e.getMessage(), delay.toMillis());
      try {
        scheduler.schedule(() -> attempt(pluginId, spec, partPrefix, n + 1, backoff, result),
            delay.toNanos(), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException stopping) {
        result.completeExceptionally(e);
      }
    } catch (RuntimeException e) {
      deleteQuietly(part);
      result.completeExceptionally(new ArtifactException(Reason.IO, "downloading "
          + spec.displayUrl() + " failed: " + e, false, e));
    }
  }

  private void fetchOnce(ArtifactSpec spec, Path part) throws ArtifactException {
    if (spec.url().getScheme().equalsIgnoreCase("file")) {
      copyFile(spec, part);
    } else {
      httpGet(spec, part);
    }
  }

  private static void copyFile(ArtifactSpec spec, Path part) throws ArtifactException {
    Path src = Path.of(spec.url());
    try {
      if (Files.isDirectory(src)) {
        throw new ArtifactException(Reason.IO, spec.displayUrl() + " is a directory", false);
      }
      Files.copy(src, part);
    } catch (NoSuchFileException e) {
      throw new ArtifactException(Reason.IO, spec.displayUrl() + ": no such file", false, e);
    } catch (AccessDeniedException e) {
      throw new ArtifactException(Reason.IO, spec.displayUrl() + ": permission denied", false,
          e);
    } catch (IOException e) {
      throw new ArtifactException(Reason.IO, "cannot copy " + spec.displayUrl() + ": " + e,
          true, e);
    }
  }

  private synchronized HttpClient client() {
    if (client == null) {
      client = requireNonNull(clientFactory.get(), "clientFactory.get()");
    }
    return client;
  }

  private void httpGet(ArtifactSpec spec, Path part) throws ArtifactException {
    HttpRequest request = HttpRequest.newBuilder(spec.url())
        .timeout(spec.timeout())
        .header("User-Agent", "csi-agent")
        .GET()
        .build();
    // Only a 200 body is written to disk; any other status discards its body.
    CompletableFuture<HttpResponse<Path>> call = client().sendAsync(request,
        info -> info.statusCode() == 200
            ? HttpResponse.BodySubscribers.ofFile(part)
            : HttpResponse.BodySubscribers.replacing(null));
    HttpResponse<Path> response;
    try {
      // The request timeout covers the wait for the headers; this covers the whole transfer.
      response = call.get(spec.timeout().toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      call.cancel(true);
      throw new ArtifactException(Reason.TIMEOUT, "downloading " + spec.displayUrl()
          + " took longer than " + spec.timeout().toMillis() + " ms", true, e);
    } catch (InterruptedException e) {
      call.cancel(true);
      Thread.currentThread().interrupt();
      throw new ArtifactException(Reason.IO, "download of " + spec.displayUrl()
          + " interrupted", false, e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      if (cause instanceof HttpTimeoutException) {
        throw new ArtifactException(Reason.TIMEOUT, "no answer from " + spec.displayUrl()
            + " within " + spec.timeout().toMillis() + " ms", true, cause);
      }
      String what = cause instanceof ConnectException ? "cannot connect to " : "downloading ";
      throw new ArtifactException(Reason.IO, what + spec.displayUrl() + " failed: "
          + describe(cause), true, cause);
    }
    int status = response.statusCode();
    if (status != 200) {
      boolean transient5xx = status >= 500 || status == 408 || status == 429;
      throw new ArtifactException(Reason.HTTP, "HTTP " + status + " from " + spec.displayUrl(),
          transient5xx);
    }
  }

  private static void verify(ArtifactSpec spec, Path file) throws ArtifactException {
    String actual;
    try {
      actual = sha256(file);
    } catch (IOException e) {
      throw new ArtifactException(Reason.IO, "cannot read the downloaded " + spec.displayUrl()
          + ": " + e, true, e);
    }
    if (!actual.equals(spec.sha256())) {
      throw new ArtifactException(Reason.CHECKSUM, "checksum mismatch for "
          + spec.displayUrl() + ": expected sha256 " + spec.sha256() + ", got " + actual
          + " (the file was deleted, nothing of it was unpacked or run)", false);
    }
  }

  /** The SHA-256 of a file, lower-case hex. */
  static String sha256(Path file) throws IOException {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
    byte[] buf = new byte[64 * 1024];
    try (InputStream in = Files.newInputStream(file)) {
      int n;
      while ((n = in.read(buf)) > 0) {
        md.update(buf, 0, n);
      }
    }
    return HexFormat.of().formatHex(md.digest());
  }

  private static String describe(Throwable t) {
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getSimpleName() : m;
  }

  static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      log.warn("cannot delete {}: {}", p, e.toString());
    }
  }
}
