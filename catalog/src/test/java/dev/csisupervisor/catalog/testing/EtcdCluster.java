package dev.csisupervisor.catalog.testing;

import dev.csisupervisor.catalog.etcdpb.ClusterGrpc;
import dev.csisupervisor.catalog.etcdpb.MaintenanceGrpc;
import dev.csisupervisor.catalog.etcdpb.MemberAddRequest;
import dev.csisupervisor.catalog.etcdpb.MemberListRequest;
import dev.csisupervisor.catalog.etcdpb.MemberRemoveRequest;
import dev.csisupervisor.catalog.etcdpb.StatusRequest;
import dev.csisupervisor.catalog.etcdpb.StatusResponse;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A real etcd cluster of several members on loopback for tests and benchmarks: each member its own data
 * directory, client, peer and metrics ports, a child process started, stopped, paused (SIGSTOP), resumed
 * (SIGCONT) and killed (SIGKILL) by its pid. Members can be removed and added while clients run. Not
 * thread-safe (one test drives it). {@code /usr/bin/etcd} (Debian's etcd-server) or {@code $ETCD_BIN}.
 */
public final class EtcdCluster implements AutoCloseable {
  private static final long HEALTHY_WITHIN_SECONDS = 30;

  private final Path binary;
  private final Path dir;
  private final List<Member> members = new ArrayList<>();
  private int nextName;

  /** One member: its name, ports and data directory; its process while it runs. */
  public static final class Member {
    private final String name;
    private final int clientPort;
    private final int peerPort;
    private final int metricsPort;
    private final Path dataDir;
    private Process process;
    private boolean paused;

    private Member(String name, Path dataDir) throws IOException {
      this.name = name;
      this.clientPort = EtcdProcess.freePort();
      this.peerPort = EtcdProcess.freePort();
      this.metricsPort = EtcdProcess.freePort();
      this.dataDir = dataDir;
    }

    public String name() {
      return name;
    }

    public String endpoint() {
      return "http://127.0.0.1:" + clientPort;
    }

    String peerUrl() {
      return "http://127.0.0.1:" + peerPort;
    }

    public long pid() {
      return process.pid();
    }

    public boolean running() {
      return process != null && process.isAlive();
    }

    /** Running and not paused: it may answer. */
    public boolean answering() {
      return running() && !paused;
    }

    @Override
    public String toString() {
      return name + "(" + endpoint() + (running() ? ", pid " + process.pid() + (paused ? ", paused" : "") : ", down") + ")";
    }
  }

  private EtcdCluster(Path binary, Path dir) {
    this.binary = binary;
    this.dir = dir;
  }

  /**
   * Starts a new cluster of {@code size} members under {@code parent}; returns once every member is healthy.
   * Skips the calling test when etcd is not installed.
   */
  public static EtcdCluster start(Path parent, int size) throws IOException {
    return start(EtcdProcess.assumeInstalled(), parent, size);
  }

  /** {@link #start(Path, int)} with this etcd binary (for the benchmarks, which have no test to skip). */
  public static EtcdCluster start(Path binary, Path parent, int size) throws IOException {
    // Ports are found free a moment before etcd binds them; one taken meanwhile makes the cluster again.
    return EtcdProcess.onFreePorts(() -> {
      EtcdCluster c = new EtcdCluster(binary, Files.createTempDirectory(parent, "etcd-cluster"));
      try {
        for (int i = 0; i < size; i++) {
          c.members.add(c.newMember());
        }
        String initial = c.members.stream().map(m -> m.name + "=" + m.peerUrl()).collect(Collectors.joining(","));
        for (Member m : c.members) {
          c.launch(m, initial, "new");
        }
        c.awaitHealthy(c.members);
        return c;
      } catch (IOException | RuntimeException failed) {
        c.close();
        throw failed;
      }
    });
  }

  private Member newMember() throws IOException {
    String name = "m" + nextName++;
    return new Member(name, Files.createDirectories(dir.resolve(name)));
  }

  private void launch(Member m, String initialCluster, String state) throws IOException {
    List<String> cmd = List.of(binary.toString(), "--name", m.name, "--data-dir", m.dataDir.resolve("data").toString(),
        "--listen-client-urls", m.endpoint(), "--advertise-client-urls", m.endpoint(),
        "--listen-peer-urls", m.peerUrl(), "--initial-advertise-peer-urls", m.peerUrl(),
        "--listen-metrics-urls", "http://127.0.0.1:" + m.metricsPort,
        "--initial-cluster", initialCluster, "--initial-cluster-state", state,
        "--initial-cluster-token", dir.getFileName().toString(), "--log-level", "warn",
        // Members may be removed and added at once: etcd's check wants each connected for 5 s first.
        "--strict-reconfig-check=false");
    m.process = new ProcessBuilder(cmd)
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(m.dataDir.resolve("etcd.log").toFile()))
        .start();
    m.paused = false;
  }

  /** Every member ever started here that has not been removed, in order. */
  public List<Member> members() {
    return List.copyOf(members);
  }

  public Member member(int i) {
    return members.get(i);
  }

  /** The client URLs of the current members, comma-separated. */
  public String endpoints() {
    return members.stream().map(Member::endpoint).collect(Collectors.joining(","));
  }

  /** The leader as an answering member sees it (asked in turn); empty while there is none. */
  public Optional<Member> leader() {
    for (Member m : members) {
      if (!m.answering()) {
        continue;
      }
      Optional<StatusResponse> s = status(m);
      if (s.isPresent() && s.get().getLeader() != 0) {
        long leaderId = s.get().getLeader();
        for (Member c : members) {
          if (c.answering() && status(c).map(x -> x.getHeader().getMemberId() == leaderId).orElse(false)) {
            return Optional.of(c);
          }
        }
      }
    }
    return Optional.empty();
  }

  private static Optional<StatusResponse> status(Member m) {
    ManagedChannel ch = channel(m);
    try {
      return Optional.of(MaintenanceGrpc.newBlockingStub(ch).withDeadlineAfter(1, TimeUnit.SECONDS)
          .status(StatusRequest.getDefaultInstance()));
    } catch (StatusRuntimeException e) {
      return Optional.empty();
    } finally {
      ch.shutdownNow();
    }
  }

  private static ManagedChannel channel(Member m) {
    return Grpc.newChannelBuilderForAddress("127.0.0.1", m.clientPort, InsecureChannelCredentials.create()).build();
  }

  /** SIGKILL by pid; waits for the exit. */
  public void kill(Member m) {
    if (!m.running()) {
      return;
    }
    m.process.destroyForcibly();
    waitFor(m);
  }

  /** SIGTERM by pid (SIGCONT first if paused); waits for the exit. */
  public void stop(Member m) {
    if (!m.running()) {
      return;
    }
    if (m.paused) {
      resume(m);
    }
    m.process.destroy();
    try {
      if (!m.process.waitFor(5, TimeUnit.SECONDS)) {
        m.process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      m.process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
    waitFor(m);
  }

  private static void waitFor(Member m) {
    try {
      if (!m.process.waitFor(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException(m + " did not exit");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted waiting for " + m, e);
    }
    m.paused = false;
  }

  /** SIGSTOP: the process stays, its sockets stay open, it answers nothing. */
  public void pause(Member m) {
    signal(m, "STOP");
    m.paused = true;
  }

  /** SIGCONT after {@link #pause}. */
  public void resume(Member m) {
    signal(m, "CONT");
    m.paused = false;
  }

  private static void signal(Member m, String signal) {
    if (!m.running()) {
      throw new IllegalStateException(m + " is not running");
    }
    try {
      Process p = new ProcessBuilder("kill", "-s", signal, Long.toString(m.pid())).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      if (!p.waitFor(5, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException("kill -s " + signal + " " + m.pid() + " failed: " + out);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /**
   * Starts stopped members again with their data (they rejoin); returns once every given member is healthy,
   * which needs a quorum: restart together the members that make one.
   */
  public void restart(Member... ms) throws IOException {
    for (Member m : ms) {
      if (m.running()) {
        throw new IllegalStateException(m + " is running");
      }
      // Its data directory knows the cluster: the initial flags are ignored, but etcd wants them consistent.
      launch(m, initialCluster(), "existing");
    }
    awaitHealthy(List.of(ms));
  }

  private String initialCluster() {
    return members.stream().map(m -> m.name + "=" + m.peerUrl()).collect(Collectors.joining(","));
  }

  /**
   * Removes {@code m} from the cluster through another member (etcd's MemberRemove), then stops its process; first
   * waits until every other member is healthy. The members run with etcd's own check of that off
   * ({@code --strict-reconfig-check=false}): without this wait, removing one of three while another is down (exited,
   * or not answering yet) leaves two members of which one is down, a cluster without a quorum that no client can
   * write to, whatever it does.
   *
   * @throws IOException if another member exited or is not healthy within 30 s (with its log's tail)
   */
  public void remove(Member m) throws IOException {
    awaitHealthy(members.stream().filter(x -> x != m).toList());
    Member via = members.stream().filter(x -> x != m && x.answering()).findFirst()
        .orElseThrow(() -> new IllegalStateException("no other member answers"));
    ManagedChannel ch = channel(via);
    try {
      var cluster = ClusterGrpc.newBlockingStub(ch).withDeadlineAfter(HEALTHY_WITHIN_SECONDS, TimeUnit.SECONDS);
      long id = cluster.memberList(MemberListRequest.getDefaultInstance()).getMembersList().stream()
          .filter(x -> x.getName().equals(m.name)).findFirst()
          .orElseThrow(() -> new IllegalStateException(m + " is not a member")).getID();
      reconfigure(() -> cluster.memberRemove(MemberRemoveRequest.newBuilder().setID(id).build()));
    } finally {
      ch.shutdownNow();
    }
    members.remove(m);
    stop(m); // a removed member shuts itself down; this makes sure and waits
  }

  /**
   * Adds a new member (etcd's MemberAdd, then its process with {@code --initial-cluster-state existing});
   * returns it once it is healthy.
   */
  public Member add() throws IOException {
    return add(reserve());
  }

  /**
   * A member that is not started yet, with its ports reserved: its endpoint can be given to clients before
   * {@link #add(Member)} starts it.
   */
  public Member reserve() throws IOException {
    return newMember();
  }

  /** Adds a member made by {@link #reserve()}. */
  public Member add(Member m) throws IOException {
    Member via = members.stream().filter(Member::answering).findFirst()
        .orElseThrow(() -> new IllegalStateException("no member answers"));
    ManagedChannel ch = channel(via);
    try {
      var cluster = ClusterGrpc.newBlockingStub(ch).withDeadlineAfter(HEALTHY_WITHIN_SECONDS, TimeUnit.SECONDS);
      reconfigure(() -> cluster.memberAdd(MemberAddRequest.newBuilder().addPeerURLs(m.peerUrl()).build()));
    } finally {
      ch.shutdownNow();
    }
    members.add(m);
    launch(m, initialCluster(), "existing");
    awaitHealthy(List.of(m));
    return m;
  }

  /**
   * Runs a membership change, again while etcd refuses it as "unhealthy cluster": its strict reconfiguration
   * check wants every member connected for a few seconds first (a fresh cluster, or one just changed).
   */
  private static void reconfigure(Runnable change) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HEALTHY_WITHIN_SECONDS);
    while (true) {
      try {
        change.run();
        return;
      } catch (StatusRuntimeException e) {
        String d = String.valueOf(e.getStatus().getDescription());
        if (!d.contains("unhealthy cluster") || System.nanoTime() > deadline) {
          throw e;
        }
      }
      try {
        TimeUnit.MILLISECONDS.sleep(200); // a retry pace, not a wait for a condition
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted", ie);
      }
    }
  }

  /** Waits until each member's {@code /health} says true (it has a leader and a quorum read works). */
  public void awaitHealthy(List<Member> ms) throws IOException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HEALTHY_WITHIN_SECONDS);
    for (Member m : ms) {
      while (!healthy(m)) {
        if (!m.running()) {
          throw new IOException(m + " exited with " + m.process.exitValue() + "; see " + log(m) + ":\n" + tail(m));
        }
        if (System.nanoTime() > deadline) {
          throw new IOException(m + " not healthy within " + HEALTHY_WITHIN_SECONDS + " s; see " + log(m) + ":\n"
              + tail(m));
        }
        try {
          m.process.waitFor(50, TimeUnit.MILLISECONDS);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted", ie);
        }
      }
    }
  }

  /** Every current member healthy. */
  public void awaitHealthy() throws IOException {
    awaitHealthy(members);
  }

  private static Path log(Member m) {
    return m.dataDir.resolve("etcd.log");
  }

  private static String tail(Member m) {
    return EtcdProcess.tail(log(m));
  }

  private static boolean healthy(Member m) {
    return m.answering() && EtcdProcess.healthy(m.metricsPort);
  }

  /** Kills every member still running (SIGCONT first for a paused one, so SIGKILL is not queued behind it). */
  @Override
  public void close() {
    for (Member m : members) {
      if (m.running()) {
        if (m.paused) {
          try {
            resume(m);
          } catch (RuntimeException ignored) {
            // SIGKILL works on a stopped process anyway
          }
        }
        m.process.destroyForcibly();
      }
    }
    for (Member m : members) {
      if (m.process != null) {
        try {
          m.process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }
}
