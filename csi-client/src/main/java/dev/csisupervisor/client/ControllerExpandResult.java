package dev.csisupervisor.client;

/**
 * What {@code ControllerExpandVolume} returned.
 *
 * @param capacityBytes the volume's size now
 * @param nodeExpansionRequired whether {@code NodeExpandVolume} must follow on the node
 */
public record ControllerExpandResult(long capacityBytes, boolean nodeExpansionRequired) {}
