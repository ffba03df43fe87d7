/** csi-supervisor csi-client module. */
package dev.csisupervisor.client;
