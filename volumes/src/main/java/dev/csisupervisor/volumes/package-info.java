/**
 * The node volume manager: takes a volume from "claimed by a task" to a mounted path through the
 * node plugin (NodeStageVolume once per volume and usage, NodePublishVolume per allocation) and
 * back, recording every operation's intent before its CSI call and its result after it, so that
 * no mount is lost or leaked across crashes of the agent or the plugin. {@link
 * dev.csisupervisor.volumes.VolumeManager} is the entry point; {@link
 * dev.csisupervisor.volumes.VolumeTaskHook} is what a task runner calls.
 */
package dev.csisupervisor.volumes;
