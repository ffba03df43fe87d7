package dev.csisupervisor.client;

/**
 * The answer to CSI {@code Identity.Probe}.
 *
 * <p>{@code ready} is the plugin's {@code ProbeResponse.ready}. The CSI spec says a response
 * without that field means ready ("If not present, the caller SHALL assume that the plugin is in a
 * ready state"), so an absent field gives {@code ready == true}. An unhealthy plugin answers with
 * an error status instead, which surfaces as {@link CsiStatusException}.
 *
 * @param ready true if the plugin is ready to serve its Controller/Node calls
 */
public record ProbeResult(boolean ready) {
  /** A ready result. */
  public static final ProbeResult READY = new ProbeResult(true);
  /** A still-initializing result. */
  public static final ProbeResult NOT_READY = new ProbeResult(false);

  /** The shared instance for {@code ready}. */
  public static ProbeResult of(boolean ready) {
    return ready ? READY : NOT_READY;
  }
}
