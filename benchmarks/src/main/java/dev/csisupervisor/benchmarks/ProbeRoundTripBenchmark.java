package dev.csisupervisor.benchmarks;

import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiException;
import dev.csisupervisor.client.ProbeResult;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * Benchmark 6: one CSI {@code Identity.Probe} over a unix socket to a {@link MockCsiPlugin} in the
 * same JVM (its own one-thread epoll loop; the client's shared epoll loop), blocking on the result.
 * {@code warm}: one channel, connected before measuring — the floor under every supervision probe.
 * {@code cold}: a new {@link CsiClient} per invocation, so the measured call includes the unix
 * connect and the HTTP/2 handshake; creating the client (no I/O) and closing it are outside the
 * measurement.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ProbeRoundTripBenchmark {

  private Path dir;
  private Path socket;
  private MockCsiPlugin plugin;
  private CsiClient warmClient;

  @Setup(Level.Trial)
  public void setUp() throws IOException, CsiException {
    dir = Files.createTempDirectory("csi-bench-probe-");
    socket = dir.resolve("csi.sock");
    plugin = MockCsiPlugin.builder().socket(socket).mode(MockMode.NODE).start();
    warmClient = CsiClient.create(socket);
    if (!warmClient.probe().ready()) {
      throw new IllegalStateException("mock plugin is not ready");
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    warmClient.close();
    plugin.stop();
    Fixtures.deleteRecursively(dir);
  }

  @Benchmark
  public ProbeResult warm() throws CsiException {
    return warmClient.probe();
  }

  /** A client that has not connected yet, made fresh for every invocation. */
  @State(Scope.Thread)
  public static class ColdClient {
    CsiClient client;

    @Setup(Level.Invocation)
    public void open(ProbeRoundTripBenchmark b) throws CsiException {
      client = CsiClient.create(b.socket);
    }

    @TearDown(Level.Invocation)
    public void close() {
      client.close();
    }
  }

  @Benchmark
  public ProbeResult cold(ColdClient c) throws CsiException {
    return c.client.probe();
  }
}
