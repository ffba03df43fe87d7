package dev.csisupervisor.client;

import java.util.Map;
import java.util.Objects;

/**
 * The {@code secrets} map of a CSI request. It is passed to the plugin as given and is never
 * shown: {@link #toString()} names how many keys there are, not the keys or values, so a request
 * that is logged or put in an exception message cannot leak one. Nothing in the project writes it
 * to disk. Immutable.
 */
public final class Secrets {
  private static final Secrets NONE = new Secrets(Map.of());

  private final Map<String, String> values;

  private Secrets(Map<String, String> values) {
    this.values = values;
  }

  /** No secrets. */
  public static Secrets none() {
    return NONE;
  }

  /**
   * These secrets (copied).
   *
   * @throws IllegalArgumentException if a key is blank or a key or value is null (the message never
   *     contains a value)
   */
  public static Secrets of(Map<String, String> values) {
    Objects.requireNonNull(values, "secrets");
    for (Map.Entry<String, String> e : values.entrySet()) {
      if (e.getKey() == null || e.getKey().isBlank() || e.getValue() == null) {
        throw new IllegalArgumentException("secrets must not contain a blank or null key or a null value");
      }
    }
    return values.isEmpty() ? NONE : new Secrets(Map.copyOf(values));
  }

  /** The values, to put into a request. Do not log them. */
  public Map<String, String> reveal() {
    return values;
  }

  public boolean isEmpty() {
    return values.isEmpty();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Secrets other && values.equals(other.values);
  }

  @Override
  public int hashCode() {
    return values.hashCode();
  }

  @Override
  public String toString() {
    return values.isEmpty() ? "Secrets[none]" : "Secrets[" + values.size() + " key(s), redacted]";
  }
}
