package dev.csisupervisor.agent.metrics;

import com.sun.net.httpserver.HttpHandler;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/** The HTTP endpoint of {@link AgentMetrics}: {@code /metrics}, and the operator pages on every other path. */
final class MetricsHttpServer implements AutoCloseable {
  private final HTTPServer server;
  private final InetSocketAddress bound;

  private MetricsHttpServer(HTTPServer server, InetSocketAddress bound) {
    this.server = server;
    this.bound = bound;
  }

  /**
   * Serves {@code prometheus} on {@code /metrics} of {@code address} (port 0 picks a free port), and every other path
   * with {@code pages} (null: the client library's own page).
   *
   * @throws IOException if the host cannot be resolved or the address not bound, naming them
   */
  static MetricsHttpServer start(PrometheusRegistry prometheus, InetSocketAddress address, HttpHandler pages)
      throws IOException {
    InetAddress host;
    try {
      host = InetAddress.getByName(address.getHostString());
    } catch (IOException e) {
      throw new IOException("metrics_address host " + address.getHostString()
          + " cannot be resolved: " + e.getMessage(), e);
    }
    // The JDK's HTTP server leaves Nagle's algorithm on: a small answer (a scrape of a few plugins, the page's JSON)
    // then waits for the client's delayed ACK, some 40 ms (benchmarks/README.md section 17). Read once per JVM, when
    // its first server is made; a value set by the user wins.
    if (System.getProperty("sun.net.httpserver.nodelay") == null) {
      System.setProperty("sun.net.httpserver.nodelay", "true");
    }
    HTTPServer s;
    try {
      HTTPServer.Builder b = HTTPServer.builder().inetAddress(host).port(address.getPort()).registry(prometheus);
      if (pages != null) {
        b.defaultHandler(pages);
      }
      s = b.buildAndStart();
    } catch (IOException e) {
      throw new IOException("cannot serve metrics on " + host.getHostAddress() + ":"
          + address.getPort() + ": " + e.getMessage(), e);
    }
    return new MetricsHttpServer(s, new InetSocketAddress(host, s.getPort()));
  }

  /** The address it listens on, the host resolved. */
  InetSocketAddress bound() {
    return bound;
  }

  @Override
  public void close() {
    server.close();
  }
}
