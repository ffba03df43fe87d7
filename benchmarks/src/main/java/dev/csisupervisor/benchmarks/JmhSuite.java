package dev.csisupervisor.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.results.format.ResultFormatType;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.util.Statistics;

/**
 * Runs the JMH benchmarks with the {@code quick} or {@code full} settings and prints one summary
 * line per result (p50/p99 for sample-time results, score ± 99.9% error otherwise), plus a JSON
 * result file per suite under {@code target/bench-results/}.
 */
final class JmhSuite {
  private JmhSuite() {}

  /** One JMH run: a benchmark method and the parameter values to cross. */
  private record Suite(String name, String include, List<String[]> params, int threads) {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    Pattern filter = Pattern.compile(args.length > 1 ? args[1] : ".*");
    List<Suite> suites = new ArrayList<>();
    suites.add(new Suite("fsync-baseline", "FsyncBaselineBenchmark.writeAndFsync", List.of(), 1));
    suites.add(new Suite("journal-put", "JournalPutBenchmark.put", List.of(), 1));
    suites.add(new Suite("registry-change-durable", "RegistryChangeBenchmark.change",
        List.of(p("store", "durable"), p("size", "10", "1000", "10000", "100000")), 1));
    suites.add(new Suite("registry-change-memory", "RegistryChangeBenchmark.change",
        List.of(p("store", "memory"), quick ? p("size", "10", "100000") : p("size", "10", "1000", "10000", "100000")), 1));
    suites.add(new Suite("concurrent-writers", "ConcurrentWritersBenchmark.change",
        List.<String[]>of(p("store", "durable", "memory")), 16));
    if (!quick) {
      // Fewer writers share fewer commits: how group commit scales up to the 16 above.
      suites.add(new Suite("concurrent-writers-4", "ConcurrentWritersBenchmark.change",
          List.<String[]>of(p("store", "durable")), 4));
    }
    suites.add(new Suite("fanout", "FanOutBenchmark.broadcast",
        List.of(p("subscribers", "1000"), p("events", quick ? "10000" : "100000")), 1));
    suites.add(new Suite("probe-warm", "ProbeRoundTripBenchmark.warm", List.of(), 1));
    suites.add(new Suite("probe-cold", "ProbeRoundTripBenchmark.cold", List.of(), 1));

    Path out = Path.of("target/bench-results").toAbsolutePath();
    Files.createDirectories(out);
    String dataDir = Fixtures.dataDir().toString();
    List<String> summary = new ArrayList<>();
    Map<String, Double> p50s = new java.util.TreeMap<>();
    for (Suite s : suites) {
      if (!filter.matcher(s.name).find()) {
        continue;
      }
      boolean fanout = s.name.equals("fanout");
      ChainedOptionsBuilder o = new OptionsBuilder()
          .include(Pattern.quote("." + s.include) + "$")
          .threads(s.threads)
          .forks(quick ? 1 : 2)
          .jvmArgsAppend("-Xms1g", "-Xmx2g", "-Dbench.data=" + dataDir,
              "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
          .resultFormat(ResultFormatType.JSON)
          .result(out.resolve("jmh-" + (quick ? "quick" : "full") + "-" + s.name + ".json").toString());
      if (fanout) {
        // Single shots of a whole broadcast: one warm-up shot, then measured shots.
        o.forks(1).warmupIterations(1).measurementIterations(5);
      } else if (quick) {
        o.warmupIterations(1).warmupTime(TimeValue.seconds(1)).measurementIterations(3).measurementTime(TimeValue.seconds(1));
      } else {
        o.warmupIterations(3).warmupTime(TimeValue.seconds(2)).measurementIterations(5).measurementTime(TimeValue.seconds(2));
      }
      for (String[] param : s.params) {
        o.param(param[0], java.util.Arrays.copyOfRange(param, 1, param.length));
      }
      Collection<RunResult> results = new Runner(o.build()).run();
      for (RunResult r : results) {
        summary.add(describe(s.name, r));
        if (r.getParams().getMode() == Mode.SampleTime) {
          p50s.put(s.name + (r.getParams().getParamsKeys().contains("size") ? " size=" + r.getParams().getParam("size") : ""),
              r.getPrimaryResult().getStatistics().getPercentile(50));
        }
      }
    }
    // Each durable change, and the store's put alone, against the bare 4 KiB write + fsync measured in this same run.
    Double bare = p50s.get("fsync-baseline");
    if (bare != null) {
      p50s.forEach((name, p50) -> {
        if (name.startsWith("registry-change-durable")) {
          summary.add(String.format(Locale.ROOT, "RESULT change-vs-fsync | %s | p50 %.1f us = %.2f x the bare 4 KiB"
              + " write + fsync of this run (p50 %.1f us)", name.substring(name.indexOf("size=")), p50, p50 / bare, bare));
        } else if (name.equals("journal-put")) {
          summary.add(String.format(Locale.ROOT, "RESULT put-vs-fsync | journal put, 1 writer | p50 %.1f us = %.2f x"
              + " the bare 4 KiB write + fsync of this run (p50 %.1f us)", p50, p50 / bare, bare));
        }
      });
    }
    System.out.println();
    System.out.println("==== JMH summary (" + (quick ? "quick" : "full") + ") ====");
    summary.forEach(System.out::println);
  }

  private static String[] p(String name, String... values) {
    String[] a = new String[values.length + 1];
    a[0] = name;
    System.arraycopy(values, 0, a, 1, values.length);
    return a;
  }

  private static String describe(String suite, RunResult r) {
    BenchmarkParams bp = r.getParams();
    StringBuilder params = new StringBuilder();
    for (String k : bp.getParamsKeys()) {
      params.append(k).append('=').append(bp.getParam(k)).append(' ');
    }
    Result<?> primary = r.getPrimaryResult();
    Statistics st = primary.getStatistics();
    String unit = primary.getScoreUnit();
    String line = switch (bp.getMode()) {
      case SampleTime -> String.format(Locale.ROOT, "p50 %.1f %s, p99 %.1f %s, mean %.1f ± %.1f %s (n=%d)",
          st.getPercentile(50), unit, st.getPercentile(99), unit, primary.getScore(), primary.getScoreError(), unit,
          st.getN());
      default -> String.format(Locale.ROOT, "%.1f ± %.1f %s (min %.1f, max %.1f, n=%d)", primary.getScore(),
          primary.getScoreError(), unit, st.getMin(), st.getMax(), st.getN());
    };
    if (suite.equals("fanout")) {
      double deliveries = Double.parseDouble(bp.getParam("subscribers")) * Double.parseDouble(bp.getParam("events"));
      line += String.format(Locale.ROOT, " => %.2f M deliveries/s (mean), %.2f M/s (best shot)",
          deliveries / (primary.getScore() / 1000) / 1e6, deliveries / (st.getMin() / 1000) / 1e6);
    }
    return "RESULT " + suite + " | " + params.toString().trim() + " | " + line;
  }
}
