package dev.csisupervisor.volumes;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A volume mounted for an allocation.
 *
 * @param pluginId the node plugin
 * @param volumeId the volume
 * @param allocId the allocation
 * @param usage how it is used
 * @param targetPath where the plugin published it: what the task runner binds into the task
 * @param stagingPath where it is staged, if the plugin stages
 */
public record MountedVolume(String pluginId, String volumeId, String allocId, VolumeUsage usage, Path targetPath,
    Optional<Path> stagingPath) {}
