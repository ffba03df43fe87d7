package dev.csisupervisor.registry;

import static dev.csisupervisor.registry.TestRegistrations.T0;
import static dev.csisupervisor.registry.TestRegistrations.node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.registry.PluginRecordCodec.RecordFormatException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PluginRecordCodecTest {

  private static final PluginInfo FULL = new PluginInfo(PluginType.CSI_CONTROLLER, "ebs.csi-1", "v1.2.3-ünï", "8f2c/alloc",
      Path.of("/var/lib/csi/csi-controller/ebs/csi.sock"), Map.of("a", "1", "empty", ""),
      new Fingerprint("ebs.csi.aws.com", "1.2.3", Map.of("commit", "abc"), Set.of("CONTROLLER_SERVICE", "UNKNOWN_42"),
          Set.of("CREATE_DELETE_VOLUME"), Set.of(), "i-123", 25, Map.of("topology.ebs.csi.aws.com/zone", "eu-1a")),
      new PluginHealth(false, "probe: deadline exceeded 😱", T0.plusNanos(123_456_789)), false);

  private static String key(PluginInfo info) {
    return info.key().storeKey();
  }

  @Test
  void roundTrip_preservesEveryField() throws Exception {
    byte[] bytes = PluginRecordCodec.encode(FULL, 77);
    assertEquals(PluginRecordCodec.VERSION_1, bytes[0]);
    PluginRecordCodec.Decoded d = PluginRecordCodec.decode(key(FULL), bytes);
    assertEquals(FULL, d.info());
    assertEquals(77, d.registrationOrder());
    assertEquals(FULL, PluginRecordCodec.decode(key(FULL), PluginRecordCodec.encode(d.info(), 77)).info());
  }

  @Test
  void restoredFlag_isNotStored() throws Exception {
    PluginInfo restored = node("ebs", "a1").withRestored(true);
    assertEquals(restored.withRestored(false),
        PluginRecordCodec.decode(key(restored), PluginRecordCodec.encode(restored, 1)).info());
  }

  @Test
  void unknownVersion_isRefusedNamingIt() {
    for (int version : new int[] {0, 2, 255}) {
      byte[] bytes = PluginRecordCodec.encode(FULL, 1);
      bytes[0] = (byte) version;
      RecordFormatException e = assertThrows(RecordFormatException.class, () -> PluginRecordCodec.decode(key(FULL), bytes));
      assertEquals("unknown record format version " + version + " (this agent reads version 1)", e.getMessage());
    }
  }

  @Test
  void emptyRecord_isRefused() {
    assertThrows(RecordFormatException.class, () -> PluginRecordCodec.decode(key(FULL), new byte[0]));
    assertThrows(RecordFormatException.class, () -> PluginRecordCodec.decode(key(FULL), null));
  }

  @Test
  void everyTruncation_isRefused_neverMisread() {
    byte[] bytes = PluginRecordCodec.encode(FULL, 1);
    for (int len = 1; len < bytes.length; len++) {
      byte[] cut = Arrays.copyOf(bytes, len);
      assertThrows(RecordFormatException.class, () -> PluginRecordCodec.decode(key(FULL), cut), "length " + len);
    }
  }

  @Test
  void trailingBytes_areRefused() {
    byte[] bytes = Arrays.copyOf(PluginRecordCodec.encode(FULL, 1), PluginRecordCodec.encode(FULL, 1).length + 1);
    RecordFormatException e = assertThrows(RecordFormatException.class, () -> PluginRecordCodec.decode(key(FULL), bytes));
    assertTrue(e.getMessage().contains("trailing"), e.getMessage());
  }

  @Test
  void contentForAnotherKey_isRefused() {
    byte[] bytes = PluginRecordCodec.encode(node("ebs", "a1"), 1);
    RecordFormatException e = assertThrows(RecordFormatException.class,
        () -> PluginRecordCodec.decode("plugin/csi-node/ebs/a2", bytes));
    assertTrue(e.getMessage().contains("plugin/csi-node/ebs/a1"), e.getMessage());
  }

  @Test
  void invalidFieldInside_isRefusedNotThrownAsIllegalArgument() {
    String encoded = new String(PluginRecordCodec.encode(node("ebs", "a1"), 1), StandardCharsets.ISO_8859_1);
    // Same length, now an invalid plugin name: "e/s".
    byte[] bytes = encoded.replace("ebs", "e/s").getBytes(StandardCharsets.ISO_8859_1);
    RecordFormatException e = assertThrows(RecordFormatException.class, () -> PluginRecordCodec.decode("plugin/csi-node/ebs/a1", bytes));
    assertTrue(e.getMessage().contains("invalid value") && e.getMessage().contains("name"), e.getMessage());
  }

  @Test
  void hugeLengthField_isRefusedWithoutAllocating() {
    byte[] bytes = {1, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 'x'};
    RecordFormatException e = assertThrows(RecordFormatException.class, () -> PluginRecordCodec.decode(key(FULL), bytes));
    assertTrue(e.getMessage().contains("exceeds"), e.getMessage());
  }

  @Test
  void randomDamage_isAlwaysRefusedOrDecodedExactly_neverAnotherException() {
    byte[] good = PluginRecordCodec.encode(FULL, 5);
    Random random = new Random(7);
    for (int i = 0; i < 5000; i++) {
      byte[] damaged = good.clone();
      damaged[random.nextInt(damaged.length)] = (byte) random.nextInt();
      if (i % 2 == 0) {
        damaged[1 + random.nextInt(damaged.length - 1)] = (byte) random.nextInt();
      }
      try {
        PluginRecordCodec.Decoded d = PluginRecordCodec.decode(key(FULL), damaged);
        // Accepted: it must then be a valid registration for this very key.
        assertEquals(key(FULL), d.info().key().storeKey());
      } catch (RecordFormatException expected) {
        // refused with a reason
      }
    }
    for (int i = 0; i < 2000; i++) {
      byte[] garbage = new byte[random.nextInt(300)];
      random.nextBytes(garbage);
      if (garbage.length > 0) {
        garbage[0] = PluginRecordCodec.VERSION_1;
      }
      try {
        PluginRecordCodec.decode(key(FULL), garbage);
      } catch (RecordFormatException expected) {
        // refused
      }
    }
  }

  @Test
  void decodeRestored_equalsDecode_marksRestored_andSharesEqualParts() throws Exception {
    Interner interner = new Interner();
    PluginInfo other = FULL.withSocketPath(java.nio.file.Path.of("/other/csi.sock"));
    PluginRecordCodec.Decoded a = PluginRecordCodec.decodeRestored(key(FULL), PluginRecordCodec.encode(FULL, 5), interner);
    PluginRecordCodec.Decoded b = PluginRecordCodec.decodeRestored(key(other), PluginRecordCodec.encode(other, 6), interner);
    assertEquals(FULL.withRestored(true), a.info());
    assertEquals(other.withRestored(true), b.info());
    assertEquals(5, a.registrationOrder());
    org.junit.jupiter.api.Assertions.assertSame(a.info().fingerprint(), b.info().fingerprint());
    org.junit.jupiter.api.Assertions.assertSame(a.info().health(), b.info().health());
    org.junit.jupiter.api.Assertions.assertSame(a.info().name(), b.info().name());
  }

  @Test
  void nonAsciiStrings_decodeStrictly() throws Exception {
    PluginInfo unicode = FULL.withVersion("v1-\u00e9\u4e2d");
    assertEquals(unicode, PluginRecordCodec.decode(key(unicode), PluginRecordCodec.encode(unicode, 1)).info());
    byte[] bad = PluginRecordCodec.encode(FULL.withVersion("v1-\u00e9"), 1);
    int at = indexOf(bad, "v1-".getBytes(java.nio.charset.StandardCharsets.US_ASCII)) + 3;
    bad[at] = (byte) 0xff; // not UTF-8
    org.junit.jupiter.api.Assertions.assertThrows(PluginRecordCodec.RecordFormatException.class,
        () -> PluginRecordCodec.decode(key(FULL), bad));
  }

  private static int indexOf(byte[] hay, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (hay[i + j] != needle[j]) {
          continue outer;
        }
      }
      return i;
    }
    throw new AssertionError("not found");
  }
}
