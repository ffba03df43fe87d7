/**
 * The dynamic plugin registry: which CSI plugins are registered on this node, persisted through a
 * {@link dev.csisupervisor.state.StateStore}, with ordered per-type events for subscribers.
 *
 * <p>Contracts ({@link dev.csisupervisor.registry.PluginRegistry}, the value records, the listener and
 * dispenser interfaces) are public; the implementation ({@code DefaultPluginRegistry}), the subscriber queue
 * and the record codec are package-private and built through {@link dev.csisupervisor.registry.PluginRegistry#builder()}.
 */
package dev.csisupervisor.registry;
