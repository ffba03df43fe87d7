package dev.csisupervisor.agent.demo;

import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.DeleteVolumeRequest;
import dev.csisupervisor.admin.v1.MountVolumeRequest;
import dev.csisupervisor.admin.v1.UnmountVolumeRequest;
import dev.csisupervisor.admin.v1.VolumeAccess;
import dev.csisupervisor.admin.v1.VolumeAlloc;
import dev.csisupervisor.admin.v1.VolumeInfo;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.cli.AdminClient;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The demo's step 5, a task's volume, and the agent killed in the middle of a mount: a csi-agent
 * process with one monolith plugin (the mock plugin as a complete in-memory driver, its state in
 * a file as a real driver keeps a state dir, NodePublishVolume answered after 1.5 s so that the
 * kill lands inside it): a volume is created and mounted for task web-1, which writes a file into
 * it; a second volume's mount for web-2 is under way when the agent is killed with SIGKILL; a new
 * agent rolls that mount back and keeps web-1's; then everything is unmounted and deleted, and
 * nothing is left.
 */
final class VolumeCrash {
  private static final VolumeAccess RWO =
      VolumeAccess.newBuilder().setAccessMode("single-node-writer").build();

  private final DemoConsole console;
  private final PrintWriter out;
  private final boolean fast;

  VolumeCrash(DemoConsole console, boolean fast) {
    this.console = console;
    this.out = console.out();
    this.fast = fast;
  }

  /** Runs the step in {@code dir}; true if everything happened as it should, in time. */
  boolean run(Path dir) throws InterruptedException {
    console.section("a task's volume: the agent killed with SIGKILL in the middle of a mount");
    ChildAgents agents = new ChildAgents(dir);
    Path socket = agents.socket();
    List<String> created = new ArrayList<>();
    try {
      agents.writeConfig(fast,
          "  - {id: disk, type: monolith, command: " + ConfigLoader.BUILTIN_MOCK_PLUGIN
          + ", args: [--type, monolith, --all-capabilities,"
          + " --state-file, \"${CSI_PLUGIN_DIR}/../disk-state\","
          + " --delay, NodePublishVolume=1500ms]}\n");
      Process first = agents.start("agent1");
      if (!console.await("the plugin registered", () -> agents.registered(false) == 2)) {
        return false;
      }
      try (AdminClient c = AdminClient.connect(socket)) {
        String v1 = c.createVolume(CreateVolumeRequest.newBuilder().setPlugin("disk")
            .setName("web-data").setRequiredBytes(64 << 20).setAccess(RWO).build()).getVolumeId();
        String v2 = c.createVolume(CreateVolumeRequest.newBuilder().setPlugin("disk")
            .setName("cache").setRequiredBytes(16 << 20).setAccess(RWO).build()).getVolumeId();
        created.add(v1);
        created.add(v2);
        out.println(console.stamp() + "created volumes " + v1 + " (64 MiB) and " + v2
            + " (16 MiB) through the controller");
        String target = c.mountVolume(mount(v1, "web-1")).getTargetPath();
        Files.writeString(Path.of(target).resolve("hello.txt"), "written by task web-1\n");
        out.println(console.stamp() + "mounted " + v1
            + " for task web-1 (controller publish, stage, publish) at");
        out.println("    " + target + "; the task wrote hello.txt there");

        Thread mounting = new Thread(() -> {
          try (AdminClient c2 = AdminClient.connect(socket)) {
            c2.mountVolume(mount(v2, "web-2"));
          } catch (AdminClient.AdminException e) {
            // expected: the agent dies during this call
          }
        }, "demo-mount");
        mounting.setDaemon(true);
        mounting.start();
        if (!console.await("the mount of " + v2 + " under way",
            () -> phaseOf(agents, v2, "web-2").equals("PUBLISHING"))) {
          return false;
        }
        first.destroyForcibly();
        first.waitFor(10, TimeUnit.SECONDS);
        out.println(console.stamp() + "killed the agent (SIGKILL) while NodePublishVolume of "
            + v2 + " for web-2 was in flight");
      }

      console.section("starting a new agent on the same data dir...");
      Process second = agents.start("agent2");
      if (!console.await("the interrupted mount rolled back", () -> {
        List<VolumeInfo> now = agents.volumes();
        return agents.registered(true) == 2 && now.size() == 1 && !now.get(0).getPending();
      })) {
        return false;
      }
      String recovery = Files.readAllLines(agents.log("agent2")).stream()
          .filter(l -> l.contains("volume recovery:")).findFirst().orElse("(no recovery line)");
      out.println("  the new agent's log: "
          + recovery.substring(recovery.indexOf("volume recovery:")));
      List<VolumeInfo> left = agents.volumes();
      VolumeInfo kept = left.get(0);
      VolumeAlloc keptAlloc = kept.getUsages(0).getAllocs(0);
      String keptTarget = keptAlloc.getTargetPath();
      boolean fileThere =
          Files.readString(Path.of(keptTarget).resolve("hello.txt")).contains("web-1");
      boolean web2Gone = !Files.exists(
          Path.of(keptTarget.replace("/web-1/", "/web-2/")).getParent().getParent());
      out.println("  volumes now: " + kept.getVolumeId() + " " + keptAlloc.getPhase() + " for "
          + keptAlloc.getAllocId() + " (hello.txt " + (fileThere ? "still there" : "LOST")
          + "); web-2's mount "
          + (web2Gone ? "rolled back, its directory gone" : "LEFT BEHIND"));

      try (AdminClient c = AdminClient.connect(socket)) {
        boolean done = c.unmountVolume(UnmountVolumeRequest.newBuilder().setPlugin("disk")
            .setVolumeId(kept.getVolumeId()).setAllocId("web-1").build()).getDone();
        for (String id : created) {
          c.deleteVolume(
              DeleteVolumeRequest.newBuilder().setPlugin("disk").setVolumeId(id).build());
        }
        boolean clean = done && c.listVolumes().getVolumesCount() == 0;
        out.println(console.stamp() + "unmounted " + kept.getVolumeId()
            + " from web-1 (unpublish, unstage, controller unpublish) and deleted both volumes: "
            + (clean ? "no volume left on the node" : "SOMETHING LEFT"));
        second.destroy(); // SIGTERM
        second.waitFor(30, TimeUnit.SECONDS);
        out.flush();
        return fileThere && web2Gone && clean && second.exitValue() == 0;
      }
    } catch (IOException | AdminClient.AdminException e) {
      out.println("demo: " + e.getMessage());
      return false;
    } finally {
      agents.destroyAll();
    }
  }

  private static MountVolumeRequest mount(String volume, String alloc) {
    return MountVolumeRequest.newBuilder().setPlugin("disk").setVolumeId(volume).setAllocId(alloc)
        .setAccess(RWO).build();
  }

  /** The phase of the volume's publication for the alloc, or "" if there is none. */
  private static String phaseOf(ChildAgents agents, String volume, String alloc) {
    return agents.volumes().stream().filter(v -> v.getVolumeId().equals(volume))
        .flatMap(v -> v.getUsagesList().stream()).flatMap(u -> u.getAllocsList().stream())
        .filter(a -> a.getAllocId().equals(alloc)).map(VolumeAlloc::getPhase).findFirst()
        .orElse("");
  }
}
