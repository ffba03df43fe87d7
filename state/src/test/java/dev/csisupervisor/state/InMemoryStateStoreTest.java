package dev.csisupervisor.state;

import static dev.csisupervisor.state.StateStoreContractTest.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class InMemoryStateStoreTest extends StateStoreContractTest {

  @Override
  protected StateStore newStore() {
    return new InMemoryStateStore();
  }

  @Override
  protected StateStore reopen(StateStore store) {
    return store;
  }

  private InMemoryStateStore mem() {
    return (InMemoryStateStore) store;
  }

  @Test
  void failNextCommits_throwsAndChangesNothing() {
    store.put("a", bytes("1"));
    mem().failNextCommits(2);
    assertThrows(StateStoreException.class, () -> store.put("a", bytes("2")));
    assertThrows(StateStoreException.class,
        () -> store.apply(List.of(new StateChange.Put("b", bytes("2")), new StateChange.Delete("a"))));
    assertArrayEquals(bytes("1"), store.get("a").orElseThrow());
    assertEquals(1, store.loadAll().size());
    store.put("a", bytes("3"));
    assertArrayEquals(bytes("3"), store.get("a").orElseThrow());
  }

  @Test
  void noOpCalls_areNotCommits() {
    mem().failNextCommits(1);
    store.delete("unknown");
    store.apply(List.of());
    assertEquals(0, mem().commitCount());
    assertThrows(StateStoreException.class, () -> store.put("a", bytes("1")));
    store.put("a", bytes("1"));
    assertEquals(1, mem().commitCount());
  }

  @Test
  void beforeCommit_seesEachCommitsChanges_andCanFailIt() {
    List<List<StateChange>> seen = new ArrayList<>();
    mem().beforeCommit(seen::add);
    store.put("a", bytes("1"));
    store.apply(List.of(new StateChange.Put("b", bytes("2")), new StateChange.Delete("a")));
    assertEquals(List.of(
        List.of(new StateChange.Put("a", bytes("1"))),
        List.of(new StateChange.Put("b", bytes("2")), new StateChange.Delete("a"))), seen);
    mem().beforeCommit(changes -> {
      throw new IllegalStateException("disk on fire");
    });
    StateStoreException e = assertThrows(StateStoreException.class, () -> store.put("c", bytes("3")));
    assertTrue(e.getCause().getMessage().contains("disk on fire"));
    assertEquals(List.of("b"), new ArrayList<>(store.loadAll().keySet()));
    assertEquals(2, mem().commitCount());
  }

  @Test
  void failNextCommits_rejectsNegativeCount() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> mem().failNextCommits(-1));
    assertTrue(e.getMessage().contains("count"), e.getMessage());
  }
}
