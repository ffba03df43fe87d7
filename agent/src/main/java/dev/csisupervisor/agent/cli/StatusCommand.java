package dev.csisupervisor.agent.cli;

import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.admin.v1.TaskStatus;
import dev.csisupervisor.agent.admin.AdminClient;
import dev.csisupervisor.agent.admin.ProtoMapper;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code csi-agent status}: the agent and its plugin tasks. */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Show the running agent and its plugin tasks (processes, restarts, phase).")
final class StatusCommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Mixin
  AdminOptions admin = new AdminOptions();

  @Option(names = "--json", description = "JSON instead of text.")
  boolean json;

  @Override
  public Integer call() {
    var out = spec.commandLine().getOut();
    try (AdminClient client = AdminClient.connect(admin.socket(spec.commandLine()))) {
      GetAgentStatusResponse s = client.status();
      if (json) {
        out.println(Format.json(s, true));
        return CsiAgentCommand.OK;
      }
      out.println("agent pid " + s.getPid() + ", version " + s.getVersion() + ", up since "
          + Format.time(ProtoMapper.instant(s.getStarted())));
      out.println("data dir " + s.getDataDir() + ", csi root " + s.getCsiRoot());
      out.println("admin socket " + s.getAdminSocket()
          + (s.getMetricsUrl().isEmpty() ? "" : ", metrics " + s.getMetricsUrl()));
      out.println();
      out.println(Format.pad("ID", 24) + Format.pad("KIND", 12) + Format.pad("PROCESS", 12)
          + Format.pad("PID", 9) + Format.pad("RESTARTS", 10) + Format.pad("PHASE", 16)
          + "HEALTHY");
      for (TaskStatus t : s.getTasksList()) {
        out.println(Format.pad(t.getId(), 24) + Format.pad(t.getKind(), 12)
            + Format.pad(t.getProcessState() + (t.getReattached() ? "*" : ""), 12)
            + Format.pad(t.getPid() == 0 ? "-" : Long.toString(t.getPid()), 9)
            + Format.pad(Integer.toString(t.getRestarts()), 10) + Format.pad(t.getPhase(), 16)
            + (t.getHealthy() ? "yes" : "no"));
      }
      if (s.getTasksList().stream().anyMatch(TaskStatus::getReattached)) {
        out.println("(* re-attached after an agent restart)");
      }
      return CsiAgentCommand.OK;
    } catch (AdminClient.AdminException e) {
      spec.commandLine().getErr().println("csi-agent: " + e.getMessage());
      return CsiAgentCommand.FAILURE;
    }
  }
}
