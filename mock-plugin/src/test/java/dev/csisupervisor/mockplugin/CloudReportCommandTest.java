package dev.csisupervisor.mockplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code csi-mock-plugin cloud-report} run in this JVM: its output, its arguments and its exit codes. */
@Timeout(30)
class CloudReportCommandTest {
  @TempDir
  Path dir;

  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final StringWriter err = new StringWriter();

  private int run(String stdin, String... args) {
    MockPluginCommand command = new MockPluginCommand(java.util.Map.of(),
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)), false, code -> {
          throw new AssertionError("halt(" + code + ")");
        });
    CommandLine cl = MockPluginCommand.commandLine(command);
    cl.setErr(new PrintWriter(err, true));
    return cl.execute(args);
  }

  private String out() {
    return out.toString(StandardCharsets.UTF_8);
  }

  /** A cloud with vol-1 attached to n1 and vol-2 to n2, one detach-in-use counted, a2 elected at 4. */
  private Path cloud() {
    SharedCloud cloud = new SharedCloud(dir.resolve("cloud"), Duration.ZERO);
    cloud.addDisk("vol-1", 1);
    cloud.addDisk("vol-2", 1);
    cloud.addDisk("vol-3", 1);
    cloud.attach("vol-1", "n1", false);
    cloud.attach("vol-2", "n2", true);
    cloud.attach("vol-3", "n3", false);
    cloud.recordNodeUse(SharedCloud.NodeUse.STAGED, "vol-3", "n3", "/s \"q\"", true);
    cloud.detach("vol-3", "n3");
    cloud.controllerCall("ebs", new Caller("a2", 4), "csi.v1.Controller/ListVolumes");
    return cloud.file();
  }

  @Test
  void report_printsCountsAttachmentsAndElections_asJson() {
    Path file = cloud();
    assertEquals(0, run("", "cloud-report", "--cloud", file.toString()), err.toString());
    assertEquals("{\n"
        + "  \"cloud\": \"" + file + "\",\n"
        + "  \"counts\": {\n"
        + "    \"double_attach\": 0,\n"
        + "    \"detach_in_use\": 1,\n"
        + "    \"deposed_controller_call\": 0\n"
        + "  },\n"
        + "  \"total\": 1,\n"
        + "  \"attachments\": [\n"
        + "    {\"volume\": \"vol-1\", \"node\": \"n1\", \"multi_node\": false},\n"
        + "    {\"volume\": \"vol-2\", \"node\": \"n2\", \"multi_node\": true}\n"
        + "  ],\n"
        + "  \"staged\": [\n"
        + "    {\"volume\": \"vol-3\", \"node\": \"n3\", \"path\": \"/s \\\"q\\\"\"}\n"
        + "  ],\n"
        + "  \"published\": [],\n"
        + "  \"elections\": [\n"
        + "    {\"plugin\": \"ebs\", \"revision\": 4, \"agent\": \"a2\"}\n"
        + "  ],\n"
        + "  \"violations\": [\n"
        + "    \"detach_in_use: disk 'vol-3' detached from node 'n3' which has it staged at [/s \\\"q\\\"]\"\n"
        + "  ]\n"
        + "}\n", out());
  }

  @Test
  void recordedFromStdin_findsTheUnrecordedAttachment_andCheckExits4() {
    Path file = cloud();
    assertEquals(4, run("vol-1 n1\n\n# n2's record is missing\n", "cloud-report", "--cloud", file.toString(),
        "--recorded", "-", "--check"), err.toString());
    assertTrue(out().contains("    \"unrecorded_attachment\": 1\n  },\n  \"total\": 2,\n"), out());
    assertTrue(out().contains("\"unrecorded_attachments\": [\n    {\"volume\": \"vol-2\", \"node\": \"n2\", "
        + "\"multi_node\": true}\n  ],"), out());
  }

  @Test
  void check_onACleanCloud_exits0() {
    SharedCloud cloud = new SharedCloud(dir.resolve("cloud"), Duration.ZERO);
    cloud.addDisk("vol-1", 1);
    cloud.attach("vol-1", "n1", false);
    assertEquals(0, run("vol-1 n1\n", "cloud-report", "--cloud", cloud.file().toString(), "--recorded", "-",
        "--check"), err.toString());
    assertTrue(out().contains("\"total\": 0,"), out());
  }

  @Test
  void noCloudFile_exits1NamingIt_andABadRecordedLine_exits2NamingTheLine() throws Exception {
    assertEquals(1, run("", "cloud-report", "--cloud", dir.resolve("none").toString()));
    assertTrue(err.toString().contains("no cloud file " + dir.resolve("none")), err.toString());
    assertTrue(Files.notExists(dir.resolve("none")), "reading makes no cloud");
    Path file = cloud();
    assertEquals(2, run("vol-1\n", "cloud-report", "--cloud", file.toString(), "--recorded", "-"));
    assertTrue(err.toString().contains("--recorded - line 1 must be 'VOLUME_ID NODE_ID', got 'vol-1'"), err.toString());
    assertEquals(2, run("", "cloud-report"));
    assertTrue(err.toString().contains("--cloud"), err.toString());
  }

  @Test
  void aMalformedCloudFile_exits1NamingTheLine() throws Exception {
    Files.writeString(dir.resolve("cloud"), "disk vol-1 1\ncount double_attach many\n");
    assertEquals(1, run("", "cloud-report", "--cloud", dir.resolve("cloud").toString()));
    assertTrue(err.toString().contains("line 2 is malformed"), err.toString());
  }
}
