/**
 * Durable per-key state for the csi-supervisor registry.
 *
 * <p>{@link dev.csisupervisor.state.StateStore} is the narrow contract: string keys, opaque byte values,
 * per-key {@code put}/{@code delete} that are durable when they return, and an atomic multi-change
 * {@code apply} used for group commit. The module knows nothing about plugins; record encoding lives with
 * the registry. {@link dev.csisupervisor.state.JournalStateStore} keeps them in an append-only journal (one
 * write and one fsync per commit, torn tails dropped, damage reported) folded into MapDB checkpoints; {@link dev.csisupervisor.state.InMemoryStateStore} is for
 * tests and ephemeral agents and can inject commit failures.
 */
package dev.csisupervisor.state;
