/** csi-supervisor tests module. */
package dev.csisupervisor.tests;
