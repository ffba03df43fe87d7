package dev.csisupervisor.client;

/**
 * A volume's access mode, CSI's {@code VolumeCapability.AccessMode.Mode} (same names and numbers).
 * {@code UNKNOWN} (0) is not a mode a caller may ask for, so it has no constant here.
 */
public enum AccessMode {
  /** Published read/write on one node; CSI leaves open how many workloads on that node. */
  SINGLE_NODE_WRITER(1, true, false),
  /** Published read-only on one node. */
  SINGLE_NODE_READER_ONLY(2, false, false),
  /** Published read-only on many nodes. */
  MULTI_NODE_READER_ONLY(3, false, true),
  /** Published on many nodes, read/write on one of them only. */
  MULTI_NODE_SINGLE_WRITER(4, true, true),
  /** Published read/write on many nodes. */
  MULTI_NODE_MULTI_WRITER(5, true, true),
  /** Read/write by one workload on one node (needs the {@code SINGLE_NODE_MULTI_WRITER} capability). */
  SINGLE_NODE_SINGLE_WRITER(6, true, false),
  /** Read/write by many workloads on one node (needs the {@code SINGLE_NODE_MULTI_WRITER} capability). */
  SINGLE_NODE_MULTI_WRITER(7, true, false);

  private final int value;
  private final boolean writable;
  private final boolean multiNode;

  AccessMode(int value, boolean writable, boolean multiNode) {
    this.value = value;
    this.writable = writable;
    this.multiNode = multiNode;
  }

  /** The number CSI sends on the wire. */
  public int value() {
    return value;
  }

  /** Whether the mode allows writing at all (the reader-only modes do not). */
  public boolean writable() {
    return writable;
  }

  /** Whether the mode lets more than one node use the volume. */
  public boolean multiNode() {
    return multiNode;
  }

  /**
   * Whether at most one workload on a node may write: every writable mode except the two
   * multi-writer ones. CSI's {@code SINGLE_NODE_WRITER} is read as one writer, as Nomad does.
   */
  public boolean singleWriter() {
    return writable && this != MULTI_NODE_MULTI_WRITER && this != SINGLE_NODE_MULTI_WRITER;
  }

  /** Whether a plugin must advertise {@link CsiCapabilities#SINGLE_NODE_MULTI_WRITER} for this mode. */
  public boolean needsSingleNodeMultiWriterCapability() {
    return this == SINGLE_NODE_SINGLE_WRITER || this == SINGLE_NODE_MULTI_WRITER;
  }

  /**
   * The constant for a name, ignoring case ({@code single-node-writer} and {@code SINGLE_NODE_WRITER}
   * alike, as Nomad's volume specs write it).
   *
   * @throws IllegalArgumentException naming the value and the modes there are
   */
  public static AccessMode parse(String name) {
    if (name != null) {
      String normal = name.strip().replace('-', '_');
      for (AccessMode m : values()) {
        if (m.name().equalsIgnoreCase(normal)) {
          return m;
        }
      }
    }
    throw new IllegalArgumentException("access mode must be one of " + java.util.Arrays.toString(values())
        + ", got " + dev.csisupervisor.common.Printable.quote(name));
  }

  /** The constant for a wire number; empty for 0 (UNKNOWN) and for numbers this build does not know. */
  public static java.util.Optional<AccessMode> ofValue(int value) {
    for (AccessMode m : values()) {
      if (m.value == value) {
        return java.util.Optional.of(m);
      }
    }
    return java.util.Optional.empty();
  }
}
