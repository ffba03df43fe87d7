package dev.csisupervisor.cli;

import com.google.protobuf.MessageOrBuilder;
import java.io.PrintWriter;

/**
 * An admin command that asks the agent one thing and prints the answer: as JSON with
 * {@code --json}, else as text for people. The exit code depends on the answer, not on its form.
 */
abstract class ResponseCommand<R extends MessageOrBuilder> extends AdminCommand {
  ResponseCommand(AgentConfigReader configs, String name, String... description) {
    super(configs, name, description);
  }

  /** The agent's answer. */
  abstract R ask(AdminClient client) throws AdminClient.AdminException;

  /** Prints the answer for people. */
  abstract void print(R response, PrintWriter out, PrintWriter err);

  /** The exit code for the answer: {@link ExitCodes#OK} unless a command says otherwise. */
  int exitCode(R response) {
    return ExitCodes.OK;
  }

  @Override
  final int run(AdminClient client, PrintWriter out, PrintWriter err)
      throws AdminClient.AdminException {
    R response = ask(client);
    if (json()) {
      out.println(Format.json(response, true));
    } else {
      print(response, out, err);
    }
    return exitCode(response);
  }
}
