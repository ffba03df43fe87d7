package dev.csisupervisor.agent.commands;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.csisupervisor.cli.Format;
import dev.csisupervisor.catalog.ViewFreshness;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The freshness line every {@code csi-agent cluster} query prints first. */
class ClusterCommandTest {
  private static final Instant NOW = Instant.parse("2026-11-25T12:00:10Z");

  @Test
  void freshRead_namesRevisionMemberAndAge() {
    ViewFreshness f = new ViewFreshness(42, NOW.minusSeconds(3), false, null, "http://10.0.0.1:2379", "");
    assertEquals("revision 42 from http://10.0.0.1:2379, confirmed 3s ago", ClusterCommand.freshnessLine(f, NOW));
  }

  @Test
  void oneMembersOwnCopy_isStale_andSaysWhy() {
    ViewFreshness f = new ViewFreshness(40, null, true, null, "http://10.0.0.3:2379",
        "etcd http://10.0.0.1:2379: range /csi-supervisor/ failed: DEADLINE_EXCEEDED");
    assertEquals("STALE: revision 40 from http://10.0.0.3:2379 (that member's own copy, not confirmed by a quorum:"
        + " etcd http://10.0.0.1:2379: range /csi-supervisor/ failed: DEADLINE_EXCEEDED)", ClusterCommand.freshnessLine(f, NOW));
  }

  @Test
  void staleView_saysSinceWhen() {
    Instant confirmed = Instant.parse("2026-11-25T11:59:00Z");
    ViewFreshness f = new ViewFreshness(40, confirmed, true, confirmed, "http://10.0.0.3:2379", "no leader");
    assertEquals("STALE: revision 40 from http://10.0.0.3:2379 (last confirmed 70s ago, at "
        + Format.time(confirmed) + ": no leader)", ClusterCommand.freshnessLine(f, NOW));
  }
}
