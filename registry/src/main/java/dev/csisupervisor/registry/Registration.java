package dev.csisupervisor.registry;

import java.util.Comparator;

/** A registration in the registry's memory with its persisted registration order ("newest" = highest order). */
record Registration(PluginInfo info, long order) {

  /** Oldest registration first; the store key breaks ties. */
  static final Comparator<Registration> BY_ORDER =
      Comparator.comparingLong(Registration::order).thenComparing(r -> r.info().key().storeKey());
}
