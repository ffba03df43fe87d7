package dev.csisupervisor.state;

import static dev.csisupervisor.state.StateStoreContractTest.bytes;

import dev.csisupervisor.state.PowerCutIo.Expectation;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * A store driven through a {@link PowerCutIo}, keeping the model of what it acknowledged and telling the recorder,
 * around each call, what a power cut may leave: before a call, the state before or after it; after it returns, the
 * new state; after it fails, the old one. Background work runs after each call. For tests; not thread-safe.
 */
final class PowerCutRun {
  final Path data;
  final PowerCutIo io;
  final JournalStateStore.Options options;
  private JournalStateStore store;
  private Map<String, String> acknowledged = new HashMap<>();
  private int commits;
  private int failures;
  private Path[] deleted = new Path[0];

  /**
   * Records from now on under {@code root} (the data directory is {@code root/data}).
   *
   * @param acknowledged the records already durable there
   */
  PowerCutRun(Path root, JournalStateStore.Options options, Map<String, String> acknowledged) throws IOException {
    this(root, options, acknowledged, false);
  }

  /** As above; with {@code ownThreads}, the store's background work runs on its own threads, when it will. */
  PowerCutRun(Path root, JournalStateStore.Options options, Map<String, String> acknowledged, boolean ownThreads)
      throws IOException {
    this.data = root.resolve("data");
    this.io = new PowerCutIo(Files.createDirectories(root), ownThreads);
    this.options = options;
    this.acknowledged = new HashMap<>(acknowledged);
  }

  /** From now on, a power cut must not bring these paths (relative to the root) back: they were deleted durably. */
  void deletedForGood(Path... paths) {
    deleted = paths;
    expect(Expectation.exactly("deleted " + List.of(paths), acknowledged));
  }

  private void expect(Expectation e) {
    io.expect(e.withAbsent(deleted));
  }

  Map<String, String> acknowledged() {
    return Map.copyOf(acknowledged);
  }

  int failures() {
    return failures;
  }

  JournalStateStore store() {
    return store;
  }

  /** Opens the store; a power cut during the open must leave the acknowledged state ({@code during} may widen it). */
  void open(Expectation during) {
    expect(during);
    store = JournalStateStore.open(data, options, io);
    io.runBackground();
    expect(Expectation.exactly("opened", acknowledged));
  }

  void open() {
    open(Expectation.exactly("opening", acknowledged));
  }

  /** Applies one batch; returns whether it was acknowledged. */
  boolean commit(List<StateChange> changes) {
    Map<String, String> after = new HashMap<>(acknowledged);
    for (StateChange c : changes) {
      if (c instanceof StateChange.Put p) {
        after.put(p.key(), new String(p.value(), java.nio.charset.StandardCharsets.UTF_8));
      } else {
        after.remove(c.key());
      }
    }
    commits++;
    expect(Expectation.either("commit " + commits + " in flight", acknowledged, after));
    boolean ok;
    try {
      store.apply(changes);
      acknowledged = after;
      ok = true;
    } catch (StateStoreException e) {
      failures++;
      ok = false;
    }
    expect(Expectation.exactly((ok ? "commit " + commits + " acknowledged" : "commit " + commits + " failed"),
        acknowledged));
    io.runBackground();
    return ok;
  }

  /** {@code count} random batches of 1 to 4 puts and deletes over 40 keys, values of 1 to 900 bytes. */
  void randomCommits(Random random, int count) {
    for (int i = 0; i < count; i++) {
      List<StateChange> batch = new ArrayList<>();
      int size = 1 + random.nextInt(random.nextInt(4) == 0 ? 4 : 1);
      for (int j = 0; j < size; j++) {
        String key = "plugin/p" + random.nextInt(40);
        if (random.nextInt(6) == 0) {
          batch.add(new StateChange.Delete(key));
        } else {
          batch.add(new StateChange.Put(key, bytes("v" + commits + "." + j + " " + "abcdefgh".repeat(
              random.nextInt(random.nextInt(8) == 0 ? 112 : 16)))));
        }
      }
      commit(batch);
    }
  }

  /** Closes the store (its final checkpoint): a power cut during it must leave the acknowledged state. */
  void close() {
    expect(Expectation.exactly("closing", acknowledged));
    store.close();
    expect(Expectation.exactly("closed", acknowledged));
  }
}
