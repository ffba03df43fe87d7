package dev.csisupervisor.volumes;

/** A volume of one plugin: the unit of serialization (one CSI call in flight) and of a state record. */
record VolumeKey(String pluginId, String volumeId) {
  /** Every volume record's key starts with this. */
  static final String STORE_PREFIX = "volume/";

  String storeKey() {
    return STORE_PREFIX + pluginId + "/" + volumeId;
  }

  @Override
  public String toString() {
    return pluginId + "/" + volumeId;
  }
}
