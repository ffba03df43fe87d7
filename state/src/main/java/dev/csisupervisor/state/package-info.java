/** csi-supervisor state module. */
package dev.csisupervisor.state;
