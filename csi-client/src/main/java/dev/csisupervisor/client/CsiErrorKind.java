package dev.csisupervisor.client;

/**
 * What went wrong in a {@link CsiException}, one constant per subtype, for callers that
 * switch on the failure (metrics labels, task events, retry decisions).
 */
public enum CsiErrorKind {
  /** {@link SocketNotFoundException}: nothing exists at the socket path. */
  SOCKET_NOT_FOUND,
  /** {@link NotASocketException}: the path exists but is a file, directory, FIFO, ... */
  NOT_A_SOCKET,
  /** {@link SocketPermissionException}: the process may not look up or connect to the socket. */
  PERMISSION_DENIED,
  /** {@link SocketPathTooLongException}: the path is over the unix limit; never connected. */
  SOCKET_PATH_TOO_LONG,
  /** {@link ConnectionRefusedException}: a socket file with nothing accepting (stale or not yet listening). */
  CONNECTION_REFUSED,
  /** {@link NotCsiServerException}: the peer is not a gRPC server or does not implement CSI Identity. */
  NOT_CSI_SERVER,
  /** {@link CsiDeadlineExceededException}: no answer within the call's deadline. */
  DEADLINE_EXCEEDED,
  /** {@link CsiStatusException}: the plugin answered with a gRPC error status. */
  PLUGIN_ERROR,
  /** {@link ResponseTooLargeException}: the response was over the inbound message size limit. */
  RESPONSE_TOO_LARGE,
  /** {@link InvalidResponseException}: the plugin answered, but a field CSI requires is missing or invalid. */
  INVALID_RESPONSE,
  /** {@link ConnectionLostException}: an established connection broke during the call. */
  CONNECTION_LOST,
  /** {@link CallCancelledException}: the client was closed or the calling thread interrupted. */
  CANCELLED
}
