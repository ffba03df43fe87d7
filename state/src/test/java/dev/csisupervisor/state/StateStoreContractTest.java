package dev.csisupervisor.state;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The {@link StateStore} contract, run against every implementation. */
abstract class StateStoreContractTest {

  protected StateStore store;

  /** A new, empty store. */
  protected abstract StateStore newStore() throws Exception;

  /** Closes and reopens the store (for the in-memory store: the same instance). */
  protected abstract StateStore reopen(StateStore store) throws Exception;

  @BeforeEach
  void setUp() throws Exception {
    store = newStore();
  }

  @AfterEach
  void tearDown() {
    store.close();
  }

  static byte[] bytes(String s) {
    return s.getBytes(UTF_8);
  }

  @Test
  void putThenGet_returnsValue() {
    store.put("a", bytes("1"));
    assertArrayEquals(bytes("1"), store.get("a").orElseThrow());
  }

  @Test
  void putTwice_lastValueWins() {
    store.put("a", bytes("1"));
    store.put("a", bytes("2"));
    assertArrayEquals(bytes("2"), store.get("a").orElseThrow());
    assertEquals(1, store.loadAll().size());
  }

  @Test
  void getUnknownKey_isEmpty() {
    assertTrue(store.get("nope").isEmpty());
  }

  @Test
  void deleteRemovesKey_andDeleteUnknownKey_isNoOp() {
    store.put("a", bytes("1"));
    store.put("b", bytes("2"));
    store.delete("a");
    store.delete("a");
    store.delete("never-there");
    assertEquals(List.of("b"), new ArrayList<>(store.loadAll().keySet()));
  }

  @Test
  void emptyValue_isStoredAsEmpty() {
    store.put("empty", new byte[0]);
    assertArrayEquals(new byte[0], store.get("empty").orElseThrow());
  }

  @Test
  void valuesAreCopiedInAndOut() {
    byte[] value = bytes("abc");
    store.put("a", value);
    value[0] = 'X';
    byte[] read = store.get("a").orElseThrow();
    assertArrayEquals(bytes("abc"), read);
    read[0] = 'Y';
    assertArrayEquals(bytes("abc"), store.get("a").orElseThrow());
    store.loadAll().get("a")[0] = 'Z';
    assertArrayEquals(bytes("abc"), store.get("a").orElseThrow());
  }

  @Test
  void loadAll_isSnapshotNotLiveView() {
    store.put("a", bytes("1"));
    Map<String, byte[]> snapshot = store.loadAll();
    store.put("b", bytes("2"));
    assertEquals(1, snapshot.size());
  }

  @Test
  void apply_appliesAllChangesInOrder() {
    store.put("gone", bytes("x"));
    store.apply(List.of(
        new StateChange.Put("a", bytes("1")),
        new StateChange.Put("b", bytes("2")),
        new StateChange.Delete("gone"),
        new StateChange.Put("a", bytes("3")),
        new StateChange.Delete("unknown")));
    Map<String, byte[]> all = store.loadAll();
    assertEquals(2, all.size());
    assertArrayEquals(bytes("3"), all.get("a"));
    assertArrayEquals(bytes("2"), all.get("b"));
  }

  @Test
  void apply_emptyList_isNoOp() {
    store.apply(List.of());
    assertTrue(store.loadAll().isEmpty());
  }

  @Test
  void changesSurviveReopen() throws Exception {
    store.put("a", bytes("1"));
    store.apply(List.of(new StateChange.Put("b", bytes("2")), new StateChange.Put("c", bytes("3"))));
    store.delete("c");
    store = reopen(store);
    Map<String, byte[]> all = store.loadAll();
    assertEquals(2, all.size());
    assertArrayEquals(bytes("1"), all.get("a"));
    assertArrayEquals(bytes("2"), all.get("b"));
  }

  @Test
  void manyKeys_roundTrip() throws Exception {
    List<StateChange> changes = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      byte[] v = new byte[i % 700];
      Arrays.fill(v, (byte) i);
      changes.add(new StateChange.Put("k/" + i, v));
    }
    store.apply(changes);
    store = reopen(store);
    Map<String, byte[]> all = store.loadAll();
    assertEquals(500, all.size());
    for (int i = 0; i < 500; i++) {
      byte[] v = new byte[i % 700];
      Arrays.fill(v, (byte) i);
      assertArrayEquals(v, all.get("k/" + i), "k/" + i);
    }
  }

  @Test
  void badArguments_nameTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> store.put(null, bytes("1")));
    assertTrue(e.getMessage().contains("key"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> store.put(" ", bytes("1")));
    assertTrue(e.getMessage().contains("key"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> store.put("a", null));
    assertTrue(e.getMessage().contains("value"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> store.delete(""));
    assertThrows(IllegalArgumentException.class, () -> store.get(null));
    assertThrows(IllegalArgumentException.class, () -> store.apply(null));
    List<StateChange> withNull = new ArrayList<>();
    withNull.add(null);
    assertThrows(IllegalArgumentException.class, () -> store.apply(withNull));
    assertTrue(store.loadAll().isEmpty());
  }

  @Test
  void closeIsIdempotent_andUseAfterCloseThrows() {
    store.put("a", bytes("1"));
    store.close();
    store.close();
    assertThrows(IllegalStateException.class, () -> store.put("b", bytes("2")));
    assertThrows(IllegalStateException.class, () -> store.get("a"));
    assertThrows(IllegalStateException.class, () -> store.delete("a"));
    assertThrows(IllegalStateException.class, () -> store.loadAll());
    assertThrows(IllegalStateException.class, () -> store.apply(List.of(new StateChange.Delete("a"))));
  }

  @Test
  void loadAllOfAPrefix_isThoseRecords_copied_andLeavesTheFullLoadWhole() throws Exception {
    store.put("volume/p/v1", new byte[] {1});
    store.put("volume/p/v2", new byte[] {2});
    store.put("plugin/node/x", new byte[] {3});
    store = reopen(store);
    java.util.Map<String, byte[]> volumes = store.loadAll("volume/");
    org.junit.jupiter.api.Assertions.assertEquals(java.util.Set.of("volume/p/v1", "volume/p/v2"), volumes.keySet());
    volumes.get("volume/p/v1")[0] = 9; // a copy: the store is not changed through it
    java.util.Map<String, byte[]> all = store.loadAll();
    org.junit.jupiter.api.Assertions.assertEquals(3, all.size(), "the prefix read took nothing from the full one");
    org.junit.jupiter.api.Assertions.assertEquals(1, all.get("volume/p/v1")[0]);
    store.delete("volume/p/v2");
    org.junit.jupiter.api.Assertions.assertEquals(java.util.Set.of("volume/p/v1"), store.loadAll("volume/").keySet());
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> store.loadAll((String) null));
  }
}
