package dev.csisupervisor.mockplugin;

import dev.csisupervisor.mockplugin.CloudFile.State;
import dev.csisupervisor.mockplugin.CloudReport.Count;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The shared cloud's oracle ({@link SharedCloud}): node plugins record in the cloud file what they have staged and
 * published, per (disk, node, path); it counts what a correct CO never does ({@link Count}: a single-node disk
 * attached to a second node, a detach from a node that still has the disk staged or published, a controller call
 * from a deposed controller agent by the election revision its {@link Caller} headers carry), in the file, so the
 * counts survive plugin restarts; {@link #report()} reads them with everything else. Thread-safe (the file's lock).
 */
final class CloudOracle {
  private final CloudFile file;

  CloudOracle(CloudFile file) {
    this.file = file;
  }

  /** Counts an attachment of a single-node disk to a second node (refused by the cloud all the same). */
  static void doubleAttach(State s, String what) {
    s.count(Count.DOUBLE_ATTACH, what);
  }

  /** Counts a detach from a node that still has the disk staged or published (done all the same, as a cloud would). */
  static void detached(State s, String id, String node) {
    if (s.inUse(id, node)) {
      s.count(Count.DETACH_IN_USE, "disk '" + id + "' detached from node '" + node + "' which has it "
          + describeUse(s, id, node));
    }
  }

  private static String describeUse(State s, String id, String node) {
    List<String> parts = new ArrayList<>();
    Set<String> st = s.staged.getOrDefault(id, Map.of()).getOrDefault(node, Set.of());
    Set<String> pu = s.published.getOrDefault(id, Map.of()).getOrDefault(node, Set.of());
    if (!st.isEmpty()) {
      parts.add("staged at " + st);
    }
    if (!pu.isEmpty()) {
      parts.add("published at " + pu);
    }
    return String.join(" and ", parts);
  }

  /**
   * The node plugin of {@code node} has (or, {@code on} false, no longer has) the disk staged or published at
   * {@code path}.
   */
  void recordNodeUse(SharedCloud.NodeUse use, String id, String node, String path, boolean on) {
    file.locked(s -> {
      Map<String, Map<String, Set<String>>> uses = use == SharedCloud.NodeUse.STAGED ? s.staged : s.published;
      if (on) {
        uses.computeIfAbsent(id, k -> new LinkedHashMap<>()).computeIfAbsent(node, k -> new LinkedHashSet<>())
            .add(path);
      } else {
        Map<String, Set<String>> nodes = uses.get(id);
        if (nodes != null && nodes.containsKey(node)) {
          nodes.get(node).remove(path);
          if (nodes.get(node).isEmpty()) {
            nodes.remove(node);
          }
          if (nodes.isEmpty()) {
            uses.remove(id);
          }
        }
      }
      return null;
    });
  }

  /**
   * A controller call of {@code method} to the plugin named {@code plugin} from {@code caller}: the first of a
   * higher election revision than any before is remembered as the plugin's controller; one of a lower revision, or
   * of the same revision from another agent, is counted ({@link Count#DEPOSED_CONTROLLER_CALL}).
   */
  void controllerCall(String plugin, Caller caller, String method) {
    file.locked(s -> {
      CloudReport.Election seen = s.elections.get(plugin);
      if (seen == null || caller.electionRevision() > seen.revision()) {
        s.elections.put(plugin, new CloudReport.Election(plugin, caller.electionRevision(), caller.agentNodeId()));
      } else if (caller.electionRevision() < seen.revision()
          || !caller.agentNodeId().equals(seen.agentNodeId())) {
        s.count(Count.DEPOSED_CONTROLLER_CALL, method + " to plugin '" + plugin + "' from agent '"
            + caller.agentNodeId() + "' at election revision " + caller.electionRevision() + " after agent '"
            + seen.agentNodeId() + "' called at revision " + seen.revision());
      }
      return null;
    });
  }

  /** Everything the cloud holds and has counted, read under the lock. */
  CloudReport report() {
    return file.locked(s -> {
      List<CloudReport.Attachment> attachments = new ArrayList<>();
      s.attached.forEach((id, nodes) -> nodes.forEach((node, multi) ->
          attachments.add(new CloudReport.Attachment(id, node, multi))));
      List<String> violations = new ArrayList<>();
      s.violations.forEach(v -> violations.add(v[0] + ": " + v[1]));
      return new CloudReport(file.path(), s.counts, attachments, uses(s.staged), uses(s.published),
          List.copyOf(s.elections.values()), violations);
    });
  }

  private static List<CloudReport.NodeUse> uses(Map<String, Map<String, Set<String>>> uses) {
    List<CloudReport.NodeUse> out = new ArrayList<>();
    uses.forEach((id, nodes) -> nodes.forEach((node, paths) -> paths.forEach(p ->
        out.add(new CloudReport.NodeUse(id, node, p)))));
    return out;
  }
}
