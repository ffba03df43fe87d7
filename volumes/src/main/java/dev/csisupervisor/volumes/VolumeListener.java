package dev.csisupervisor.volumes;

/**
 * Receives the manager's {@link VolumeEvent}s on the executor given to
 * {@link VolumeManager#addListener}; a listener that throws is logged and keeps getting events.
 */
@FunctionalInterface
public interface VolumeListener {
  void onEvent(VolumeEvent event);
}
