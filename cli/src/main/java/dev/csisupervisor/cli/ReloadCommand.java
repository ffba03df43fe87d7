package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.ReloadConfigResponse;
import java.io.PrintWriter;

/** {@code csi-agent reload}: the running agent re-reads its config file (no signal needed). */
final class ReloadCommand extends ResponseCommand<ReloadConfigResponse> {
  ReloadCommand(AgentConfigReader configs) {
    super(configs, "reload", "Make the running agent re-read its config file and apply its plugin changes"
        + " (what SIGHUP does, without a signal). Prints what changed; an invalid file changes"
        + " nothing and its problems are printed (exit 2).");
  }

  @Override
  ReloadConfigResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.reload();
  }

  @Override
  void print(ReloadConfigResponse r, PrintWriter out, PrintWriter err) {
    if (r.getApplied()) {
      out.println("reloaded " + r.getConfigFile() + ":");
      r.getChangesList().forEach(c -> out.println("  " + c));
    } else {
      err.println("csi-agent: invalid config, nothing changed: " + r.getConfigFile() + ": "
          + r.getProblemsCount() + (r.getProblemsCount() == 1 ? " problem:" : " problems:"));
      r.getProblemsList().forEach(p -> err.println("  " + p));
    }
  }

  @Override
  int exitCode(ReloadConfigResponse r) {
    return r.getApplied() ? ExitCodes.OK : ExitCodes.USAGE;
  }
}
