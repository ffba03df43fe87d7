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
  CONTROLLER,
  /** Identity + Node. */
  NODE,
  /** Identity + Controller + Node, like a plugin deployed as one process on every node. */
  MONOLITH;

  /** Whether the Controller service is bound in this mode. */
  public boolean servesController() {
    return switch (this) {
      case CONTROLLER, MONOLITH -> true;
      case NODE -> false;
    };
  }

  /** Whether the Node service is bound in this mode. */
  public boolean servesNode() {
    return switch (this) {
      case NODE, MONOLITH -> true;
      case CONTROLLER -> false;
    };
  }
}
