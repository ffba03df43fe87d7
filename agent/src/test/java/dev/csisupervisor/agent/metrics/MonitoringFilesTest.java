package dev.csisupervisor.agent.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code monitoring/}: the alert rules pass {@code promtool check rules} and their unit tests
 * ({@code promtool test rules alerts_test.yaml}: every alert fires on a series that should page and stays quiet on one
 * that should not); every alert has such a test, names what it is about and the CLI command that shows more; every
 * dashboard panel's query is valid PromQL.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MonitoringFilesTest {
  @TempDir Path tmp;

  @Test
  void promtool_checksTheRules() throws Exception {
    Path promtool = MonitoringFiles.requirePromtool();
    MonitoringFiles.Result r = MonitoringFiles.run(MonitoringFiles.DIR, promtool.toString(), "check", "rules",
        "alerts.yaml");
    MonitoringFiles.assertOk(r, "promtool check rules alerts.yaml");
    assertTrue(r.out().contains("SUCCESS: " + MonitoringFiles.alertRules().size() + " rules found"), r.out());
  }

  @Test
  void promtool_testsTheRules_everyAlertFiringAndQuiet() throws Exception {
    Path promtool = MonitoringFiles.requirePromtool();
    MonitoringFiles.Result r = MonitoringFiles.run(MonitoringFiles.DIR, promtool.toString(), "test", "rules",
        "alerts_test.yaml");
    MonitoringFiles.assertOk(r, "promtool test rules alerts_test.yaml");
    assertTrue(r.out().contains("SUCCESS"), r.out());
  }

  @Test
  void everyAlert_hasATestWhereItFires_andOneWhereItStaysQuiet() {
    Set<String> fires = new HashSet<>();
    Set<String> quiet = new HashSet<>();
    for (JsonNode t : MonitoringFiles.alertTests().path("tests")) {
      for (JsonNode a : t.path("alert_rule_test")) {
        (a.path("exp_alerts").isEmpty() ? quiet : fires).add(a.path("alertname").asText());
      }
    }
    Set<String> alerts = MonitoringFiles.alertRules().keySet();
    assertEquals(new TreeSet<>(alerts), new TreeSet<>(fires), "alerts with a test where they fire");
    assertEquals(new TreeSet<>(alerts), new TreeSet<>(quiet), "alerts with a test where they stay quiet");
  }

  @Test
  void everyAlert_saysWhatItIsAbout_andTheCommandThatShowsMore() {
    for (JsonNode g : MonitoringFiles.alerts().path("groups")) {
      for (JsonNode r : g.path("rules")) {
        String name = r.path("alert").asText();
        String summary = r.path("annotations").path("summary").asText();
        String description = r.path("annotations").path("description").asText();
        assertFalse(summary.isEmpty(), name + " has no summary");
        assertTrue(description.contains("csi-agent ") || description.contains("systemctl"),
            name + "'s description names no command: " + description);
        assertTrue(List.of("critical", "warning").contains(r.path("labels").path("severity").asText()),
            name + " has no severity");
        for (String label : List.of("plugin", "volume", "kind")) {
          if (r.path("expr").asText().contains("by (job, instance, " + label) || r.path("expr").asText()
              .contains("csi_agent_volume_stats_")) {
            assertTrue(summary.contains("instance") || summary.contains(label), name + ": " + summary);
          }
        }
      }
    }
  }

  @Test
  void everyDashboardQuery_isValidPromql() throws Exception {
    Path promtool = MonitoringFiles.requirePromtool();
    List<MonitoringFiles.Query> queries = MonitoringFiles.dashboardQueries();
    assertTrue(queries.size() >= 30, "the dashboard has " + queries.size() + " queries");
    Map<String, String> rules = new LinkedHashMap<>();
    for (int i = 0; i < queries.size(); i++) {
      rules.put("dashboard:query_" + i, queries.get(i).promql());
    }
    Path file = tmp.resolve("dashboard-rules.yaml");
    MonitoringFiles.writeRecordingRules(file, rules);
    MonitoringFiles.Result r = MonitoringFiles.run(tmp, promtool.toString(), "check", "rules", file.toString());
    MonitoringFiles.assertOk(r, "promtool check rules of the dashboard's queries");
    assertTrue(r.out().contains("SUCCESS: " + queries.size() + " rules found"), r.out());
  }
}
