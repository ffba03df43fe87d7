// The admin API's volume calls in one warm JVM, for benchmarks/agent-process.sh cli (run with the agent's jar on
// the class path: java -cp csi-agent.jar MountRpc.java ...). Not part of the benchmark jar: it uses the CLI's own
// client (dev.csisupervisor.cli.AdminClient), which the benchmarks module does not depend on.
//
//   create SOCKET PLUGIN PREFIX N   creates N volumes, prints their ids, one a line (not timed)
//   mount SOCKET PLUGIN N ID...     mounts each volume for an allocation of its own; the first N are a warm-up,
//                                   the rest timed: prints "p50 X ms, p99 Y ms (n=...)" of one MountVolume call
import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.MountVolumeRequest;
import dev.csisupervisor.admin.v1.VolumeAccess;
import dev.csisupervisor.cli.AdminClient;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

public class MountRpc {
  public static void main(String[] args) throws Exception {
    try (AdminClient client = AdminClient.connect(Path.of(args[1]))) {
      VolumeAccess access = VolumeAccess.newBuilder().setAccessType("mount").setAccessMode("single-node-writer")
          .build();
      if (args[0].equals("create")) {
        for (int i = 0; i < Integer.parseInt(args[4]); i++) {
          System.out.println(client.createVolume(CreateVolumeRequest.newBuilder().setPlugin(args[2])
              .setName(args[3] + i).setRequiredBytes(1 << 20).setAccess(access).build()).getVolumeId());
        }
        return;
      }
      int warmup = Integer.parseInt(args[3]);
      List<Double> ms = new ArrayList<>();
      for (int i = 4; i < args.length; i++) {
        long t0 = System.nanoTime();
        client.mountVolume(MountVolumeRequest.newBuilder().setPlugin(args[2]).setVolumeId(args[i])
            .setAllocId("rpc-" + i).setAccess(access).build());
        if (i - 4 >= warmup) {
          ms.add((System.nanoTime() - t0) / 1e6);
        }
      }
      Collections.sort(ms);
      System.out.printf("p50 %.1f ms, p99 %.1f ms (n=%d)%n", ms.get((ms.size() * 50 + 99) / 100 - 1),
          ms.get((ms.size() * 99 + 99) / 100 - 1), ms.size());
    }
  }
}
