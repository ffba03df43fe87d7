package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.admin.v1.Snapshot;
import dev.csisupervisor.admin.v1.WatchEventsResponse;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.util.Iterator;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent events [--type T] [--follow] [--json]}. */
final class EventsCommand extends AdminCommand {
  private final OptionSpec typeOption = CommandSpecs.add(spec, TypeOption.option());
  private final OptionSpec followOption = CommandSpecs.add(spec,
      CommandSpecs.flag(new String[] {"-f", "--follow"}, "Keep printing events as they happen."));

  EventsCommand(AgentConfigReader configs) {
    super(configs, "events", "Show the registry's current content as a snapshot; with --follow, then every"
        + " event (REGISTERED, UPDATED, DEREGISTERED) as it happens, until Ctrl-C or the agent"
        + " stops. Sequence numbers are per type.");
  }

  @Override
  int run(AdminClient client, PrintWriter out, PrintWriter err)
      throws AdminClient.AdminException {
    PluginType type = CommandSpecs.value(typeOption);
    boolean follow = CommandSpecs.isSet(followOption);
    int expectedSnapshots = type == PluginType.PLUGIN_TYPE_UNSPECIFIED ? 2 : 1;
    while (true) {
      Iterator<WatchEventsResponse> it = client.watch(type, follow);
      int snapshots = 0;
      boolean lagged = false;
      try {
        while (it.hasNext()) {
          WatchEventsResponse m = it.next();
          print(out, m);
          switch (m.getMessageCase()) {
            case SNAPSHOT -> snapshots++;
            case LAGGED -> lagged = true;
            default -> { }
          }
          if (!follow && snapshots == expectedSnapshots) {
            return ExitCodes.OK;
          }
        }
      } catch (StatusRuntimeException e) {
        AdminClient.AdminException ae = client.translate(e);
        if (snapshots > 0 && ae.noAgent()) {
          err.println("csi-agent: the agent at " + client.socket() + " went away");
        } else {
          err.println("csi-agent: " + ae.getMessage());
        }
        return ExitCodes.FAILURE;
      }
      if (lagged && follow) {
        err.println("csi-agent: fell behind the agent's events; watching again from a new"
            + " snapshot");
        continue;
      }
      if (follow) {
        err.println("csi-agent: the agent ended the event stream (it is shutting down)");
      }
      return lagged ? ExitCodes.FAILURE : ExitCodes.OK;
    }
  }

  private void print(PrintWriter out, WatchEventsResponse m) {
    if (json()) {
      out.println(Format.json(m, false));
      return;
    }
    switch (m.getMessageCase()) {
      case SNAPSHOT -> {
        Snapshot s = m.getSnapshot();
        out.println("# " + Format.type(s.getType()) + " snapshot at seq=" + s.getSequence() + ": "
            + s.getPluginsCount() + " registration(s)");
        for (Plugin p : s.getPluginsList()) {
          out.println("#   " + p.getName() + " alloc=" + p.getAllocId() + " version="
              + p.getVersion() + " health=" + Format.health(p));
        }
      }
      case EVENT -> out.println(Format.event(m.getEvent()));
      case LAGGED -> out.println("# lagged" + (m.getLagged().getMessage().isEmpty() ? ""
          : ": " + m.getLagged().getMessage()));
      default -> { }
    }
  }
}
