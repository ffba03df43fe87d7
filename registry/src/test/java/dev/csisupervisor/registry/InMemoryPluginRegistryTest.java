package dev.csisupervisor.registry;

import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.StateStore;

class InMemoryPluginRegistryTest extends PluginRegistryContractTest {

  @Override
  protected StateStore openStore() {
    return new InMemoryStateStore();
  }

  @Override
  protected StateStore reopenStore(StateStore store) {
    return store;
  }
}
