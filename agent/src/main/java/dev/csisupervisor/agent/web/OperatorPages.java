package dev.csisupervisor.agent.web;

import static java.util.Objects.requireNonNull;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the operator page and its JSON on the metrics listener (every path but {@code /metrics}):
 *
 * <ul>
 *   <li>{@code /ui/}, {@code /ui/app.js}, {@code /ui/style.css} — the page: plain HTML, CSS and a JavaScript module
 *       from the jar, which fetches the JSON below and writes every string it shows as text, never as HTML</li>
 *   <li>{@code /api/v1/<name>} — JSON from {@link Source#json(String)}: the same text as the CLI's {@code --json}
 *       for the same question ({@code status}, {@code plugins}, {@code volumes}, {@code cluster/plugins},
 *       {@code cluster/volumes}), {@code problems}, the page's banner, and {@code volume-stats}, each volume's last
 *       usage</li>
 * </ul>
 *
 * <p>GET and HEAD only (405 otherwise); every answer carries a strict Content-Security-Policy (nothing but this
 * origin's own script, style and JSON; no inline script or style, no frames, no forms), {@code nosniff} and
 * {@code no-referrer}. Thread-safe: the metrics server calls it on its own threads.
 */
public final class OperatorPages implements HttpHandler {
  private static final Logger log = LoggerFactory.getLogger(OperatorPages.class);

  /** The page's policy: its own script, style and JSON only. */
  public static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
      + " connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

  private static final Map<String, String> FILES = Map.of(
      "/ui/", "index.html",
      "/ui/index.html", "index.html",
      "/ui/app.js", "app.js",
      "/ui/style.css", "style.css");

  private static final Map<String, String> TYPES = Map.of(
      "html", "text/html; charset=utf-8",
      "js", "text/javascript; charset=utf-8",
      "css", "text/css; charset=utf-8");

  /** The data behind {@code /api/v1/...}. */
  public interface Source {
    /**
     * The JSON text for {@code name} ({@code status}, {@code cluster/volumes}, ...), or empty if there is no such
     * thing (404).
     *
     * @throws Unavailable if it cannot be answered now (503): the agent is starting, etcd cannot be read, ...
     */
    Optional<String> json(String name) throws Unavailable;
  }

  /** What cannot be answered now, and why (a 503 with the reason). */
  public static final class Unavailable extends Exception {
    public Unavailable(String message) {
      super(message);
    }
  }

  private final Source source;

  public OperatorPages(Source source) {
    this.source = requireNonNull(source, "source");
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String method = exchange.getRequestMethod();
      String path = exchange.getRequestURI().getRawPath();
      exchange.getResponseHeaders().set("Content-Security-Policy", CSP);
      exchange.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
      exchange.getResponseHeaders().set("Referrer-Policy", "no-referrer");
      exchange.getResponseHeaders().set("X-Frame-Options", "DENY");
      if (!method.equals("GET") && !method.equals("HEAD")) {
        exchange.getResponseHeaders().set("Allow", "GET, HEAD");
        send(exchange, 405, "text/plain; charset=utf-8",
            bytes("the operator page is read-only: GET or HEAD, got " + method + "\n"));
        return;
      }
      if (path.equals("/") || path.equals("/ui")) {
        exchange.getResponseHeaders().set("Location", "/ui/");
        send(exchange, 302, "text/plain; charset=utf-8", bytes("see /ui/\n"));
        return;
      }
      if (path.startsWith("/api/v1/")) {
        api(exchange, path.substring("/api/v1/".length()));
        return;
      }
      String file = FILES.get(path);
      if (file == null) {
        send(exchange, 404, "text/plain; charset=utf-8",
            bytes("not found: " + path + " (the operator page is at /ui/, its JSON at /api/v1/, metrics at /metrics)\n"));
        return;
      }
      try (InputStream in = OperatorPages.class.getResourceAsStream("ui/" + file)) {
        if (in == null) {
          throw new IOException("resource ui/" + file + " is missing from the jar");
        }
        exchange.getResponseHeaders().set("Cache-Control", "no-cache");
        send(exchange, 200, TYPES.get(file.substring(file.lastIndexOf('.') + 1)), in.readAllBytes());
      }
    } catch (IOException | RuntimeException e) {
      log.debug("operator page: {} {} failed", exchange.getRequestMethod(), exchange.getRequestURI(), e);
      throw e;
    }
  }

  private void api(HttpExchange exchange, String name) throws IOException {
    exchange.getResponseHeaders().set("Cache-Control", "no-store");
    String json = "application/json; charset=utf-8";
    Optional<String> body;
    try {
      body = source.json(name);
    } catch (Unavailable e) {
      send(exchange, 503, json, bytes(error(e.getMessage())));
      return;
    } catch (RuntimeException e) {
      log.warn("operator page: /api/v1/{} failed: {}", name, e.toString());
      send(exchange, 500, json, bytes(error(name + " failed: " + e)));
      return;
    }
    if (body.isEmpty()) {
      send(exchange, 404, json, bytes(error("no such thing: /api/v1/" + name + " (status, plugins, volumes, problems,"
          + " volume-stats, cluster/plugins, cluster/volumes)")));
      return;
    }
    send(exchange, 200, json, bytes(body.get() + "\n"));
  }

  /** {@code {"error": "..."}}. */
  static String error(String message) {
    return dev.csisupervisor.agent.views.JsonText.write(Map.of("error", message)) + "\n";
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static void send(HttpExchange exchange, int status, String type, byte[] body) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", type);
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(status, head ? -1 : body.length);
    if (!head) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    }
  }
}
