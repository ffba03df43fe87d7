package dev.csisupervisor.tasks.artifact;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Bounds;
import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Where a launched plugin's executable comes from, like a scheduler's artifact block: the agent
 * downloads {@code url}, checks its SHA-256 before anything is unpacked or run, and installs it as
 * the revision {@code <data_dir>/plugins/<id>_<sha256 prefix>/}.
 *
 * @param url      {@code http}, {@code https} or {@code file} URL of the file or archive
 * @param sha256   its SHA-256, 64 hex digits (stored lower case)
 * @param unpack   how to unpack it; {@link Unpack#NONE} installs the file itself as the executable
 * @param entry    the executable, relative to the revision directory: a path inside the archive,
 *                 or (not unpacked) the name the downloaded file is saved under
 * @param timeout  how long one download attempt may take, start to end
 * @param attempts how many download attempts are made (transient failures only), at least 1
 */
public record ArtifactSpec(URI url, String sha256, Unpack unpack, String entry, Duration timeout,
    int attempts) {

  /** How an artifact is unpacked. */
  public enum Unpack {
    /** Not an archive: the downloaded file is the executable. */
    NONE,
    /** A gzip-compressed tar archive. */
    TAR_GZ,
    /** A zip archive. */
    ZIP
  }

  public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);
  public static final int DEFAULT_ATTEMPTS = 3;
  public static final int MAX_ATTEMPTS = 10;
  /** The revision directory's suffix: this many hex digits of the SHA-256. */
  public static final int REVISION_DIGITS = 12;

  private static final Set<String> SCHEMES = Set.of("http", "https", "file");
  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");

  /** Whether {@code hex} is a SHA-256 as the config writes it after normalizing: 64 lower-case hex digits. */
  public static boolean isSha256(String hex) {
    return SHA256.matcher(hex).matches();
  }

  public ArtifactSpec {
    requireNonNull(url, "url");
    requireNonNull(sha256, "sha256");
    requireNonNull(unpack, "unpack");
    requireNonNull(entry, "entry");
    requireNonNull(timeout, "timeout");
    String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
    if (!SCHEMES.contains(scheme)) {
      throw new IllegalArgumentException("url must be http, https or file, got " + url);
    }
    if (!scheme.equals("file") && (url.getHost() == null || url.getHost().isEmpty())) {
      throw new IllegalArgumentException("url has no host: " + url);
    }
    if (scheme.equals("file") && (url.getPath() == null || !url.getPath().startsWith("/"))) {
      throw new IllegalArgumentException("a file url needs an absolute path (file:///dir/file),"
          + " got " + url);
    }
    sha256 = sha256.strip().toLowerCase(Locale.ROOT);
    if (!isSha256(sha256)) {
      throw new IllegalArgumentException("sha256 must be 64 hex digits, got \"" + sha256 + "\"");
    }
    checkEntry(entry);
    Bounds.positive(timeout, "timeout");
    if (attempts < 1 || attempts > MAX_ATTEMPTS) {
      throw new IllegalArgumentException("attempts must be 1 to " + MAX_ATTEMPTS + ", got "
          + attempts);
    }
  }

  /**
   * Checks that an entry is a plain relative path that stays inside the revision directory.
   *
   * @throws IllegalArgumentException naming the entry
   */
  public static void checkEntry(String entry) {
    if (entry.isBlank()) {
      throw new IllegalArgumentException("entry must not be empty");
    }
    if (entry.indexOf('\0') >= 0) {
      throw new IllegalArgumentException("entry contains a NUL character");
    }
    if (entry.startsWith("/")) {
      throw new IllegalArgumentException("entry must be relative to the artifact, got \""
          + entry + "\"");
    }
    for (String part : entry.split("/")) {
      if (part.equals("..")) {
        throw new IllegalArgumentException("entry must not contain '..', got \"" + entry + "\"");
      }
    }
    if (entry.endsWith("/")) {
      throw new IllegalArgumentException("entry must name a file, got \"" + entry + "\"");
    }
  }

  /** The revision suffix: the first {@value #REVISION_DIGITS} hex digits of the SHA-256. */
  public String revision() {
    return sha256.substring(0, REVISION_DIGITS);
  }

  /** The URL without user info or query, for logs and events. */
  public String displayUrl() {
    if (url.getScheme().equalsIgnoreCase("file")) {
      return url.toString();
    }
    return url.getScheme() + "://" + url.getHost() + (url.getPort() < 0 ? "" : ":" + url.getPort())
        + (url.getRawPath() == null ? "" : url.getRawPath());
  }
}
