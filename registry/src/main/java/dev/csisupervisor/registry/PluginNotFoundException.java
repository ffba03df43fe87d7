package dev.csisupervisor.registry;

/** No plugin of that type and name is registered. */
public final class PluginNotFoundException extends Exception {
  private static final long serialVersionUID = 1L;
  private final PluginType type;
  private final String name;

  public PluginNotFoundException(PluginType type, String name) {
    super("no " + (type == null ? "null" : type.id()) + " plugin named '" + name + "' is registered");
    this.type = type;
    this.name = name;
  }

  public PluginType type() {
    return type;
  }

  public String name() {
    return name;
  }
}
