package dev.csisupervisor.mockplugin;

import io.grpc.Status;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The line commands of {@code --stdin-control}: reads one command a line from stdin, applies it to
 * the running {@link MockCsiPlugin} and answers {@code OK <command>} (or the command's own answer)
 * or {@code ERR <reason>} on stdout. The commands are listed in {@link MockPluginCommand}'s help
 * footer. Runs on one thread of its own ({@link #run()}); replies are written whole, one line at a
 * time, so they never interleave with other output.
 */
final class StdinControl implements Runnable {

  private static final Logger log = LoggerFactory.getLogger(StdinControl.class);

  private final MockCsiPlugin plugin;
  private final InputStream in;
  private final PrintStream out;
  private final String failMessage;
  private final Runnable crash;

  /**
   * @param failMessage the message of {@code fail CODE} without one (the command's {@code --fail-message})
   * @param crash what {@code crash} does: the command's crash, which may halt the JVM
   */
  StdinControl(MockCsiPlugin plugin, InputStream in, PrintStream out, String failMessage, Runnable crash) {
    this.plugin = plugin;
    this.in = in;
    this.out = out;
    this.failMessage = failMessage;
    this.crash = crash;
  }

  /** Obeys commands until stdin ends. */
  @Override
  public void run() {
    try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = reader.readLine()) != null) {
        String command = line.strip();
        if (command.isEmpty()) {
          continue;
        }
        try {
          apply(command);
        } catch (RuntimeException e) {
          reply("ERR " + e.getMessage());
        }
      }
      // EOF: the parent closed our stdin; keep serving until stopped some other way.
    } catch (IOException e) {
      log.warn("reading stdin commands failed: {}", e.toString());
    }
  }

  /**
   * Applies one stdin command and replies {@code OK <command>}. Crash and stop reply first: after
   * them there may be no process left to reply.
   */
  private void apply(String command) {
    String[] words = command.split("\\s+", 2);
    String verb = words[0].toLowerCase(Locale.ROOT);
    String arg = words.length > 1 ? words[1].strip() : "";
    switch (verb) {
      case "ready" -> plugin.setReady(true);
      case "not-ready", "never-ready" -> plugin.setReady(false);
      case "ready-after" -> plugin.readyAfter(Duration.ofMillis(millis(verb, arg)));
      case "hang" -> {
        if (arg.isEmpty()) {
          plugin.hangProbes(true);
        } else {
          String[] parts = arg.split("\\s+");
          if (parts.length > 2) {
            throw new IllegalArgumentException("hang takes RPC [TIMES], got '" + arg + "'");
          }
          plugin.hangCalls(parts[0], parts.length > 1 ? times(parts[1]) : -1);
        }
      }
      case "unhang" -> plugin.hangProbes(false);
      case "fail" -> {
        String[] parts = arg.split("\\s+", 2);
        if (parts[0].isEmpty()) {
          throw new IllegalArgumentException("fail needs a status code, e.g. 'fail UNAVAILABLE'");
        }
        Status.Code probeCode = statusCode(parts[0]);
        if (probeCode != null) {
          plugin.failProbes(probeCode, parts.length > 1 ? parts[1] : failMessage);
        } else {
          failCalls(arg);
        }
      }
      case "delay" -> {
        String[] parts = arg.split("\\s+");
        if (parts.length != 2) {
          throw new IllegalArgumentException("delay takes RPC DURATION, e.g. 'delay NodeStageVolume 500ms', got '"
              + arg + "'");
        }
        plugin.delayCalls(parts[0], FaultFlags.duration(parts[1]));
      }
      case "clear-faults" -> plugin.clearFaults();
      case "calls" -> {
        reply("OK calls " + required(verb, arg) + " " + plugin.callCount(arg));
        return;
      }
      case "unfail" -> plugin.clearProbeFailure();
      case "flap" -> plugin.flap(Duration.ofMillis(millis(verb, arg)));
      case "unflap" -> plugin.stopFlapping();
      case "latency" -> plugin.setLatency(Duration.ofMillis(millis(verb, arg)));
      case "version" -> plugin.setVendorVersion(required(verb, arg));
      case "name" -> plugin.setName(required(verb, arg));
      case "status" -> {
        reply("OK status probes=" + plugin.probeCount() + " hung=" + plugin.hungProbeCount()
            + " ready=" + plugin.isReadyNow());
        return;
      }
      case "crash" -> {
        reply("OK crash");
        crash.run();
        return;
      }
      case "stop" -> {
        reply("OK stop");
        plugin.stop();
        return;
      }
      default -> throw new IllegalArgumentException("unknown command: " + command);
    }
    reply("OK " + command);
  }

  /** {@code RPC CODE [TIMES] [MESSAGE]}: TIMES is there if the word after the code is a count or "always". */
  private void failCalls(String arg) {
    String[] parts = arg.split("\\s+", 4);
    if (parts.length < 2) {
      throw new IllegalArgumentException("fail takes CODE [MESSAGE] for probes or RPC CODE [TIMES] [MESSAGE],"
          + " e.g. 'fail NodePublishVolume UNAVAILABLE 2', got '" + arg + "'");
    }
    String method = parts[0];
    Status.Code code = statusCode(parts[1]);
    if (code == null) {
      throw new IllegalArgumentException("fail " + method + " needs a gRPC status code, got '" + parts[1] + "'");
    }
    int times = -1;
    String message = null;
    if (parts.length > 2) {
      Integer count = parts[2].equalsIgnoreCase("always") ? Integer.valueOf(-1) : integerOrNull(parts[2]);
      if (count != null) {
        times = count;
        message = parts.length > 3 ? parts[3] : null;
      } else {
        message = arg.split("\\s+", 3)[2];
      }
    }
    plugin.failCalls(method, code, message != null ? message : "mock " + method + " failure", times);
  }

  /** The status code of that name, any case; null if it names none. */
  private static Status.Code statusCode(String word) {
    try {
      return Status.Code.valueOf(word.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private static int times(String word) {
    if (word.equalsIgnoreCase("always")) {
      return -1;
    }
    Integer count = integerOrNull(word);
    if (count == null) {
      throw new IllegalArgumentException("TIMES must be a count or 'always', got '" + word + "'");
    }
    return count;
  }

  private static Integer integerOrNull(String word) {
    try {
      return Integer.valueOf(word);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private void reply(String line) {
    synchronized (out) {
      out.println(line);
      out.flush();
    }
  }

  private static long millis(String verb, String arg) {
    try {
      long ms = Long.parseLong(required(verb, arg));
      if (ms < 0) {
        throw new IllegalArgumentException(verb + " needs milliseconds >= 0: " + arg);
      }
      return ms;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(verb + " needs milliseconds: '" + arg + "'");
    }
  }

  private static String required(String verb, String arg) {
    if (arg.isEmpty()) {
      throw new IllegalArgumentException(verb + " needs an argument");
    }
    return arg;
  }
}
