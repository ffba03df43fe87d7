package dev.csisupervisor.agent.commands;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the CLI says without an agent to talk to — every admin command's help, the top level's, and the usage
 * errors of the ways a command line goes wrong — exactly as {@code cli-text.txt} has it (its exit code, stdout and
 * stderr per command line). The file was written by this test from the command line as it was before the admin
 * commands' models were built without annotations; a change to any of these texts shows up here as a diff.
 * {@code -Dcli.text.write=PATH} writes the file anew (then review the diff).
 */
class CliTextTest {
  /** No agent is there: the commands that get as far as calling one fail the same way each time. */
  private static final String NOWHERE = "--admin-socket=/nonexistent/csi-agent-test/agent.sock";

  private static final List<String> COMMAND_LINES = List.of(
      "",
      "--help",
      "-h",
      "--version",
      "help",
      "help volume",
      "bogus",
      "plugins --help",
      "plugins -V",
      "plugins " + NOWHERE,
      "plugins --json " + NOWHERE,
      "plugins --type controller " + NOWHERE,
      "plugins --type NODE " + NOWHERE,
      "plugins --type bogus " + NOWHERE,
      "plugins --type",
      "plugins --bogus " + NOWHERE,
      "plugins extra " + NOWHERE,
      "plugins --admin-socket /a.sock --config /b.yaml",
      "plugins --config /nonexistent/csi-agent-test/agent.yaml",
      "plugins --admin-socket /a.sock --admin-socket /b.sock",
      "status --help",
      "status " + NOWHERE,
      "reload --help",
      "reload " + NOWHERE,
      "events --help",
      "events -f " + NOWHERE,
      "events --type node --follow " + NOWHERE,
      "plugin --help",
      "plugin",
      "plugin node",
      "plugin bogus mock " + NOWHERE,
      "plugin monolith mock " + NOWHERE,
      "plugin node mock --json " + NOWHERE,
      "plugin node mock extra " + NOWHERE,
      "volume",
      "volume --help",
      "volume -V",
      "volume bogus",
      "volume create --help",
      "volume delete --help",
      "volume mount --help",
      "volume unmount --help",
      "volume release --help",
      "volume list --help",
      "volume stats --help",
      "volume expand --help",
      "volume gc --help",
      "volume list " + NOWHERE,
      "volume list --json " + NOWHERE,
      "volume mount",
      "volume mount --plugin p",
      "volume mount --plugin p --volume v --alloc a " + NOWHERE,
      "volume mount --plugin=p --volume=v --alloc=a --access-mode multi-node-multi-writer --block --fs-type ext4"
          + " --mount-flag ro --mount-flag noatime --mount-group 100 --read-only --context a=b --context c=d"
          + " --publish-context e=f --secrets-file /nonexistent/secrets " + NOWHERE,
      "volume mount --plugin p --plugin q --volume v --alloc a " + NOWHERE,
      "volume mount --plugin p --volume v --alloc a --context novalue " + NOWHERE,
      "volume mount --plugin p --volume v --alloc a --bogus " + NOWHERE,
      "volume mount --plugin p --volume v --alloc a --block=maybe " + NOWHERE,
      "volume create --plugin p " + NOWHERE,
      "volume create --plugin p --name n --size 1GiB --parameter k=v --topology z=a " + NOWHERE,
      "volume delete --plugin p --volume v " + NOWHERE,
      "volume unmount --plugin p --volume v --alloc a --wait 5 --force " + NOWHERE,
      "volume unmount --plugin p --volume v --alloc a --wait x " + NOWHERE,
      "volume release " + NOWHERE,
      "volume release --alloc a --wait 0 " + NOWHERE,
      "volume stats --plugin p --volume v " + NOWHERE,
      "volume expand --plugin p --volume v " + NOWHERE,
      "volume gc --yes " + NOWHERE,
      "volume gc --yes --json " + NOWHERE);

  @Test
  void everyText_isAsItWas() throws IOException {
    StringBuilder all = new StringBuilder();
    for (String line : COMMAND_LINES) {
      all.append(run(line));
    }
    String write = System.getProperty("cli.text.write");
    if (write != null) {
      Files.writeString(Path.of(write), all);
    }
    assertEquals(expected(), all.toString());
  }

  /** One command line's section of the file: the line, its exit code, what it printed on stdout and on stderr. */
  private static String run(String line) {
    String[] args = line.isEmpty() ? new String[0] : line.split(" ");
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = CsiAgentCommand.commandLine(new PrintWriter(out, true), new PrintWriter(err, true), args)
        .execute(args);
    return "$ csi-agent " + line + "\nexit " + code + "\n--- stdout\n" + out + "--- stderr\n" + err + "---\n\n";
  }

  private static String expected() throws IOException {
    try (InputStream in = CliTextTest.class.getResourceAsStream("cli-text.txt")) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
