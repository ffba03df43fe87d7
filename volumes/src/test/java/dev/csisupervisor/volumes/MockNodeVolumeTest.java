package dev.csisupervisor.volumes;

import dev.csisupervisor.state.InMemoryStateStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * What most volume tests start from: a {@link VolumeKit} on {@link #store} with plugin "mock" running and
 * registered as a node plugin, and its volume "v1" created ({@link #vol}). Closed after each test.
 */
abstract class MockNodeVolumeTest {
  final InMemoryStateStore store = new InMemoryStateStore();
  VolumeKit kit;
  String vol;

  @BeforeEach
  void startMockNode() throws Exception {
    kit = new VolumeKit(store);
    kit.startPlugin("mock");
    kit.registerNode("mock");
    vol = kit.createVolume("mock", "v1");
  }

  @AfterEach
  void closeKit() {
    kit.close();
  }
}
