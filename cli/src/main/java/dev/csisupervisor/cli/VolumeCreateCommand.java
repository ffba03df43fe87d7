package dev.csisupervisor.cli;

import static dev.csisupervisor.cli.VolumeOptions.pairs;

import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.CreateVolumeResponse;
import dev.csisupervisor.admin.v1.Topology;
import dev.csisupervisor.cli.VolumeOptions.Access;
import dev.csisupervisor.cli.VolumeOptions.SecretsFile;
import dev.csisupervisor.common.ByteSizes;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent volume create}: CreateVolume through the plugin's controller. */
final class VolumeCreateCommand extends ResponseCommand<CreateVolumeResponse> {
  private final OptionSpec plugin = CommandSpecs.add(spec, CommandSpecs.option("--plugin", "ID", String.class)
      .required(true));
  private final OptionSpec name = CommandSpecs.add(spec, CommandSpecs.option("--name", "NAME", String.class,
      "The volume's name (idempotency key).").required(true));
  private final OptionSpec size = CommandSpecs.add(spec, CommandSpecs.option("--size", "SIZE", String.class,
      "At least this size: bytes, or 512MiB, 10GiB."));
  private final Access access = new Access(spec);
  private final OptionSpec parameters = CommandSpecs.add(spec, CommandSpecs.map("--parameter", "K=V",
      "A plugin parameter (repeatable)."));
  private final OptionSpec topology = CommandSpecs.add(spec, CommandSpecs.map("--topology", "KEY=VALUE",
      "A topology segment the volume must be accessible from (repeatable; together one segment set,"
          + " e.g. topology.ebs.csi.aws.com/zone=eu-west-1a). Default: this node's, if the plugin is topology-aware."));
  private final SecretsFile secrets = new SecretsFile(spec);

  VolumeCreateCommand(AgentConfigReader configs) {
    super(configs, "create", "Create a volume through the plugin's controller (CreateVolume).");
  }

  @Override
  CreateVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
    CreateVolumeRequest.Builder b = CreateVolumeRequest.newBuilder().setPlugin(CommandSpecs.value(plugin))
        .setName(CommandSpecs.value(name)).setAccess(access.proto())
        .putAllParameters(pairs(CommandSpecs.value(parameters))).putAllTopology(pairs(CommandSpecs.value(topology)))
        .putAllSecrets(secrets.read(spec.commandLine().getErr()));
    String size = CommandSpecs.value(this.size);
    if (size != null) {
      b.setRequiredBytes(ByteSizes.parse(size));
    }
    return client.createVolume(b.build());
  }

  @Override
  void print(CreateVolumeResponse r, PrintWriter out, PrintWriter err) {
    out.println("created volume " + r.getVolumeId() + " (" + (r.getCapacityBytes() == 0 ? "size unknown"
        : Format.bytes(r.getCapacityBytes())) + ")" + (r.getVolumeContextCount() == 0 ? ""
        : ", context " + r.getVolumeContextMap()) + (r.getAccessibleTopologyCount() == 0 ? ""
        : ", accessible from " + topologies(r.getAccessibleTopologyList())));
  }

  /** {@code k=v,k2=v2} per topology, {@code " or "} between them. */
  private static String topologies(List<Topology> list) {
    List<String> each = new ArrayList<>();
    for (Topology t : list) {
      List<String> segments = new ArrayList<>();
      new java.util.TreeMap<>(t.getSegmentsMap()).forEach((k, v) -> segments.add(k + "=" + v));
      each.add(String.join(",", segments));
    }
    return String.join(" or ", each);
  }
}
