package dev.csisupervisor.testing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback HTTP server for artifact tests: serves byte arrays by path, counts requests, can
 * fail the first requests with a status, or hang (headers never sent) until closed.
 */
public final class ArtifactServer implements AutoCloseable {
  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "artifact-server");
    t.setDaemon(true);
    return t;
  });
  private final Map<String, byte[]> files = new ConcurrentHashMap<>();
  private final Map<String, Integer> failures = new ConcurrentHashMap<>();
  private final Map<String, Integer> statusFor = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> requests = new ConcurrentHashMap<>();
  private final CountDownLatch released = new CountDownLatch(1);
  private volatile String hangPath;

  public ArtifactServer() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(executor);
    server.createContext("/", this::handle);
    server.start();
  }

  public URI url(String path) {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
  }

  public ArtifactServer serve(String path, byte[] content) {
    files.put(path, content);
    return this;
  }

  /** The first {@code times} requests of {@code path} get {@code status}. */
  public ArtifactServer fail(String path, int status, int times) {
    statusFor.put(path, status);
    failures.put(path, times);
    return this;
  }

  /** Requests of {@code path} never get an answer (until the server is closed). */
  public ArtifactServer hang(String path) {
    hangPath = path;
    return this;
  }

  public int requests(String path) {
    AtomicInteger n = requests.get(path);
    return n == null ? 0 : n.get();
  }

  private void handle(HttpExchange ex) throws IOException {
    String path = ex.getRequestURI().getPath();
    requests.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
    try (ex) {
      if (path.equals(hangPath)) {
        try {
          released.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return;
      }
      Integer left = failures.get(path);
      if (left != null && left > 0) {
        failures.put(path, left - 1);
        ex.sendResponseHeaders(statusFor.get(path), -1);
        return;
      }
      byte[] body = files.get(path);
      if (body == null) {
        ex.sendResponseHeaders(404, -1);
        return;
      }
      ex.sendResponseHeaders(200, body.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    }
  }

  @Override
  public void close() {
    released.countDown();
    server.stop(0);
    executor.shutdownNow();
  }
}
