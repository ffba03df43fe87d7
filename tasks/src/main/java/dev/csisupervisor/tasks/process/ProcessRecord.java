package dev.csisupervisor.tasks.process;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * What the agent remembers about a plugin process it launched, so that after an agent restart it
 * can re-attach to the process instead of launching a second copy.
 *
 * @param id          the plugin id
 * @param pid         the process id
 * @param startMillis the process's start time (epoch ms, as the OS reports it), or -1 if unknown;
 *                    guards against a reused pid
 * @param commandLine the full command line the agent launched
 * @param socket      the plugin's socket
 */
public record ProcessRecord(
    @JsonProperty("id") String id,
    @JsonProperty("pid") long pid,
    @JsonProperty("start_millis") long startMillis,
    @JsonProperty("command_line") List<String> commandLine,
    @JsonProperty("socket") String socket) {

  public ProcessRecord {
    requireNonNull(id, "id");
    requireNonNull(socket, "socket");
    commandLine = List.copyOf(requireNonNull(commandLine, "commandLine"));
    if (pid <= 0) {
      throw new IllegalArgumentException("pid must be > 0, got " + pid);
    }
  }
}
