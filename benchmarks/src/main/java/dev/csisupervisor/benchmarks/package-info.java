/**
 * Benchmarks of csi-supervisor: JMH micro-benchmarks (registry change cost, concurrent writers,
 * fan-out, probe round trip, an fsync baseline) and end-to-end harness mains (time to register,
 * restore, supervision at scale, stuck subscriber). Run by {@code benchmarks/run.sh quick|full}
 * through {@link dev.csisupervisor.benchmarks.Main}, never by the build; results and how to read them
 * are in {@code benchmarks/README.md}. Nothing here is API: every class is a benchmark or its
 * plumbing, single-purpose and package-private where JMH allows.
 */
package dev.csisupervisor.benchmarks;
