package dev.csisupervisor.agent;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;

/**
 * Debian's headless Chromium, run as a process: the DOM of a page after its scripts ran, a screenshot, or a page driven
 * over the DevTools protocol (clicks, the page's own timings). Where it is
 * not installed the test is skipped, saying so (CI installs it: {@code .ci/run}).
 */
final class Chromium {
  private static final List<Path> CANDIDATES = List.of(Path.of("/usr/bin/chromium"),
      Path.of("/usr/bin/chromium-browser"), Path.of("/usr/bin/google-chrome"));

  private Chromium() {}

  static Optional<Path> binary() {
    return CANDIDATES.stream().filter(Files::isExecutable).findFirst();
  }

  /** The binary, or the test is skipped saying why. */
  static Path require() {
    Optional<Path> b = binary();
    Assumptions.assumeTrue(b.isPresent(), "chromium is not installed (apt-get install chromium; .ci/run installs"
        + " it in CI): the browser test is skipped");
    return b.get();
  }

  /** The DOM of {@code url} after its scripts ran for up to {@code virtualMillis} of virtual time. */
  static String dumpDom(String url, Path profile, long virtualMillis) throws IOException, InterruptedException {
    return run(profile, List.of("--virtual-time-budget=" + virtualMillis, "--dump-dom", url));
  }

  /** A PNG of {@code url} as a 1280 x {@code height} window shows it. */
  static void screenshot(String url, Path profile, Path png, int height) throws IOException, InterruptedException {
    run(profile, List.of("--virtual-time-budget=5000", "--hide-scrollbars", "--window-size=1280," + height,
        "--screenshot=" + png, url));
    assertTrue(Files.size(png) > 0, "no screenshot written to " + png);
  }

  /** A headless Chromium driven over its DevTools protocol (one page): for clicks and the page's own timings. */
  static Session session(Path profile) throws IOException {
    Files.createDirectories(profile);
    Process p = new ProcessBuilder(require().toString(), "--headless", "--no-sandbox", "--disable-gpu",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--remote-debugging-port=0", "--remote-allow-origins=*", "--user-data-dir=" + profile, "about:blank")
        .redirectErrorStream(true).start();
    try {
      BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
      String browser = null;
      for (String line = in.readLine(); line != null && browser == null; line = in.readLine()) {
        if (line.startsWith("DevTools listening on ")) {
          browser = line.substring("DevTools listening on ".length());
        }
      }
      if (browser == null) {
        throw new IOException("chromium did not say where its DevTools listen");
      }
      // Its output is not read further: drained so that it never blocks on a full pipe.
      Thread drain = new Thread(() -> {
        try {
          in.transferTo(java.io.Writer.nullWriter());
        } catch (IOException e) {
          // the browser is gone
        }
      }, "chromium-output");
      drain.setDaemon(true);
      drain.start();
      HttpClient http = HttpClient.newHttpClient();
      JsonNode targets = new ObjectMapper().readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + URI.create(browser).getPort() + "/json/list")).build(), HttpResponse.BodyHandlers.ofString()).body());
      for (JsonNode t : targets) {
        if (t.path("type").asText().equals("page")) {
          return new Session(p, http, t.path("webSocketDebuggerUrl").asText());
        }
      }
      throw new IOException("chromium has no page: " + targets);
    } catch (IOException | RuntimeException e) {
      p.destroyForcibly();
      throw e;
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  /** One page of a headless Chromium: navigate, evaluate, await; closing ends the browser. */
  static final class Session implements AutoCloseable, WebSocket.Listener {
    private final Process process;
    private final ObjectMapper json = new ObjectMapper();
    private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger();
    private final StringBuilder partial = new StringBuilder();
    private final WebSocket socket;

    private Session(Process process, HttpClient http, String page) {
      this.process = process;
      this.socket = http.newWebSocketBuilder().buildAsync(URI.create(page), this).join();
    }

    /** A DevTools call and its answer. */
    JsonNode call(String method, Map<String, Object> params) throws Exception {
      int id = ids.incrementAndGet();
      CompletableFuture<JsonNode> f = new CompletableFuture<>();
      pending.put(id, f);
      socket.sendText(json.writeValueAsString(Map.of("id", id, "method", method, "params", params)), true).join();
      return f.get(30, TimeUnit.SECONDS);
    }

    void navigate(String url) throws Exception {
      call("Page.navigate", Map.of("url", url));
    }

    /** The value of a JavaScript expression in the page, as text ({@code ""} for none). */
    String evaluate(String expression) throws Exception {
      JsonNode r = call("Runtime.evaluate", Map.of("expression", expression, "returnByValue", true));
      return r.path("result").path("result").path("value").asText("");
    }

    /** Evaluates {@code expression} until it is not empty; fails after {@code within}. */
    String await(String expression, java.time.Duration within) throws Exception {
      long end = System.nanoTime() + within.toNanos();
      while (true) {
        String v = evaluate(expression);
        if (!v.isEmpty()) {
          return v;
        }
        if (System.nanoTime() > end) {
          throw new AssertionError("not within " + within + ": " + expression);
        }
        Thread.sleep(20); // polling the page: the browser tells nothing by itself
      }
    }

    @Override
    public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
      partial.append(data);
      if (last) {
        try {
          JsonNode n = json.readTree(partial.toString());
          CompletableFuture<JsonNode> f = pending.remove(n.path("id").asInt(-1));
          if (f != null) {
            f.complete(n);
          }
        } catch (IOException e) {
          pending.values().forEach(f -> f.completeExceptionally(e));
        }
        partial.setLength(0);
      }
      ws.request(1);
      return null;
    }

    @Override
    public void close() throws InterruptedException {
      socket.abort();
      process.destroy();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly();
      }
    }
  }

  private static String run(Path profile, List<String> args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of(require().toString(), "--headless", "--no-sandbox", "--disable-gpu",
        "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--user-data-dir=" + profile));
    cmd.addAll(args);
    Path out = Files.createTempFile(profile.getParent(), "chromium-", ".out");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(ProcessBuilder.Redirect.DISCARD)
        .start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      throw new AssertionError("chromium did not finish within 60 s: " + cmd);
    }
    String dom = Files.readString(out, StandardCharsets.UTF_8);
    assertTrue(p.exitValue() == 0, "chromium exited " + p.exitValue() + ": " + cmd);
    return dom;
  }
}
