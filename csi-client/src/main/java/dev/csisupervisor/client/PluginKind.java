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

  /**
   * The kind's name in lower case ({@code controller}, {@code node}, {@code monolith}): its
   * directory under the CSI root ({@code <csiRoot>/<type>/<id>/}), and how config files, logs and
   * the admin API name it.
   */
  public String dirName() {
    return switch (this) {
      case CONTROLLER -> "controller";
      case NODE -> "node";
      case MONOLITH -> "monolith";
    };
  }
}
