package dev.csisupervisor.benchmarks;

import dev.csisupervisor.state.GroupCommitStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Benchmark 9b: commit latency of the journal store through the node's group commit ({@link GroupCommitStore}, as
 * the agent writes), by 1 writer (each roll's cost shows in the tail) and by 16 writers (sharing commits), and by 16
 * writers straight on the journal (contending for its lock, as before the group commit), for long enough to roll at least 20 segments (each roll takes a segment the pipeline prepared in the background), p50/p99/p99.9/max; beside the
 * same run's bare fsync: one thread writing the same bytes into a preallocated file and forcing it, the floor of
 * any durable commit on this disk. Each way runs once, shorter and unmeasured, before the measured runs (the JIT).
 */
final class JournalRoll {
  private static final int WRITERS = 16;
  private static final int VALUE_BYTES = 1024;

  private JournalRoll() {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    long segmentBytes = 1L << 20;
    int segments = quick ? 20 : 40;
    int puts = (int) (segments * segmentBytes / (VALUE_BYTES + 64)) + 1000;
    System.out.println(Env.describe());
    Path dir = Files.createTempDirectory("csi-bench-roll-");
    try {
      long[] fsync = bareFsync(dir.resolve("bare"), Math.min(puts, 4000), VALUE_BYTES + 64);
      Stats f = new Stats(fsync);
      int[][] runs = {{1, 1}, {WRITERS, 1}, {WRITERS, 0}};
      // Each way once unmeasured first: on two CPUs the JIT's compiler threads took a third to half of a CPU during
      // the first (0.7 s) measured run of sixteen writers, and its committing thread queued behind them.
      int warmUp = puts / 4;
      for (int[] run : runs) {
        commits(dir.resolve("warm-up-" + run[0] + "-" + run[1]), run[0], run[1] == 1, warmUp, segmentBytes,
            new long[warmUp], new ArrayList<>());
      }
      for (int[] run : runs) {
        int writers = run[0];
        boolean grouped = run[1] == 1;
        long[] commit = new long[puts];
        List<TimelineStore.Commit> applies = new ArrayList<>();
        double seconds = commits(dir.resolve("data-" + writers + "-" + grouped), writers, grouped, puts,
            segmentBytes, commit, applies);
        Stats c = new Stats(commit);
        Stats a = new Stats(applies.stream().mapToLong(x -> x.end() - x.start()).toArray());
        System.out.printf(Locale.ROOT, "RESULT journal-roll commit %d writer(s) %s | %d puts of %d B, 1 MiB segments"
            + " (%d+ rolls) in %.1f s = %.0f puts/s | a put: p50 %s ms, p99 %s ms, p99.9 %s ms, max %s ms | %d"
            + " journal commits, each: p50 %s ms, p99 %s ms, p99.9 %s ms, max %s ms |"
            + " reference bare fsync: p50 %s ms, p99 %s ms, p99.9 %s ms, max %s ms%n", writers,
            grouped ? "through the group commit" : "straight on the journal", puts, VALUE_BYTES, segments, seconds,
            puts / seconds, Stats.ms(c.p50()), Stats.ms(c.p99()), Stats.ms(c.percentile(99.9)), Stats.ms(c.max()),
            applies.size(), Stats.ms(a.p50()), Stats.ms(a.p99()), Stats.ms(a.percentile(99.9)), Stats.ms(a.max()),
            Stats.ms(f.p50()), Stats.ms(f.p99()), Stats.ms(f.percentile(99.9)), Stats.ms(f.max()));
      }
    } finally {
      Fixtures.deleteRecursively(dir);
    }
  }

  /**
   * {@code puts} puts by {@code writers} threads, through a group commit or not; each one's latency into
   * {@code commit}, every journal commit's start and end into {@code applies}; returns seconds.
   */
  private static double commits(Path data, int writers, boolean grouped, int puts, long segmentBytes, long[] commit,
      List<TimelineStore.Commit> applies) throws InterruptedException {
    AtomicInteger next = new AtomicInteger();
    byte[] value = new byte[VALUE_BYTES];
    long started = System.nanoTime();
    TimelineStore journal = new TimelineStore(JournalStateStore.open(data,
        JournalStateStore.Options.defaults().withSegmentBytes(segmentBytes)));
    try (StateStore store = grouped ? GroupCommitStore.over(journal) : journal) {
      CountDownLatch done = new CountDownLatch(writers);
      for (int w = 0; w < writers; w++) {
        Thread t = new Thread(() -> {
          for (int i; (i = next.getAndIncrement()) < puts; ) {
            long t0 = System.nanoTime();
            store.put("plugin/" + (i % 5000), value);
            commit[i] = System.nanoTime() - t0;
          }
          done.countDown();
        }, "writer-" + w);
        t.start();
      }
      done.await();
    }
    applies.addAll(journal.take());
    return (System.nanoTime() - started) / 1e9;
  }

  /** One writer: {@code bytes} written at the next offset of a preallocated file, then force(false); each time. */
  static long[] bareFsync(Path file, int n, int bytes) throws Exception {
    return bareFsync(file, n, bytes, 0);
  }

  /**
   * {@code n} bare fsyncs as {@link #bareFsync(Path, int, int)}, each {@code pauseNanos} after the one before
   * started (0: back to back): the reference for changes made at that pace, which wake an idle thread, CPU and
   * disk each time.
   */
  static long[] bareFsync(Path file, int n, int bytes, long pauseNanos) throws Exception {
    long[] out = new long[n];
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      ByteBuffer zeros = ByteBuffer.allocateDirect(bytes * n);
      ch.write(zeros, 0);
      ch.force(true);
      ByteBuffer frame = ByteBuffer.allocateDirect(bytes);
      long start = System.nanoTime();
      for (int i = 0; i < n; i++) {
        if (pauseNanos > 0) {
          java.util.concurrent.locks.LockSupport.parkNanos(start + i * pauseNanos - System.nanoTime());
        }
        long t0 = System.nanoTime();
        frame.clear();
        ch.write(frame, (long) i * bytes);
        ch.force(false);
        out[i] = System.nanoTime() - t0;
      }
    }
    return out;
  }
}
