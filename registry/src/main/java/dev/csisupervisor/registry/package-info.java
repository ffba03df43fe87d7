/** csi-supervisor registry module. */
package dev.csisupervisor.registry;
