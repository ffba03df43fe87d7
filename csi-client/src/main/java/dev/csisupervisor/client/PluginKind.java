package dev.csisupervisor.client;

/**
 * Which CSI services a plugin instance runs, and therefore what {@link CsiClient#fingerprint}
 * asks it for.
 */
public enum PluginKind {
  /** Controller service only: plugin info and capabilities, controller capabilities. */
  CONTROLLER,
  /** Node service only: plugin info and capabilities, node capabilities, node info. */
  NODE,
  /** Both services in one process: everything {@link #CONTROLLER} and {@link #NODE} ask for. */
  MONOLITH;

  /** Whether a plugin of this kind serves the CSI Controller service. */
  public boolean hasController() {
    return this != NODE;
  }

  /** Whether a plugin of this kind serves the CSI Node service. */
  public boolean hasNode() {
    return this != CONTROLLER;
  }
}
