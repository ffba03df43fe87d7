package dev.csisupervisor.volumes;

import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.common.Printable;
import dev.csisupervisor.common.SecretsFiles;
import dev.csisupervisor.volumes.VolumeException.Reason;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where the secrets of a volume's later steps come from, none of them ever written to disk: what the caller of
 * an unmount gave (kept in memory for the controller unpublish until it is done), else the secrets file whose
 * path the record keeps, read again each time, else none (CSI makes secrets optional). Thread-safe.
 */
final class VolumeSecrets {
  /**
   * A claim's or an unmount's {@code secretsFile}: absent, or an absolute path (the agent reads it later, from
   * another working directory).
   *
   * @throws IllegalArgumentException naming the field and the path otherwise
   */
  static void checkFile(Optional<Path> secretsFile) {
    Objects.requireNonNull(secretsFile, "secretsFile");
    secretsFile.ifPresent(f -> {
      if (!f.isAbsolute()) {
        throw new IllegalArgumentException("secretsFile must be an absolute path (the agent reads it later), got "
            + Printable.quote(f.toString()));
      }
    });
  }

  private final Map<VolumeKey, Secrets> controller = new ConcurrentHashMap<>();

  /** The controller unpublish of {@code key} uses {@code secrets} (until the record is gone or the agent stops). */
  void giveController(VolumeKey key, Secrets secrets) {
    if (secrets.isEmpty()) {
      return;
    }
    controller.put(key, secrets);
  }

  /** The volume's record is gone: forget what was given for it. */
  void forget(VolumeKey key) {
    controller.remove(key);
  }

  /** The secrets of ControllerUnpublishVolume for the record. */
  Secrets forController(VolumeRecord r) throws VolumeException {
    Secrets given = controller.get(r.key());
    return given != null ? given : fromFile(r.secretsFile(), r);
  }

  /** The secrets of a stage or publish done again without the claim (after a reboot). */
  Secrets forNode(VolumeRecord r) throws VolumeException {
    return fromFile(r.secretsFile(), r);
  }

  private static Secrets fromFile(Optional<Path> file, VolumeRecord r) throws VolumeException {
    if (file.isEmpty()) {
      return Secrets.none();
    }
    try {
      return Secrets.of(SecretsFiles.read(file.get()));
    } catch (IOException | IllegalArgumentException e) {
      throw new VolumeException(Reason.LOCAL_IO, "volume " + r.key() + ": " + e.getMessage()
          + " (give the secrets again with csi-agent volume unmount --secrets-file)", e);
    }
  }
}
