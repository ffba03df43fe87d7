package dev.csisupervisor.catalog;

/**
 * A volume's access mode as the cluster checks it across nodes: CSI's {@code VolumeCapability.AccessMode.Mode}
 * (same names). The catalog knows nothing of the CSI client, so it keeps its own copy of the rules:
 * <ul>
 *   <li>a single-node mode keeps every claim of the volume on one node;</li>
 *   <li>a reader-only mode allows read-only claims only;</li>
 *   <li>a single-writer mode ({@code SINGLE_NODE_WRITER}, read as one writer as Nomad does,
 *       {@code SINGLE_NODE_SINGLE_WRITER}, {@code MULTI_NODE_SINGLE_WRITER}) allows one writing claim, cluster-wide;</li>
 *   <li>the multi-writer modes allow many writers (on one node for {@code SINGLE_NODE_MULTI_WRITER}).</li>
 * </ul>
 */
public enum VolumeAccessMode {
  SINGLE_NODE_WRITER(true, false),
  SINGLE_NODE_READER_ONLY(false, false),
  MULTI_NODE_READER_ONLY(false, true),
  MULTI_NODE_SINGLE_WRITER(true, true),
  MULTI_NODE_MULTI_WRITER(true, true),
  SINGLE_NODE_SINGLE_WRITER(true, false),
  SINGLE_NODE_MULTI_WRITER(true, false);

  private final boolean writable;
  private final boolean multiNode;

  VolumeAccessMode(boolean writable, boolean multiNode) {
    this.writable = writable;
    this.multiNode = multiNode;
  }

  public boolean writable() {
    return writable;
  }

  public boolean multiNode() {
    return multiNode;
  }

  /** At most one writing claim of the volume, cluster-wide. */
  public boolean singleWriter() {
    return writable && this != MULTI_NODE_MULTI_WRITER && this != SINGLE_NODE_MULTI_WRITER;
  }

  /**
   * The mode of this name.
   *
   * @throws IllegalArgumentException naming {@code field} and the value, with the modes there are
   */
  public static VolumeAccessMode parse(String field, String name) {
    if (name == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    try {
      return valueOf(name.trim().toUpperCase(java.util.Locale.ROOT).replace('-', '_'));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(field + " must be one of " + java.util.Arrays.toString(values()) + ", got '"
          + name + "'", e);
    }
  }
}
