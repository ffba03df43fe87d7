/** csi-supervisor supervisor module. */
package dev.csisupervisor.supervisor;
