package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Objects;

/** Something other than a unix domain socket is at the socket path. */
public final class NotASocketException extends CsiException {
  private static final long serialVersionUID = 1L;

  private final String fileType;

  /**
   * @param fileType what is there, with an article: "a regular file", "a directory", "a FIFO", ...
   */
  public NotASocketException(Path socket, String fileType) {
    super(CsiErrorKind.NOT_A_SOCKET, socket, null, "CSI plugin socket path " + socket + " is "
        + Objects.requireNonNull(fileType, "fileType") + ", not a unix domain socket");
    this.fileType = fileType;
  }

  /** What is at the path instead: "a regular file", "a directory", ... */
  public String fileType() {
    return fileType;
  }
}
