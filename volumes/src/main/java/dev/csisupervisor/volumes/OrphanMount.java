package dev.csisupervisor.volumes;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * A mount point below a plugin's {@code staging/} or {@code per-alloc/} directory that no volume record names:
 * left by a crash before the record was written, by another agent's data dir, or by hand.
 *
 * @param path the mount point
 * @param removed whether this collection unmounted it
 * @param error why it could not be, if it was asked to and could not
 */
public record OrphanMount(Path path, boolean removed, Optional<String> error) {
  public OrphanMount {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(error, "error");
  }
}
