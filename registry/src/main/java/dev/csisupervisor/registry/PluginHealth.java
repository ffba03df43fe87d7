package dev.csisupervisor.registry;

import java.time.Instant;

/**
 * A plugin's health as last probed: the flag, the last message ({@code ""} when there is none, never null)
 * and the time the flag or message last changed.
 */
public record PluginHealth(boolean healthy, String message, Instant since) {

  public PluginHealth {
    Checks.notNull(message, "message");
    Checks.notNull(since, "since");
  }

  /** Healthy with no message. */
  public static PluginHealth healthy(Instant since) {
    return new PluginHealth(true, "", since);
  }

  /** Unhealthy with a reason. */
  public static PluginHealth unhealthy(String message, Instant since) {
    return new PluginHealth(false, message, since);
  }

  /** Equal flag and message, whatever {@link #since()} says. */
  public boolean sameStateAs(PluginHealth other) {
    return other != null && healthy == other.healthy && message.equals(other.message);
  }
}
