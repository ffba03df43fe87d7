package dev.csisupervisor.benchmarks;

import dev.csisupervisor.agent.cluster.ClusterController;
import dev.csisupervisor.agent.config.ClusterConfig;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeRequest.Kind;
import dev.csisupervisor.catalog.ClusterVolumeRequest.State;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumeSource;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ContentSource;
import dev.csisupervisor.client.CreateSnapshotRequest;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiSnapshot;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.ForwardingCsiClient;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumePage;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * The controller agent's snapshot and restore requests (issue 37), each beside a reference measured in the same run,
 * on a real three-member etcd ({@link EtcdCluster}) with the mock plugin as a cloud ({@code --cloud FILE}) and the
 * production settings: a {@link ClusterController} as {@code ClusterNode} makes it (rounds every second and at once on
 * the etcd watch's hint, {@link ClusterController.RequestRetry#DEFAULT}: 1 s doubling to 1 min, call timeout the
 * etcd request timeout × 6), the agent's default lease TTL ({@link ClusterConfig#DEFAULT_LEASE_TTL}).
 *
 * <ol>
 *   <li>a snapshot asked to DONE, the mock ready at once, beside the bare CreateSnapshot RPC to the same mock;</li>
 *   <li>a snapshot asked to DONE, the mock ready 2 s after the cut, beside the 2 s;</li>
 *   <li>a create from a snapshot asked to DONE, beside the bare CreateVolume-from-snapshot RPC;</li>
 *   <li>the controller agent (a child JVM, its own mock on the same cloud file, a cut taking 3 s) killed with SIGKILL
 *       once the request shows its attempt started: the successor (in this JVM, running, not leading) finishes it;
 *       kill to DONE beside the lease TTL and the cut time, and the cloud holds exactly one snapshot of the name.</li>
 *   <li>a check round (health and capacity, {@link ClusterController#checkEvery}) over 1 000 volumes (full: and 5 000)
 *       with nothing changed: its time, etcd writes (goal 0) and etcd requests, beside the bare ListVolumes of all of
 *       them (paged as the check pages) and the first check after they were registered.</li>
 * </ol>
 * A request's DONE is seen as the CLI's side sees it, through its own {@link ClusterVolumes} client, here woken by the
 * watch (the CLI's {@code --wait} reads every 200 ms instead). Args: {@code quick|full [N] [KILLS]} (quick: 10
 * samples, 2 kills per TTL, 10 checks; full: 50, 5, 20).
 */
final class ClusterRequests {
  private static final String PLUGIN = "cloudy";
  private static final Set<String> CAPABILITIES = Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME",
      "CREATE_DELETE_SNAPSHOT", "CLONE_VOLUME", "MODIFY_VOLUME", "LIST_SNAPSHOTS");
  private static final ClusterVolumeRequest.Spec RWO = new ClusterVolumeRequest.Spec(1 << 20, 0,
      Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of());
  /** A create from a source: no size (the source's). */
  private static final ClusterVolumeRequest.Spec NO_SIZE = new ClusterVolumeRequest.Spec(0, 0,
      Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of());
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final Duration CUT = Duration.ofSeconds(3);
  private static final Duration NOT_READY = Duration.ofSeconds(2);
  private static final int WARM_UP = 3;

  private ClusterRequests() {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    int n = args.length > 1 ? Integer.parseInt(args[1]) : (quick ? 10 : 50);
    int kills = args.length > 2 ? Integer.parseInt(args[2]) : (quick ? 2 : 5);
    int slow = quick ? 3 : 5;
    System.out.println(Env.describe());
    var etcdBin = dev.csisupervisor.catalog.testing.EtcdProcess.binary();
    if (etcdBin.isEmpty()) {
      System.out.println("RESULT cluster-requests | SKIPPED: no etcd (/usr/bin/etcd or $ETCD_BIN; apt-get install etcd-server)");
      return;
    }
    Path tmp = Files.createTempDirectory("cluster-requests");
    try (EtcdCluster etcd = EtcdCluster.start(etcdBin.get(), tmp, 3)) {
      EtcdOptions options = EtcdOptions.of(etcd.endpoints().split(","));
      Duration ttl = ClusterConfig.DEFAULT_LEASE_TTL;
      System.out.printf(Locale.ROOT, ">>> etcd: 3 members; lease TTL %d s (the agent's default), rounds every 1 s and on"
          + " the watch's hint, retry %s%n", ttl.toSeconds(), ClusterController.RequestRetry.DEFAULT);
      readyAtOnce(tmp, options, ttl, n);
      readyLater(tmp, options, ttl, slow);
      for (int volumes : quick ? List.of(1000) : List.of(1000, 5000)) {
        checkRound(tmp, options, ttl, volumes, quick ? 10 : 20);
      }
      for (Duration t : List.of(ttl, Duration.ofSeconds(2))) {
        killed(tmp, options, t, kills);
      }
    } finally {
      try (var walk = Files.walk(tmp)) {
        walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  /** Figures 1 and 3: snapshots and restores of a mock ready at once, each beside its bare RPC (interleaved). */
  private static void readyAtOnce(Path tmp, EtcdOptions options, Duration ttl, int n) throws Exception {
    String prefix = "/requests-now";
    Path cloud = tmp.resolve("cloud-now");
    try (Agent agent = Agent.start(tmp.resolve("now"), "n0", options, prefix, cloud, ttl, b -> b);
        Asker cli = new Asker(options, prefix)) {
      agent.awaitLeading();
      String source = cli.create("source", RWO).volumeId();
      long[] bareSnap = new long[n];
      long[] askedSnap = new long[n];
      long[] askOnly = new long[n];
      String firstSnapshot = null;
      long[] requestsBefore = new long[2];
      for (int i = -WARM_UP; i < n; i++) {
        if (i == 0) {
          requestsBefore[0] = agent.volumes.etcdRequests();
          requestsBefore[1] = cli.volumes.etcdRequests();
        }
        long s = System.nanoTime();
        agent.plugin.createSnapshotAsync(new CreateSnapshotRequest(source, "bare-snap-" + i, Map.of(), Secrets.none()))
            .get(30, TimeUnit.SECONDS);
        long rpc = System.nanoTime() - s;
        s = System.nanoTime();
        cli.volumes.ask(ClusterVolumeRequest.snapshot(PLUGIN, "snap-" + i, source, Map.of(), Optional.empty(),
            Instant.now()));
        long asked = System.nanoTime() - s;
        ClusterVolumeRequest done = cli.awaitDone(Kind.SNAPSHOT, "snap-" + i);
        long total = System.nanoTime() - s;
        if (i >= 0) {
          bareSnap[i] = rpc;
          askedSnap[i] = total;
          askOnly[i] = asked;
        }
        if (firstSnapshot == null) {
          firstSnapshot = done.volumeId();
        }
      }
      Stats bare = new Stats(bareSnap);
      Stats asked = new Stats(askedSnap);
      System.out.printf(Locale.ROOT, "RESULT cluster-requests snapshot | asked -> DONE, mock ready at once, n=%d | p50 %s"
          + " ms, p99 %s ms (the ask's own etcd txn p50 %s ms; etcd requests per snapshot: controller agent %.1f, asker"
          + " %.1f) | reference: bare CreateSnapshot RPC to the same mock p50 %s ms, p99 %s ms%n", n,
          Stats.ms(asked.p50()), Stats.ms(asked.p99()), Stats.ms(new Stats(askOnly).p50()),
          (agent.volumes.etcdRequests() - requestsBefore[0]) / (double) n,
          (cli.volumes.etcdRequests() - requestsBefore[1]) / (double) n, Stats.ms(bare.p50()), Stats.ms(bare.p99()));

      long[] bareRestore = new long[n];
      long[] askedRestore = new long[n];
      for (int i = -WARM_UP; i < n; i++) {
        long s = System.nanoTime();
        agent.plugin.createVolumeAsync(new CreateVolumeRequest("bare-restore-" + i, Optional.empty(),
            List.of(VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER)), Map.of(), Secrets.none())
            .withContentSource(ContentSource.snapshot(firstSnapshot))).get(30, TimeUnit.SECONDS);
        long rpc = System.nanoTime() - s;
        s = System.nanoTime();
        cli.create("restore-" + i, NO_SIZE.from(VolumeSource.snapshot(firstSnapshot)));
        long total = System.nanoTime() - s;
        if (i >= 0) {
          bareRestore[i] = rpc;
          askedRestore[i] = total;
        }
      }
      Stats bareR = new Stats(bareRestore);
      Stats askedR = new Stats(askedRestore);
      System.out.printf(Locale.ROOT, "RESULT cluster-requests restore | create --from-snapshot asked -> DONE, n=%d | p50"
          + " %s ms, p99 %s ms | reference: bare CreateVolume-from-snapshot RPC p50 %s ms, p99 %s ms%n", n,
          Stats.ms(askedR.p50()), Stats.ms(askedR.p99()), Stats.ms(bareR.p50()), Stats.ms(bareR.p99()));
    }
  }

  /** Figure 2: snapshots ready 2 s after the cut; the controller agent sends CreateSnapshot again until ready. */
  private static void readyLater(Path tmp, EtcdOptions options, Duration ttl, int samples) throws Exception {
    String prefix = "/requests-later";
    try (Agent agent = Agent.start(tmp.resolve("later"), "n0", options, prefix, tmp.resolve("cloud-later"), ttl,
        b -> b.snapshotReadyTime(NOT_READY));
        Asker cli = new Asker(options, prefix)) {
      agent.awaitLeading();
      String source = cli.create("source", RWO).volumeId();
      long[] took = new long[samples];
      List<String> sent = new ArrayList<>();
      for (int i = 0; i < samples; i++) {
        agent.snapshotCalls.clear();
        long s = System.nanoTime();
        cli.volumes.ask(ClusterVolumeRequest.snapshot(PLUGIN, "slow-" + i, source, Map.of(), Optional.empty(),
            Instant.now()));
        cli.awaitDone(Kind.SNAPSHOT, "slow-" + i);
        took[i] = System.nanoTime() - s;
        sent.add(agent.snapshotCalls.stream().map(t -> String.format(Locale.ROOT, "%.2f", (t - s) / 1e9))
            .collect(java.util.stream.Collectors.joining(", ", "[", "]")));
      }
      Stats st = new Stats(took);
      System.out.printf(Locale.ROOT, "RESULT cluster-requests snapshot-not-ready | asked -> DONE, mock ready %d ms after"
          + " the cut, n=%d | p50 %s ms, max %s ms | CreateSnapshot sent at (s after the ask) %s | reference: the %d ms"
          + " itself; the gap is the polling schedule (RequestRetry 1 s doubling, each due time taken at the next 1 s"
          + " round), not the plugin%n", NOT_READY.toMillis(), samples, Stats.ms(st.p50()), Stats.ms(st.max()),
          String.join(" ", sent), NOT_READY.toMillis());
    }
  }

  /**
   * Figure 5: a check round over {@code volumes} volumes with nothing changed, {@code checks} times (after 3 not
   * counted), each after a bare ListVolumes of all of them (the check's own paging: max_entries 0, the plugin's
   * pages). The controller agent's fingerprint is the mock's own capabilities, as the agent registers it (LIST_VOLUMES,
   * LIST_VOLUMES_PUBLISHED_NODES, LIST_SNAPSHOTS, GET_CAPACITY...); its checks' interval is an hour, so only the checks
   * asked here run; its rounds run every second as in the other figures (they read the watch-fed mirror).
   */
  private static void checkRound(Path tmp, EtcdOptions options, Duration ttl, int volumes, int checks)
      throws Exception {
    String prefix = "/requests-check-" + volumes;
    try (Agent agent = Agent.start(tmp.resolve("check-" + volumes), "n0", options, prefix,
        tmp.resolve("cloud-check-" + volumes), ttl, b -> b, true)) {
      agent.controller.checkEvery(Duration.ofHours(1));
      agent.awaitLeading();
      // Step 1: the disks, made in the cloud by CreateVolume (in flights of 64) and registered (8 at a time).
      long setup = System.nanoTime();
      List<String> ids = new ArrayList<>();
      for (int from = 0; from < volumes; from += 64) {
        List<CompletableFuture<CsiVolume>> made = new ArrayList<>();
        for (int i = from; i < Math.min(volumes, from + 64); i++) {
          made.add(agent.plugin.createVolumeAsync(new CreateVolumeRequest("disk-" + i,
              Optional.of(new CapacityRange(1 << 20, 0)), List.of(VolumeCapability.mount(
              AccessMode.SINGLE_NODE_WRITER)), Map.of(), Secrets.none())));
        }
        for (CompletableFuture<CsiVolume> f : made) {
          ids.add(f.get(60, TimeUnit.SECONDS).volumeId());
        }
      }
      long created = System.nanoTime() - setup;
      ExecutorService registering = Executors.newFixedThreadPool(8);
      try {
        List<Future<Boolean>> done = new ArrayList<>();
        for (String id : ids) {
          done.add(registering.submit(() -> agent.volumes.register(new ClusterVolume(PLUGIN, id, 1 << 20,
              Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), List.of(), Map.of(), Map.of()))));
        }
        for (Future<Boolean> f : done) {
          f.get(60, TimeUnit.SECONDS);
        }
      } finally {
        registering.shutdownNow();
      }
      long until = System.nanoTime() + WAIT.toNanos();
      while (agent.volumes.read().volumes().size() < volumes) { // the checks read the watch-fed mirror
        if (System.nanoTime() > until) {
          throw new IllegalStateException("the mirror has " + agent.volumes.read().volumes().size() + " of "
              + volumes + " volumes after " + WAIT);
        }
        Thread.sleep(10);
      }
      System.out.printf(Locale.ROOT, ">>> %d disks created in the cloud in %s ms, registered and mirrored in %s ms%n",
          volumes, Stats.ms(created), Stats.ms(System.nanoTime() - setup - created));
      // Step 2: the first check (conditions, leaks and capacity as found), then the checks with nothing changed.
      long requests = agent.volumes.etcdRequests();
      long s = System.nanoTime();
      ClusterController.CheckResult first = agent.controller.checkNow().get(WAIT.toSeconds(), TimeUnit.SECONDS);
      long firstTook = System.nanoTime() - s;
      long firstRequests = agent.volumes.etcdRequests() - requests;
      if (first.plugins() != 1 || first.failed() != 0) {
        throw new IllegalStateException("the first check: " + first);
      }
      long revision = agent.volumes.read().revision();
      long[] took = new long[checks];
      long[] listed = new long[checks];
      long[] etcd = new long[checks];
      int[] writes = new int[checks];
      int pages = 0;
      for (int i = -WARM_UP; i < checks; i++) {
        s = System.nanoTime();
        int seen = 0;
        int p = 0;
        Optional<String> token = Optional.empty();
        do {
          VolumePage page = agent.plugin.listVolumesAsync(0, token).get(60, TimeUnit.SECONDS);
          seen += page.entries().size();
          token = page.nextToken();
          p++;
        } while (token.isPresent());
        long list = System.nanoTime() - s;
        if (seen != volumes) {
          throw new IllegalStateException("ListVolumes listed " + seen + " of " + volumes);
        }
        requests = agent.volumes.etcdRequests();
        s = System.nanoTime();
        ClusterController.CheckResult r = agent.controller.checkNow().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        long t = System.nanoTime() - s;
        if (r.plugins() != 1 || r.failed() != 0) {
          throw new IllegalStateException("check " + i + ": " + r);
        }
        if (i >= 0) {
          took[i] = t;
          listed[i] = list;
          etcd[i] = agent.volumes.etcdRequests() - requests;
          writes[i] = r.writes();
          pages = p;
        }
      }
      long revisionAfter = agent.volumes.read().revision();
      Stats st = new Stats(took);
      Stats ls = new Stats(listed);
      System.out.printf(Locale.ROOT, "RESULT cluster-requests check-round-%d | a check round (health and capacity) over"
          + " %d volumes, nothing changed, n=%d | p50 %s ms, max %s ms; etcd writes per check %s (goal 0), etcd"
          + " requests per check %s; etcd revision +%d over the %d checks | reference: bare ListVolumes of all %d (%d"
          + " page%s, as the check pages) p50 %s ms, max %s ms; the first check %s ms, %d keys written, %d etcd"
          + " requests%n", volumes, volumes, checks, Stats.ms(st.p50()), Stats.ms(st.max()), distinct(writes),
          distinct(etcd), revisionAfter - revision, checks + WARM_UP, volumes, pages, pages == 1 ? "" : "s",
          Stats.ms(ls.p50()), Stats.ms(ls.max()), Stats.ms(firstTook), first.writes(), firstRequests);
    }
  }

  /** The values seen, each once, in order ("0" when every check said 0). */
  private static String distinct(int[] values) {
    return java.util.Arrays.stream(values).distinct().sorted().mapToObj(Integer::toString)
        .collect(java.util.stream.Collectors.joining("/"));
  }

  private static String distinct(long[] values) {
    return java.util.Arrays.stream(values).distinct().sorted().mapToObj(Long::toString)
        .collect(java.util.stream.Collectors.joining("/"));
  }

  /**
   * Figure 4: the controller agent killed mid-CreateSnapshot, {@code kills} times with lease TTL {@code ttl}: each time
   * a new election (its own prefix), the first agent in a child JVM, the successor here.
   */
  private static void killed(Path tmp, EtcdOptions options, Duration ttl, int kills) throws Exception {
    long[] toLead = new long[kills];
    long[] toAttempt = new long[kills];
    List<Integer> attempts = new ArrayList<>();
    long[] toDone = new long[kills];
    List<Integer> inCloud = new ArrayList<>();
    List<Boolean> cutUnderWay = new ArrayList<>();
    for (int k = 0; k < kills; k++) {
      String prefix = "/requests-kill-" + ttl.toSeconds() + "-" + k;
      Path cloud = tmp.resolve("cloud-kill-" + ttl.toSeconds() + "-" + k);
      Path dir = tmp.resolve("kill-" + ttl.toSeconds() + "-" + k);
      Files.createDirectories(dir);
      Process child = startChild(options, prefix, cloud, dir, ttl);
      try (Asker cli = new Asker(options, prefix)) {
        awaitLine(child, "LEADING", WAIT);
        String source = cli.create("source", RWO).volumeId(); // made by the child: it leads
        try (Agent successor = Agent.start(dir, "successor", options, prefix, cloud, ttl, b -> b.snapshotTime(CUT))) {
          Thread.sleep(1500); // its rounds run (one at start, then each second): campaigning, not leading
          if (!successor.controller.leading().isEmpty()) {
            throw new IllegalStateException("the successor leads before the kill: " + successor.controller.leading());
          }
          String name = "snap-" + k;
          cli.volumes.ask(ClusterVolumeRequest.snapshot(PLUGIN, name, source, Map.of(), Optional.empty(),
              Instant.now()));
          cli.await(Kind.SNAPSHOT, name, r -> r.attemptStarted().isPresent() && r.controllerNodeId().equals("first"));
          // Its CreateSnapshot reached the cloud when the cloud lists the name (the cut under way there).
          long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
          while (snapshotsNamed(cloud, name) == 0 && System.nanoTime() < until) {
            Thread.sleep(5);
          }
          cutUnderWay.add(snapshotsNamed(cloud, name) == 1);
          long killed = System.nanoTime();
          child.destroyForcibly();
          child.waitFor(10, TimeUnit.SECONDS);
          // The successor elected (its election key in the mirror), its attempt sent, the request DONE.
          cli.awaitSnapshot("the successor's election", s -> "successor".equals(s.controllers().get(PLUGIN)));
          toLead[k] = System.nanoTime() - killed;
          cli.await(Kind.SNAPSHOT, name, r -> r.controllerNodeId().equals("successor"));
          toAttempt[k] = System.nanoTime() - killed;
          ClusterVolumeRequest done = cli.awaitDone(Kind.SNAPSHOT, name);
          toDone[k] = System.nanoTime() - killed;
          if (!done.controllerNodeId().equals("successor")) {
            throw new IllegalStateException("done by " + done.controllerNodeId() + ", not the successor: " + done);
          }
          attempts.add(done.attempts());
          inCloud.add(snapshotsNamed(cloud, name));
          String sends = successor.snapshotCalls.stream().map(t -> Stats.ms(t - killed))
              .collect(java.util.stream.Collectors.joining(", ", "[", "]"));
          System.out.printf(Locale.ROOT, "kill %d (TTL %d s): after the kill the successor leads at %s ms, its attempt"
              + " is in etcd at %s ms, DONE at %s ms; the successor sent CreateSnapshot at %s ms (%d sends in all),"
              + " snapshots named %s in the cloud: %d%n", k + 1, ttl.toSeconds(), Stats.ms(toLead[k]),
              Stats.ms(toAttempt[k]), Stats.ms(toDone[k]), sends, done.attempts(), name, inCloud.get(k));
        }
      } finally {
        child.destroyForcibly();
      }
    }
    Stats d = new Stats(toDone);
    Stats a = new Stats(toAttempt);
    Stats l = new Stats(toLead);
    System.out.printf(Locale.ROOT, "RESULT cluster-requests kill-ttl-%ds | controller agent SIGKILLed mid-CreateSnapshot"
        + " (cut %d ms), n=%d | kill -> DONE by the successor p50 %s ms, max %s ms (elected p50 %s ms, its"
        + " CreateSnapshot sent p50 %s ms; sent %s times in all) | reference: lease TTL %d ms, cut %d ms | cut under"
        + " way in the cloud at the kill %s, snapshots of the name in the cloud %s (goal 1 each)%n", ttl.toSeconds(),
        CUT.toMillis(), kills, Stats.ms(d.p50()), Stats.ms(d.max()), Stats.ms(l.p50()), Stats.ms(a.p50()), attempts,
        ttl.toMillis(), CUT.toMillis(), cutUnderWay, inCloud);
  }

  /** The cloud file's snapshots of this name ({@code snapshot ID SOURCE SIZE CREATED CUT_UNTIL READY_AT NAME}). */
  private static int snapshotsNamed(Path cloud, String name) throws IOException {
    List<String> lines;
    try {
      lines = Files.readAllLines(cloud);
    } catch (NoSuchFileException e) {
      return 0;
    }
    int count = 0;
    for (String line : lines) {
      String[] f = line.split(" ");
      if (f.length == 8 && f[0].equals("snapshot") && URLDecoder.decode(f[7], StandardCharsets.UTF_8).equals(name)) {
        count++;
      }
    }
    return count;
  }

  private static Process startChild(EtcdOptions options, String prefix, Path cloud, Path dir, Duration ttl)
      throws IOException {
    List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"),
        Child.class.getName(), options.endpoints().stream().map(Object::toString)
        .collect(java.util.stream.Collectors.joining(",")), prefix, cloud.toString(), dir.toString(),
        Long.toString(ttl.toMillis()));
    return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("child.log").toFile()))
        .start();
  }

  private static void awaitLine(Process p, String line, Duration within) throws Exception {
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    CompletableFuture<Boolean> seen = CompletableFuture.supplyAsync(() -> {
      try {
        for (String l; (l = out.readLine()) != null; ) {
          if (l.equals(line)) {
            return true;
          }
        }
        return false;
      } catch (IOException e) {
        return false;
      }
    });
    if (!seen.get(within.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new IllegalStateException("the child ended before it said " + line + " (exit " + p.waitFor() + ")");
    }
  }

  /**
   * The first controller agent, in a JVM of its own: {@code ENDPOINTS PREFIX CLOUD DIR TTL_MS}; its mock's cuts take
   * 3 s. Says {@code LEADING} once it leads the plugin id, then runs until killed (or its stdin closes).
   */
  static final class Child {
    private Child() {}

    public static void main(String[] args) throws Exception {
      if (args.length != 5) {
        System.err.println("usage: ClusterRequests$Child ENDPOINTS PREFIX CLOUD DIR TTL_MS");
        System.exit(2);
      }
      EtcdOptions options = EtcdOptions.of(args[0].split(","));
      Agent agent = Agent.start(Path.of(args[3]), "first", options, args[1], Path.of(args[2]),
          Duration.ofMillis(Long.parseLong(args[4])), b -> b.snapshotTime(CUT));
      agent.awaitLeading();
      System.out.println("LEADING");
      System.out.flush();
      while (System.in.read() >= 0) {
        // until the parent goes
      }
      agent.close();
      System.exit(0);
    }
  }

  /** A controller agent as {@code ClusterNode} makes one, with its own mock plugin on the cloud file. */
  private static final class Agent implements AutoCloseable {
    final MockCsiPlugin mock;
    final CsiClient plugin;
    final PluginRegistry registry;
    final ClusterVolumes volumes;
    final ClusterController controller;
    /** When the controller agent sent each CreateSnapshot (System.nanoTime()). */
    final java.util.Queue<Long> snapshotCalls;

    private Agent(MockCsiPlugin mock, CsiClient plugin, PluginRegistry registry, ClusterVolumes volumes,
        ClusterController controller, java.util.Queue<Long> snapshotCalls) {
      this.snapshotCalls = snapshotCalls;
      this.mock = mock;
      this.plugin = plugin;
      this.registry = registry;
      this.volumes = volumes;
      this.controller = controller;
    }

    static Agent start(Path dir, String nodeId, EtcdOptions options, String prefix, Path cloud, Duration ttl,
        UnaryOperator<MockCsiPlugin.Builder> mock) throws Exception {
      return start(dir, nodeId, options, prefix, cloud, ttl, mock, false);
    }

    /** @param advertised the fingerprint's capabilities the mock's own (as the agent registers it), not the fixed set */
    static Agent start(Path dir, String nodeId, EtcdOptions options, String prefix, Path cloud, Duration ttl,
        UnaryOperator<MockCsiPlugin.Builder> mock, boolean advertised) throws Exception {
      Path socket = dir.resolve(nodeId).resolve("csi.sock");
      Files.createDirectories(socket.getParent());
      MockCsiPlugin m = mock.apply(MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket).allCapabilities()
          .nodeId("csi-" + nodeId).cloud(cloud, Duration.ofMillis(10))).start();
      CsiClient plugin = CsiClient.create(socket);
      PluginRegistry registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
      Fingerprint f = advertised
          ? new Fingerprint(PLUGIN, "1.0", Map.of(), plugin.pluginCapabilitiesAsync().get(10, TimeUnit.SECONDS),
              plugin.controllerCapabilitiesAsync().get(10, TimeUnit.SECONDS), Set.of(), "", 0, Map.of())
          : new Fingerprint(PLUGIN, "1.0", Map.of(), Set.of("SERVICE:CONTROLLER_SERVICE"), CAPABILITIES, Set.of(), "",
              0, Map.of());
      registry.register(new PluginInfo(PluginType.CSI_CONTROLLER, PLUGIN, "1.0", "alloc-" + nodeId, socket, Map.of(),
          f, PluginHealth.healthy(Instant.now()), false));
      ClusterVolumes volumes = ClusterVolumes.builder().etcd(options).prefix(prefix).nodeId(nodeId).leaseTtl(ttl)
          .build();
      // As ClusterNode: call timeout the etcd request timeout x 6, no detach-after, the default retry, 1 s rounds.
      java.util.Queue<Long> calls = new java.util.concurrent.ConcurrentLinkedQueue<>();
      CsiClient counted = new SnapshotCallTimes(plugin, calls);
      ClusterController controller = new ClusterController(volumes, nodeId, registry, p -> counted,
          options.requestTimeout().multipliedBy(6), Optional.empty(), Clock.systemUTC(),
          ClusterController.RequestRetry.DEFAULT).identifyCalls().start(Duration.ofSeconds(1));
      return new Agent(m, plugin, registry, volumes, controller, calls);
    }

    void awaitLeading() throws InterruptedException {
      long until = System.nanoTime() + WAIT.toNanos();
      while (!controller.leading().contains(PLUGIN)) {
        if (System.nanoTime() > until) {
          throw new IllegalStateException("no lead of " + PLUGIN + " within " + WAIT);
        }
        Thread.sleep(10);
      }
    }

    @Override
    public void close() {
      controller.close();
      volumes.close();
      plugin.close();
      registry.close();
      mock.close();
    }
  }

  /** Forwards every call, noting when each CreateSnapshot is sent (its caller-identity views too). */
  private static final class SnapshotCallTimes extends ForwardingCsiClient {
    private final CsiClient plugin;
    private final java.util.Queue<Long> calls;

    SnapshotCallTimes(CsiClient plugin, java.util.Queue<Long> calls) {
      this.plugin = plugin;
      this.calls = calls;
    }

    @Override
    protected CsiClient delegate() {
      return plugin;
    }

    @Override
    public CompletableFuture<CsiSnapshot> createSnapshotAsync(CreateSnapshotRequest request) {
      calls.add(System.nanoTime());
      return plugin.createSnapshotAsync(request);
    }

    @Override
    public CsiClient withCallerIdentity(String agentNodeId, long electionRevision) {
      return new SnapshotCallTimes(plugin.withCallerIdentity(agentNodeId, electionRevision), calls);
    }
  }

  /**
   * The CLI's side: asks, and sees a request's progress in its own watch-fed mirror, woken by each change (the CLI's
   * {@code --wait} reads etcd every 200 ms instead; waking on the watch measures the controller agent, not that poll).
   */
  private static final class Asker implements AutoCloseable {
    final ClusterVolumes volumes;
    private final AutoCloseable watch;
    private final Object changed = new Object();
    private long changes;

    Asker(EtcdOptions options, String prefix) {
      volumes = ClusterVolumes.builder().etcd(options).prefix(prefix).nodeId("cli").build();
      watch = volumes.watchChanges(() -> {
        synchronized (changed) {
          changes++;
          changed.notifyAll();
        }
      });
    }

    ClusterVolumeRequest create(String name, ClusterVolumeRequest.Spec spec) throws Exception {
      volumes.ask(ClusterVolumeRequest.create(PLUGIN, name, spec, Optional.empty(), Instant.now()));
      return awaitDone(Kind.CREATE, name);
    }

    ClusterVolumeRequest awaitDone(Kind kind, String name) throws InterruptedException {
      ClusterVolumeRequest r = await(kind, name, x -> x.state() != State.PENDING);
      if (r.state() != State.DONE) {
        throw new IllegalStateException(r.describe() + " ended " + r.state() + ": " + r.message());
      }
      return r;
    }

    /** The request once {@code until} holds of it, seen in the mirror after each change. */
    ClusterVolumeRequest await(Kind kind, String name, Predicate<ClusterVolumeRequest> until)
        throws InterruptedException {
      VolumesSnapshot s = awaitSnapshot(kind + " " + name, x -> request(x, kind, name).map(until::test).orElse(false));
      return request(s, kind, name).orElseThrow();
    }

    private static Optional<ClusterVolumeRequest> request(VolumesSnapshot s, Kind kind, String name) {
      return s.requests().stream().filter(x -> x.kind() == kind && x.pluginId().equals(PLUGIN)
          && x.name().equals(name)).findFirst();
    }

    /** The mirror once {@code until} holds of it, checked after each change (the time of the change it saw). */
    VolumesSnapshot awaitSnapshot(String what, Predicate<VolumesSnapshot> until) throws InterruptedException {
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (true) {
        long seen;
        synchronized (changed) {
          seen = changes;
        }
        VolumesSnapshot s = volumes.read();
        if (until.test(s)) {
          return s;
        }
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(what + " not as awaited within " + WAIT);
        }
        synchronized (changed) {
          if (changes == seen) {
            changed.wait(50);
          }
        }
      }
    }

    @Override
    public void close() throws Exception {
      watch.close();
      volumes.close();
    }
  }
}
