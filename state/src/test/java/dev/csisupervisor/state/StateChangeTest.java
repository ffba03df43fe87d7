package dev.csisupervisor.state;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class StateChangeTest {

  @Test
  void put_copiesValueAndComparesByContent() {
    byte[] v = {1, 2, 3};
    StateChange.Put put = new StateChange.Put("k", v);
    v[0] = 9;
    assertArrayEquals(new byte[] {1, 2, 3}, put.value());
    put.value()[1] = 9;
    assertArrayEquals(new byte[] {1, 2, 3}, put.value());
    assertEquals(new StateChange.Put("k", new byte[] {1, 2, 3}), put);
    assertEquals(new StateChange.Put("k", new byte[] {1, 2, 3}).hashCode(), put.hashCode());
    assertNotEquals(new StateChange.Put("k", new byte[] {1, 2}), put);
    assertTrue(put.toString().contains("3 bytes"), put.toString());
  }

  @Test
  void invalidChanges_nameTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new StateChange.Put("", new byte[0]));
    assertTrue(e.getMessage().contains("key"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new StateChange.Put("k", null));
    assertTrue(e.getMessage().contains("value"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new StateChange.Delete(null));
    assertTrue(e.getMessage().contains("key"), e.getMessage());
  }
}
