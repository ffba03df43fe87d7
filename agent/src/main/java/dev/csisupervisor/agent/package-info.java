/** csi-supervisor agent module. */
package dev.csisupervisor.agent;
