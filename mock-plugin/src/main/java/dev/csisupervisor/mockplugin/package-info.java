/** csi-supervisor mock-plugin module. */
package dev.csisupervisor.mockplugin;
