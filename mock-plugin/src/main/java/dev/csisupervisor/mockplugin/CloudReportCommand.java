package dev.csisupervisor.mockplugin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code csi-mock-plugin cloud-report --cloud FILE [--recorded FILE|-] [--check]}: prints a shared cloud's
 * {@link CloudReport} as JSON; with {@code --recorded}, also the attachments the CO's records do not have.
 */
@Command(name = "cloud-report", mixinStandardHelpOptions = true,
    description = {"Prints what a shared cloud (--cloud of the plugins) holds and what its oracle counted, as JSON:",
        "counts (double_attach: a single-node disk attached to a second node, refused or not; detach_in_use:",
        "a disk detached from a node that still has it staged or published; deposed_controller_call: a",
        "controller call whose csi-supervisor-election revision is lower than one an earlier call of that",
        "plugin carried), the attachments now, what node plugins have staged and published, the highest",
        "election revision per plugin name, and the last violations."},
    footer = {"",
        "--recorded FILE: the attachments the CO records, one 'VOLUME_ID NODE_ID' per line ('#' comments and",
        "blank lines skipped; '-' reads stdin). The report then also counts unrecorded_attachment: disks",
        "attached to a node with no such line.",
        "",
        "Exit codes: 0 printed (with --check: every count 0), 1 no such cloud file or it cannot be read,",
        "2 bad arguments, 4 --check and some count above 0."})
final class CloudReportCommand implements Callable<Integer> {
  static final int UNREADABLE_EXIT_CODE = 1;
  static final int VIOLATIONS_EXIT_CODE = 4;

  @Spec
  private CommandSpec spec;

  @Option(names = "--cloud", paramLabel = "PATH", required = true, description = "The cloud file.")
  private Path cloud;

  @Option(names = "--recorded", paramLabel = "FILE",
      description = "Attachments the CO records ('VOLUME_ID NODE_ID' lines; '-' for stdin), to find unrecorded ones.")
  private String recorded;

  @Option(names = "--check", description = "Exit 4 if any count (unrecorded_attachment included) is above 0.")
  private boolean check;

  private final PrintStream out;
  private final InputStream in;

  CloudReportCommand(PrintStream out, InputStream in) {
    this.out = out;
    this.in = in;
  }

  @Override
  public Integer call() {
    Optional<Set<Map.Entry<String, String>>> records = recorded == null ? Optional.empty() : Optional.of(records());
    CloudReport report;
    try {
      report = CloudReport.read(cloud);
    } catch (NoSuchFileException e) {
      spec.commandLine().getErr().println("csi-mock-plugin cloud-report: no cloud file " + cloud);
      return UNREADABLE_EXIT_CODE;
    } catch (IOException e) {
      spec.commandLine().getErr().println("csi-mock-plugin cloud-report: " + e.getMessage());
      return UNREADABLE_EXIT_CODE;
    }
    Optional<List<CloudReport.Attachment>> unrecorded =
        records.map(r -> report.unrecorded((volume, node) -> r.contains(Map.entry(volume, node))));
    out.print(report.toJson(unrecorded));
    out.flush();
    long total = report.total() + unrecorded.map(List::size).orElse(0);
    return check && total > 0 ? VIOLATIONS_EXIT_CODE : 0;
  }

  /** The (volume, node) pairs of {@code --recorded}. */
  private Set<Map.Entry<String, String>> records() {
    Set<Map.Entry<String, String>> out = new HashSet<>();
    try (BufferedReader r = new BufferedReader(reader())) {
      String line;
      int n = 0;
      while ((line = r.readLine()) != null) {
        n++;
        String t = line.strip();
        if (t.isEmpty() || t.startsWith("#")) {
          continue;
        }
        String[] f = t.split("\\s+");
        if (f.length != 2) {
          throw new ParameterException(spec.commandLine(), "--recorded " + recorded + " line " + n
              + " must be 'VOLUME_ID NODE_ID', got '" + line + "'");
        }
        out.add(Map.entry(f[0], f[1]));
      }
    } catch (IOException e) {
      throw new ParameterException(spec.commandLine(), "--recorded " + recorded + " cannot be read: " + e.getMessage());
    }
    return out;
  }

  private Reader reader() throws IOException {
    if (recorded.equals("-")) {
      return new InputStreamReader(in, StandardCharsets.UTF_8);
    }
    return Files.newBufferedReader(Path.of(recorded), StandardCharsets.UTF_8);
  }
}
