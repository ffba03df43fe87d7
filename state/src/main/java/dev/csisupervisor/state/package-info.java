/**
 * Durable per-key state for the csi-supervisor registry.
 *
 * <p>{@link dev.csisupervisor.state.StateStore} is the narrow contract: string keys, opaque byte values,
 * per-key {@code put}/{@code delete} that are durable when they return, and an atomic multi-change
 * {@code apply} used for group commit. The module knows nothing about plugins; record encoding lives with
 * the registry. {@link dev.csisupervisor.state.MapDbStateStore} keeps the records in a MapDB file with
 * transactions (a commit survives kill -9); {@link dev.csisupervisor.state.InMemoryStateStore} is for
 * tests and ephemeral agents and can inject commit failures.
 */
package dev.csisupervisor.state;
