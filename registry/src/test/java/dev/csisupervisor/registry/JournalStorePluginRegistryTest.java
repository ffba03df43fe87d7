package dev.csisupervisor.registry;

import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** The registry contract on the durable store: journal segments and MapDB checkpoints, strict. */
class JournalStorePluginRegistryTest extends PluginRegistryContractTest {

  @TempDir Path dataDir;

  @Override
  protected StateStore openStore() {
    return JournalStateStore.open(dataDir, JournalStateStore.Options.defaults().withStrict(true));
  }

  @Override
  protected StateStore reopenStore(StateStore store) {
    store.close();
    return JournalStateStore.open(dataDir, JournalStateStore.Options.defaults().withStrict(true));
  }
}
