package dev.csisupervisor.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStoreException;
import dev.csisupervisor.testing.TmpfsMount;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The registry over the durable store on a real full disk (a 2 MiB tmpfs; mounting needs root, the test is
 * skipped with that reason otherwise): registrations, health updates and deregistrations fail with a clear error
 * while the disk is full, work again in the same process as soon as space is freed, and a reopen shows exactly
 * what was acknowledged.
 */
class FullDiskTest {

  @TempDir Path tmp;

  @Test
  void fullDisk_failsChangesClearly_thenRegistryWorksAgainWithoutRestart_andReopenIsExact() throws Exception {
    try (TmpfsMount tiny = TmpfsMount.mount(tmp.resolve("tiny"), "2m")) {
      Path mount = tiny.dir();
      Path data = mount.resolve("data");
      JournalStateStore.Options options = JournalStateStore.Options.defaults().withStrict(true).withSegmentBytes(8192);
      Map<String, PluginInfo> acknowledged = new HashMap<>();
      try (PluginRegistry registry = PluginRegistry.builder()
          .stateStore(JournalStateStore.open(data, options)).closeStateStore(true).build()) {
        for (int i = 0; i < 5; i++) {
          PluginInfo info = RegistryHostMain.info(PluginType.CSI_NODE, "before" + i, "alloc-" + i, "1.0");
          registry.register(info);
          acknowledged.put(info.name(), info);
        }
        Path filler = mount.resolve("filler");
        try (OutputStream o = Files.newOutputStream(filler)) {
          while (true) {
            o.write(new byte[4096]);
          }
        } catch (IOException full) {
          assertTrue(String.valueOf(full.getMessage()).contains("No space left"), String.valueOf(full));
        }
        int failures = 0;
        for (int i = 0; i < 400 && failures < 5; i++) {
          PluginInfo info = RegistryHostMain.info(PluginType.CSI_NODE, "during" + i, "alloc-d" + i, "1.0");
          try {
            registry.register(info);
            acknowledged.put(info.name(), info); // still fits the preallocated segment: durable all the same
          } catch (StateStoreException e) {
            failures++;
            assertTrue(e.getMessage().contains("No space left on device") && e.getMessage().contains("state journal"),
                e.getMessage());
          }
        }
        assertEquals(5, failures, "registrations fail once the preallocated journal is used up");
        assertEquals(acknowledged.keySet(), names(registry), "a failed registration changed nothing");

        Files.delete(filler);
        PluginInfo updated = acknowledged.get("before1").withVersion("2.0");
        registry.register(updated);
        acknowledged.put("before1", updated);
        registry.deregister(PluginType.CSI_NODE, "before2", "alloc-2");
        acknowledged.remove("before2");
        PluginInfo after = RegistryHostMain.info(PluginType.CSI_NODE, "after", "alloc-after", "1.0");
        registry.register(after);
        acknowledged.put("after", after);
        assertEquals(acknowledged.keySet(), names(registry));
      }
      try (PluginRegistry reopened = PluginRegistry.builder()
          .stateStore(JournalStateStore.open(data, options)).closeStateStore(true).build()) {
        Map<String, PluginInfo> restored = new HashMap<>();
        reopened.listAll(PluginType.CSI_NODE).forEach(i -> restored.put(i.name(), i.withRestored(false)));
        assertEquals(acknowledged, restored);
        assertEquals(java.util.List.of(), reopened.restoreProblems());
      }
    }
  }

  private static Set<String> names(PluginRegistry registry) {
    Set<String> names = new HashSet<>();
    registry.listAll(PluginType.CSI_NODE).forEach(i -> names.add(i.name()));
    return names;
  }
}
