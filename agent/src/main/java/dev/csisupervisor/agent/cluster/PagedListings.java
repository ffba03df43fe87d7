package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.agent.cluster.LeaderCalls.CallFailed;
import dev.csisupervisor.agent.cluster.LeaderCalls.NotLeading;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.CsiSnapshot;
import dev.csisupervisor.client.ListSnapshotsRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.SnapshotPage;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeEntry;
import dev.csisupervisor.client.VolumePage;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A controller plugin's whole ListVolumes or ListSnapshots, page by page, each page a call of the controller agent
 * ({@link LeaderCalls}, so only while it leads). {@code ABORTED} (CSI: the token is no longer valid) starts over from
 * the first page, at most {@value #LIST_TRIES} listings in all; a plugin that hands out tokens forever is cut off
 * after {@value #MAX_PAGES} pages. Thread-safe.
 */
final class PagedListings {
  private static final Logger log = LoggerFactory.getLogger(PagedListings.class);

  /** ListVolumes or ListSnapshots started over at most this often after ABORTED (a token the plugin no longer has). */
  static final int LIST_TRIES = 3;
  /** Pages of one listing at most (a plugin that hands out tokens forever is cut off). */
  static final int MAX_PAGES = 10_000;

  private final LeaderCalls calls;

  PagedListings(LeaderCalls calls) {
    this.calls = calls;
  }

  List<VolumeEntry> volumes(ClusterVolumes.Leadership l, CsiClient client, String plugin)
      throws NotLeading, CallFailed {
    return allPages(l, "ListVolumes of plugin " + plugin, token -> client.listVolumesAsync(0, token),
        VolumePage::entries, VolumePage::nextToken);
  }

  List<CsiSnapshot> snapshots(ClusterVolumes.Leadership l, CsiClient client, String plugin)
      throws NotLeading, CallFailed {
    return allPages(l, "ListSnapshots of plugin " + plugin, token -> client.listSnapshotsAsync(
        new ListSnapshotsRequest(0, token, Optional.empty(), Optional.empty(), Secrets.none())),
        SnapshotPage::entries, SnapshotPage::nextToken);
  }

  /** Every page, from the first. An entry listed on two pages (the plugin's list changed between them) is kept once. */
  private <T, P> List<T> allPages(ClusterVolumes.Leadership l, String what,
      Function<Optional<String>, CompletableFuture<P>> page, Function<P, List<T>> entries,
      Function<P, Optional<String>> next) throws NotLeading, CallFailed {
    for (int attempt = 1; ; attempt++) {
      Set<T> out = new LinkedHashSet<>();
      Optional<String> token = Optional.empty();
      try {
        for (int pages = 1; ; pages++) {
          if (pages > MAX_PAGES) {
            throw new CallFailed(what + ": more than " + MAX_PAGES + " pages (the plugin's tokens never end)", null);
          }
          Optional<String> from = token;
          P p = calls.call(l, what + " (page " + pages + ")", () -> page.apply(from));
          out.addAll(entries.apply(p));
          token = next.apply(p);
          if (token.isEmpty()) {
            return List.copyOf(out);
          }
        }
      } catch (CallFailed e) {
        if (attempt >= LIST_TRIES || e.getCause() == null
            || CsiOutcome.code(e.getCause()).orElse(null) != StatusCode.ABORTED) {
          throw e;
        }
        log.info("cluster controller: {} ABORTED at a token ({}): started over from the first page", what,
            e.getMessage());
      }
    }
  }
}
