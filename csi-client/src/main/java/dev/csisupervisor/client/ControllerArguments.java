package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;

/** Checks of arguments that several Controller calls share, each naming its field. */
final class ControllerArguments {
  private ControllerArguments() {}

  /**
   * The paging of {@code ListVolumes} and {@code ListSnapshots}.
   *
   * @throws IllegalArgumentException naming the field: a negative {@code maxEntries}, a blank token
   */
  static void paging(int maxEntries, Optional<String> startingToken) {
    if (maxEntries < 0) {
      throw new IllegalArgumentException("maxEntries must not be negative (0: no limit), got " + maxEntries);
    }
    Objects.requireNonNull(startingToken, "startingToken");
    startingToken.ifPresent(t -> Values.requireNonBlank(t, "startingToken"));
  }

  /**
   * A sorted copy of CSI's {@code mutable_parameters}.
   *
   * @param atLeastOne whether it may be empty ({@code ControllerModifyVolume} requires one)
   * @throws IllegalArgumentException naming the field: a blank key, none where one is needed
   */
  static SortedMap<String, String> mutableParameters(Map<String, String> parameters, boolean atLeastOne) {
    SortedMap<String, String> copy = Values.copyOf(parameters, "mutableParameters");
    if (atLeastOne && copy.isEmpty()) {
      throw new IllegalArgumentException("mutableParameters must not be empty (CSI requires at least one)");
    }
    if (copy.keySet().stream().anyMatch(String::isBlank)) {
      throw new IllegalArgumentException("mutableParameters must not have a blank key, got " + copy.keySet());
    }
    return copy;
  }
}
