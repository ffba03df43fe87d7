package dev.csisupervisor.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.admin.v1.MountVolumeRequest;
import dev.csisupervisor.admin.v1.VolumeAccess;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The {@code volume} group built for one command line: only the subcommand it names, which still takes every one of
 * its options; all nine for anything else (help, a missing or unknown subcommand).
 */
class NodeVolumeCommandTest {
  private static final AgentConfigReader NO_CONFIG = file -> {
    throw new IllegalArgumentException("no config in this test");
  };

  @TempDir Path dir;

  @Test
  void aNamedSubcommand_isTheOnlyOneBuilt() {
    assertEquals(List.of("mount"), List.copyOf(AdminCommands.volume(NO_CONFIG, "mount").subcommands().keySet()));
    assertEquals(List.of("gc"), List.copyOf(AdminCommands.volume(NO_CONFIG, "gc").subcommands().keySet()));
  }

  @Test
  void help_aMissingOrUnknownSubcommand_haveAllNine_inTheirOrder() {
    List<String> all = List.of("create", "delete", "mount", "unmount", "release", "list", "stats", "expand", "gc");
    for (String next : new String[] {null, "--help", "-h", "bogus", "--admin-socket=/x"}) {
      assertEquals(all, List.copyOf(AdminCommands.volume(NO_CONFIG, next).subcommands().keySet()), next);
    }
    assertEquals(all, List.copyOf(AdminCommands.volume(NO_CONFIG).subcommands().keySet()));
    StringWriter out = new StringWriter();
    CommandLine cl = new CommandLine(AdminCommands.volume(NO_CONFIG, "--help"));
    cl.setOut(new PrintWriter(out, true));
    assertEquals(ExitCodes.OK, cl.execute("--help"));
    for (String name : all) {
      assertTrue(out.toString().contains("\n  " + name + " "), name + " in\n" + out);
    }
  }

  @Test
  void mountAlone_takesEveryOneOfItsOptions() throws Exception {
    Path secrets = Files.writeString(dir.resolve("secrets"), "token=s3cret\n");
    Files.setPosixFilePermissions(secrets, PosixFilePermissions.fromString("rw-------"));
    CommandSpec volume = AdminCommands.volume(NO_CONFIG, "mount");
    new CommandLine(volume).parseArgs("mount", "--plugin", "p", "--volume=v", "--alloc", "a", "--access-mode",
        "multi-node-multi-writer", "--block", "--fs-type", "ext4", "--mount-flag", "ro", "--mount-flag=noatime",
        "--mount-group", "100", "--read-only", "--context", "a=b", "--context", "c=d", "--publish-context", "e=f",
        "--secrets-file", secrets.toString(), "--json", "--admin-socket", "/run/agent.sock");
    VolumeMountCommand mount = (VolumeMountCommand) volume.subcommands().get("mount").getCommandSpec().userObject();

    assertEquals(MountVolumeRequest.newBuilder().setPlugin("p").setVolumeId("v").setAllocId("a")
        .setAccess(VolumeAccess.newBuilder().setAccessType("block").setFsType("ext4")
            .addAllMountFlags(List.of("ro", "noatime")).setAccessMode("multi-node-multi-writer")
            .setVolumeMountGroup("100"))
        .setReadOnly(true).putAllVolumeContext(Map.of("a", "b", "c", "d")).putPublishContext("e", "f")
        .putSecrets("token", "s3cret").setSecretsFile(secrets.toAbsolutePath().toString()).build(), mount.request());
    assertTrue(mount.json());
  }

  @Test
  void mountAlone_withOnlyTheRequiredOptions_getsTheDefaults() {
    CommandSpec volume = AdminCommands.volume(NO_CONFIG, "mount");
    new CommandLine(volume).parseArgs("mount", "--plugin", "p", "--volume", "v", "--alloc", "a");
    VolumeMountCommand mount = (VolumeMountCommand) volume.subcommands().get("mount").getCommandSpec().userObject();

    assertEquals(MountVolumeRequest.newBuilder().setPlugin("p").setVolumeId("v").setAllocId("a")
        .setAccess(VolumeAccess.newBuilder().setAccessType("mount").setAccessMode("single-node-writer")).build(),
        mount.request());
    assertFalse(mount.json());
  }
}
