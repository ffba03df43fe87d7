/** csi-supervisor benchmarks module. */
package dev.csisupervisor.benchmarks;
