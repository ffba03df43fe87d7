package dev.csisupervisor.client;

/**
 * How capabilities are named in {@link PluginFingerprint} and in the capability calls of
 * {@link CsiClient}, with constants for the ones callers usually test.
 *
 * <p>Naming rules:
 * <ul>
 *   <li>Plugin capabilities ({@code GetPluginCapabilities}) are {@code <oneof case>:<enum name>}:
 *       {@code "SERVICE:CONTROLLER_SERVICE"}, {@code "SERVICE:VOLUME_ACCESSIBILITY_CONSTRAINTS"},
 *       {@code "SERVICE:GROUP_CONTROLLER_SERVICE"}, {@code "SERVICE:SNAPSHOT_METADATA_SERVICE"},
 *       {@code "VOLUME_EXPANSION:ONLINE"}, {@code "VOLUME_EXPANSION:OFFLINE"}. The prefix keeps
 *       {@code ONLINE}/{@code OFFLINE} unambiguous.</li>
 *   <li>Controller and Node capabilities have a single oneof case ({@code rpc}), so they are the
 *       bare enum name: {@code "CREATE_DELETE_VOLUME"}, {@code "STAGE_UNSTAGE_VOLUME"}, ...</li>
 *   <li>An enum number this build does not know (a newer plugin) is kept as {@code UNKNOWN(<n>)}
 *       in place of the name: {@code "SERVICE:UNKNOWN(42)"}, {@code "UNKNOWN(42)"}. Enum value 0 is
 *       CSI's own {@code UNKNOWN}.</li>
 *   <li>A capability whose oneof case this build does not know at all is kept as
 *       {@code UNKNOWN_TYPE(<field numbers>)}, e.g. {@code "UNKNOWN_TYPE(3)"}; a capability
 *       message that is completely empty carries no information and is skipped.</li>
 * </ul>
 * Unknown values are never an error.
 */
public final class CsiCapabilities {
  private CsiCapabilities() {}

  /** Plugin capability: the Controller service is implemented. */
  public static final String CONTROLLER_SERVICE = "SERVICE:CONTROLLER_SERVICE";
  /** Plugin capability: volumes are not equally accessible from all nodes. */
  public static final String VOLUME_ACCESSIBILITY_CONSTRAINTS =
      "SERVICE:VOLUME_ACCESSIBILITY_CONSTRAINTS";
  /** Plugin capability: the GroupController service is implemented. */
  public static final String GROUP_CONTROLLER_SERVICE = "SERVICE:GROUP_CONTROLLER_SERVICE";
  /** Plugin capability: the SnapshotMetadata service is implemented (alpha). */
  public static final String SNAPSHOT_METADATA_SERVICE = "SERVICE:SNAPSHOT_METADATA_SERVICE";
  /** Plugin capability: volumes can be expanded while published. */
  public static final String VOLUME_EXPANSION_ONLINE = "VOLUME_EXPANSION:ONLINE";
  /** Plugin capability: volumes can be expanded only while unpublished. */
  public static final String VOLUME_EXPANSION_OFFLINE = "VOLUME_EXPANSION:OFFLINE";

  /** Controller capability: CreateVolume / DeleteVolume. */
  public static final String CREATE_DELETE_VOLUME = "CREATE_DELETE_VOLUME";
  /** Controller capability: ControllerPublishVolume / ControllerUnpublishVolume. */
  public static final String PUBLISH_UNPUBLISH_VOLUME = "PUBLISH_UNPUBLISH_VOLUME";
  /** Controller and Node capability: volume expansion RPCs. */
  public static final String EXPAND_VOLUME = "EXPAND_VOLUME";
  /** Controller: ControllerPublishVolume honours {@code readonly}; without it the CO must send {@code false}. */
  public static final String PUBLISH_READONLY = "PUBLISH_READONLY";
  /** Controller capability: CreateSnapshot / DeleteSnapshot, and CreateVolume from a snapshot. */
  public static final String CREATE_DELETE_SNAPSHOT = "CREATE_DELETE_SNAPSHOT";
  /** Controller capability: CreateVolume with another volume as its content source. */
  public static final String CLONE_VOLUME = "CLONE_VOLUME";
  /** Controller capability: ControllerModifyVolume, and mutable_parameters in CreateVolume. */
  public static final String MODIFY_VOLUME = "MODIFY_VOLUME";

  /** Node capability: NodeStageVolume / NodeUnstageVolume. */
  public static final String STAGE_UNSTAGE_VOLUME = "STAGE_UNSTAGE_VOLUME";
  /** Node capability: NodeGetVolumeStats. */
  public static final String GET_VOLUME_STATS = "GET_VOLUME_STATS";

  /** Controller and Node capability: volume condition is reported. */
  public static final String VOLUME_CONDITION = "VOLUME_CONDITION";
  /** Controller and Node capability: the SINGLE_NODE_SINGLE/MULTI_WRITER access modes. */
  public static final String SINGLE_NODE_MULTI_WRITER = "SINGLE_NODE_MULTI_WRITER";
}
