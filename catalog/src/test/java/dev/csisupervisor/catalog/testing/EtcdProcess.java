package dev.csisupervisor.catalog.testing;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A real etcd for tests and benchmarks: its own loopback ports and data directory, started as a child
 * process and stopped by its pid. {@code /usr/bin/etcd} (Debian's etcd-server) or {@code $ETCD_BIN}.
 */
public final class EtcdProcess implements AutoCloseable {
  private final Path binary;
  private final Path dataDir;
  private final int clientPort;
  private final int peerPort;
  private final int metricsPort;
  private final String scheme;
  private final List<String> extraArgs;
  private Process process;

  private EtcdProcess(Path binary, Path dataDir, int clientPort, int peerPort, String scheme, List<String> extraArgs)
      throws IOException {
    this.binary = binary;
    this.dataDir = dataDir;
    this.clientPort = clientPort;
    this.peerPort = peerPort;
    this.metricsPort = freePort();
    this.scheme = scheme;
    this.extraArgs = List.copyOf(extraArgs);
  }

  /** The etcd binary, if installed. */
  public static Optional<Path> binary() {
    String env = System.getenv("ETCD_BIN");
    for (String c : env == null ? List.of("/usr/bin/etcd", "/usr/local/bin/etcd") : List.of(env)) {
      Path p = Path.of(c);
      if (Files.isExecutable(p)) {
        return Optional.of(p);
      }
    }
    return Optional.empty();
  }

  /** Skips the calling test, saying why, when etcd is not installed (CI installs it: see .ci/run). */
  public static Path assumeInstalled() {
    Optional<Path> b = binary();
    Assumptions.assumeTrue(b.isPresent(), "SKIPPED: no etcd binary (/usr/bin/etcd or $ETCD_BIN); install it with"
        + " 'apt-get install -y etcd-server' (.ci/run does) to run the cluster catalog tests");
    return b.get();
  }

  /** Starts a fresh etcd with a new data directory under {@code parent}; waits until it is healthy. */
  public static EtcdProcess start(Path parent) throws IOException {
    return fresh(parent, "http", List.of());
  }

  /** Starts a fresh etcd with these extra flags (e.g. {@code --auth-token-ttl 1}); waits until it is healthy. */
  public static EtcdProcess startWith(Path parent, String... extraArgs) throws IOException {
    return fresh(parent, "http", List.of(extraArgs));
  }

  /**
   * A fresh etcd on ports free a moment before: {@link #freePort} closes its socket before etcd binds, and another
   * process may take the port meanwhile ("bind: address already in use", seen once in CI), so a start that fails so
   * is made again on other ports, a few times.
   */
  private static EtcdProcess fresh(Path parent, String scheme, List<String> extraArgs) throws IOException {
    Path bin = assumeInstalled();
    return onFreePorts(() -> {
      EtcdProcess e = new EtcdProcess(bin, Files.createTempDirectory(parent, "etcd"), freePort(), freePort(), scheme,
          extraArgs);
      e.startAgain();
      return e;
    });
  }

  /** A start of etcd on ports {@link #freePort} found, which fails with an {@link IOException}. */
  interface Start<T> {
    T start() throws IOException;
  }

  /**
   * Runs {@code start} again (with the new ports it picks) when etcd found one of them taken; three tries. A start
   * that fails must leave nothing running.
   */
  static <T> T onFreePorts(Start<T> start) throws IOException {
    for (int attempt = 1; ; attempt++) {
      try {
        return start.start();
      } catch (IOException failed) {
        if (attempt == 3 || failed.getMessage() == null || !failed.getMessage().contains("address already in use")) {
          throw failed;
        }
      }
    }
  }

  /**
   * Starts etcd serving clients over TLS ({@code https://}) with the given server certificate, key and client CA
   * (client certificates required); {@code /health} stays on a plain metrics port.
   */
  public static EtcdProcess startTls(Path parent, Path cert, Path key, Path clientCa) throws IOException {
    return fresh(parent, "https", List.of("--cert-file", cert.toString(), "--key-file", key.toString(),
        "--trusted-ca-file", clientCa.toString(), "--client-cert-auth"));
  }

  /** Starts etcd on a given client port (to test "unreachable at first, then there"). */
  public static EtcdProcess startOnPort(Path parent, int clientPort) throws IOException {
    Path bin = assumeInstalled();
    EtcdProcess e = new EtcdProcess(bin, Files.createTempDirectory(parent, "etcd"), clientPort, freePort(), "http", List.of());
    e.startAgain();
    return e;
  }

  public static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** Starts (again, after {@link #stop()}) with the same ports and data; waits until healthy. */
  public synchronized void startAgain() throws IOException {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException("etcd is running");
    }
    String client = endpoint();
    String peer = "http://127.0.0.1:" + peerPort;
    List<String> cmd = new java.util.ArrayList<>(List.of(binary.toString(), "--name", "default", "--data-dir",
        dataDir.resolve("data").toString(), "--listen-client-urls", client, "--advertise-client-urls", client,
        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
        "--listen-metrics-urls", "http://127.0.0.1:" + metricsPort,
        "--initial-cluster", "default=" + peer, "--log-level", "warn"));
    cmd.addAll(extraArgs);
    process = new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(dataDir.resolve("etcd.log").toFile())
        .start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!healthy()) {
      if (!process.isAlive()) {
        throw new IOException("etcd exited with " + process.exitValue() + "; see " + dataDir.resolve("etcd.log")
            + ":\n" + tail());
      }
      if (System.nanoTime() > deadline) {
        stop();
        throw new IOException("etcd not healthy within 20 s; see " + dataDir.resolve("etcd.log") + ":\n" + tail());
      }
      try {
        process.waitFor(50, TimeUnit.MILLISECONDS);
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted", ie);
      }
    }
  }

  private String tail() {
    return tail(dataDir.resolve("etcd.log"));
  }

  /** The last 20 lines of an etcd log, for an error message. */
  static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  private boolean healthy() {
    return healthy(metricsPort);
  }

  /** Whether the etcd serving metrics on {@code metricsPort} says it is healthy (a leader, a quorum read). */
  static boolean healthy(int metricsPort) {
    try {
      HttpURLConnection c = (HttpURLConnection) URI.create("http://127.0.0.1:" + metricsPort + "/health").toURL()
          .openConnection();
      c.setConnectTimeout(200);
      c.setReadTimeout(2000);
      try {
        return c.getResponseCode() == 200 && new String(c.getInputStream().readAllBytes()).contains("true");
      } finally {
        c.disconnect();
      }
    } catch (IOException e) {
      return false;
    }
  }

  public String endpoint() {
    return scheme + "://127.0.0.1:" + clientPort;
  }

  public int clientPort() {
    return clientPort;
  }

  public long pid() {
    return process.pid();
  }

  /** SIGTERM by pid, then SIGKILL after 5 s; waits for the exit. */
  public synchronized void stop() {
    if (process == null || !process.isAlive()) {
      return;
    }
    process.destroy();
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    stop();
  }

  /** How long it took; for log lines. */
  public static String millis(Duration d) {
    return d.toMillis() + " ms";
  }
}
