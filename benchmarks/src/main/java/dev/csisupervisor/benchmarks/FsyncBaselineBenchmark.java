package dev.csisupervisor.benchmarks;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Calibration for benchmark 2: one 4 KiB write + {@code fsync} to a file in the same temp
 * directory the durable-store benchmarks use. A durable change costs one such write + fsync, so this is the
 * floor to read the registry change cost against — on a shared machine it moves with the other
 * jobs' disk traffic.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class FsyncBaselineBenchmark {
  private Path dir;
  private FileChannel channel;
  private final ByteBuffer page = ByteBuffer.allocateDirect(4096);
  private long position;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    dir = Files.createTempDirectory("csi-bench-fsync-");
    channel = FileChannel.open(dir.resolve("fsync.bin"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    channel.close();
    Fixtures.deleteRecursively(dir);
  }

  @Benchmark
  public long writeAndFsync() throws IOException {
    page.clear();
    channel.write(page, position);
    position = (position + 4096) % (64L * 1024 * 1024);
    channel.force(true);
    return position;
  }
}
