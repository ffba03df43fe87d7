package dev.csisupervisor.agent;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/** The directories the agent needs before anything else ({@code data_dir}, {@code csi_root}). */
final class AgentDirs {
  private AgentDirs() {}

  /**
   * Makes {@code dir} (mode 0700) if it is not there.
   *
   * @throws AgentException naming {@code field} and the path: not a directory (a config error), not creatable, or
   *     not writable
   */
  static void prepare(Path dir, String field) throws AgentException {
    if (Files.exists(dir) && !Files.isDirectory(dir)) {
      throw new AgentException(field + ": " + dir + " exists and is not a directory", null, true);
    }
    try {
      if (!Files.isDirectory(dir)) {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      }
    } catch (FileAlreadyExistsException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: " + e.getFile()
          + " exists and is not a directory", e, true);
    } catch (AccessDeniedException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: permission denied ("
          + e.getFile() + ")", e);
    } catch (IOException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: " + e, e);
    }
    if (!Files.isWritable(dir)) {
      throw new AgentException(field + " " + dir + " is not writable");
    }
  }
}
