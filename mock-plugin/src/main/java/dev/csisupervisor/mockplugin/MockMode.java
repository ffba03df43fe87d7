package dev.csisupervisor.mockplugin;

/**
 * Which CSI services a {@link MockCsiPlugin} serves besides Identity.
 *
 * <p>The mode decides which gRPC services are bound on the socket (a call to a service that is
 * not bound fails with {@code UNIMPLEMENTED}, as it would against a real plugin of that kind) and
 * the default plugin capabilities ({@code CONTROLLER_SERVICE} is reported exactly when the
 * Controller service is served).
 */
public enum MockMode {
  /** Identity + Controller. Reports the {@code CONTROLLER_SERVICE} plugin capability. */
  CONTROLLER(true, false),
  /** Identity + Node. */
  NODE(false, true),
  /** Identity + Controller + Node, like a plugin deployed as one process on every node. */
  MONOLITH(true, true);

  private final boolean servesController;
  private final boolean servesNode;

  MockMode(boolean servesController, boolean servesNode) {
    this.servesController = servesController;
    this.servesNode = servesNode;
  }

  /** Whether the Controller service is bound in this mode. */
  public boolean servesController() {
    return servesController;
  }

  /** Whether the Node service is bound in this mode. */
  public boolean servesNode() {
    return servesNode;
  }
}
