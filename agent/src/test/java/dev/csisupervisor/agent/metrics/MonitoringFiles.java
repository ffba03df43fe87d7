package dev.csisupervisor.agent.metrics;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The repository's {@code monitoring/} files (alert rules, their tests, the Grafana dashboard) as tests read them, and
 * Debian's {@code promtool} to check them. Where promtool is not installed a test that needs it is skipped, saying so
 * (CI installs it: {@code .ci/run}).
 */
public final class MonitoringFiles {
  /** The folder, from the agent module's directory (surefire's working directory). */
  public static final Path DIR = Path.of("..", "monitoring").toAbsolutePath().normalize();
  public static final Path ALERTS = DIR.resolve("alerts.yaml");
  public static final Path ALERTS_TEST = DIR.resolve("alerts_test.yaml");
  public static final Path DASHBOARD = DIR.resolve("csi-agent-dashboard.json");

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

  private MonitoringFiles() {}

  /** A dashboard panel's query. */
  public record Query(String panel, String refId, String expr) {
    /** The expression as Prometheus reads it: Grafana's variables given the values of "all agents, 1m". */
    public String promql() {
      return expr.replace("$__rate_interval", "1m").replace("$instance", ".*");
    }
  }

  public static JsonNode alerts() {
    return read(YAML, ALERTS);
  }

  public static JsonNode alertTests() {
    return read(YAML, ALERTS_TEST);
  }

  /** Every alert rule's name and expression, in file order. */
  public static Map<String, String> alertRules() {
    Map<String, String> out = new LinkedHashMap<>();
    for (JsonNode g : alerts().path("groups")) {
      for (JsonNode r : g.path("rules")) {
        if (r.has("alert")) {
          out.put(r.get("alert").asText(), r.get("expr").asText());
        }
      }
    }
    return out;
  }

  /** Every query of every panel of the dashboard. */
  public static List<Query> dashboardQueries() {
    List<Query> out = new ArrayList<>();
    for (JsonNode p : read(JSON, DASHBOARD).path("panels")) {
      for (JsonNode t : p.path("targets")) {
        out.add(new Query(p.path("title").asText(), t.path("refId").asText(), t.path("expr").asText()));
      }
    }
    return out;
  }

  /** Writes {@code exprs} as recording rules (one each, {@code record: <name>}) into {@code file}, for promtool. */
  public static void writeRecordingRules(Path file, Map<String, String> exprs) throws IOException {
    List<Map<String, String>> rules = new ArrayList<>();
    exprs.forEach((name, expr) -> rules.add(Map.of("record", name, "expr", expr)));
    YAML.writeValue(file.toFile(), Map.of("groups", List.of(Map.of("name", "dashboard", "rules", rules))));
  }

  private static JsonNode read(ObjectMapper m, Path file) {
    try {
      return m.readTree(file.toFile());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
  }

  public static Optional<Path> promtool() {
    return Optional.of(Path.of("/usr/bin/promtool")).filter(Files::isExecutable);
  }

  /** promtool, or the test is skipped saying why. */
  public static Path requirePromtool() {
    Optional<Path> p = promtool();
    Assumptions.assumeTrue(p.isPresent(), "promtool is not installed (apt-get install prometheus; .ci/run installs it"
        + " in CI): the rule checks are skipped");
    return p.get();
  }

  /** What a command printed (stdout and stderr together) and its exit code. */
  public record Result(int code, String out) {}

  /** Runs {@code args} in {@code dir}, with a 60 s limit. */
  public static Result run(Path dir, String... args) throws IOException, InterruptedException {
    Path out = Files.createTempFile("csi-monitoring-", ".out");
    try {
      Process p = new ProcessBuilder(args).directory(dir.toFile()).redirectErrorStream(true)
          .redirectOutput(out.toFile()).start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AssertionError("did not finish within 60 s: " + String.join(" ", args));
      }
      return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
    } finally {
      Files.deleteIfExists(out);
    }
  }

  static void assertOk(Result r, String what) {
    assertTrue(r.code() == 0, what + " exited " + r.code() + ":\n" + r.out());
  }
}
