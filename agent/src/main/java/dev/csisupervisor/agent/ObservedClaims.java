package dev.csisupervisor.agent;

import dev.csisupervisor.volumes.ClusterClaims;
import dev.csisupervisor.volumes.VolumeClaim;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;

/**
 * The cluster claims the volume manager takes, with each refusal told to the operator page (a refused claim names its
 * holder: the banner links it to the volume's claims). Thread-safe as the claims it wraps.
 */
final class ObservedClaims implements ClusterClaims {
  private final ClusterClaims claims;
  private final BiConsumer<VolumeClaim, Throwable> refused;

  ObservedClaims(ClusterClaims claims, BiConsumer<VolumeClaim, Throwable> refused) {
    this.claims = claims;
    this.refused = refused;
  }

  @Override
  public CompletableFuture<Optional<Map<String, String>>> acquire(VolumeClaim claim) {
    CompletableFuture<Optional<Map<String, String>>> f = claims.acquire(claim);
    f.whenComplete((r, failure) -> {
      if (failure != null) {
        refused.accept(claim, failure);
      }
    });
    return f;
  }

  @Override
  public void released(String pluginId, String volumeId, String allocId) {
    claims.released(pluginId, volumeId, allocId);
  }
}
