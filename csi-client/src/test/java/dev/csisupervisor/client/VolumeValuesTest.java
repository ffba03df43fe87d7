package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.testing.ShortTempDir;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The volume calls' values: validated in their constructors with messages naming the field,
 * immutable, and never showing a secret or a mount flag.
 */
class VolumeValuesTest {
  private static final Path ABS = Path.of("/var/lib/csi/staging/vol-1");
  private static final Path REL = Path.of("staging/vol-1");
  private static final VolumeCapability MOUNT = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final String SECRET_VALUE = "s3cr3t-v4lue";
  private static final String SECRET_FLAG = "password=hunter2";

  private static void assertRejected(String message, Executable construct) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, construct);
    assertEquals(message, e.getMessage());
  }

  @Test
  void blankVolumeIds_andNames_areRejected_namingTheField() {
    assertRejected("volumeId must not be blank, got ' '",
        () -> new NodeStageRequest(" ", Map.of(), ABS, MOUNT, Secrets.none(), Map.of()));
    assertRejected("volumeId must not be blank, got ''",
        () -> new NodePublishRequest("", Map.of(), Optional.empty(), ABS, MOUNT, false, Secrets.none(), Map.of()));
    assertRejected("volumeId must not be blank, got '\t'", () -> new NodeExpandRequest("\t", ABS,
        CapacityRange.atLeast(1), Optional.empty(), Optional.empty(), Secrets.none()));
    assertRejected("volumeId must not be blank, got ' '",
        () -> new ControllerPublishRequest(" ", "node-1", MOUNT, false, Secrets.none(), Map.of()));
    assertRejected("nodeId must not be blank, got ''",
        () -> new ControllerPublishRequest("vol-1", "", MOUNT, false, Secrets.none(), Map.of()));
    assertRejected("name must not be blank, got ' '", () -> new CreateVolumeRequest(" ", Optional.empty(),
        List.of(MOUNT), Map.of(), Secrets.none()));
    assertRejected("volumeId must not be blank, got ' '", () -> new CsiVolume(" ", 0, Map.of(), List.of()));
    assertThrows(NullPointerException.class,
        () -> new NodeStageRequest(null, Map.of(), ABS, MOUNT, Secrets.none(), Map.of()));
  }

  @Test
  void relativePaths_areRejected_namingTheField() {
    assertRejected("stagingPath must be an absolute path, got staging/vol-1",
        () -> new NodeStageRequest("vol-1", Map.of(), REL, MOUNT, Secrets.none(), Map.of()));
    assertRejected("targetPath must be an absolute path, got staging/vol-1",
        () -> new NodePublishRequest("vol-1", Map.of(), Optional.of(ABS), REL, MOUNT, false, Secrets.none(), Map.of()));
    assertRejected("stagingPath must be an absolute path, got staging/vol-1",
        () -> new NodePublishRequest("vol-1", Map.of(), Optional.of(REL), ABS, MOUNT, false, Secrets.none(), Map.of()));
    assertRejected("volumePath must be an absolute path, got staging/vol-1", () -> new NodeExpandRequest("vol-1",
        REL, CapacityRange.atLeast(1), Optional.empty(), Optional.empty(), Secrets.none()));
    assertRejected("stagingPath must be an absolute path, got staging/vol-1", () -> new NodeExpandRequest("vol-1",
        ABS, CapacityRange.atLeast(1), Optional.of(REL), Optional.empty(), Secrets.none()));
  }

  @Test
  void theClientsOwnArguments_areCheckedBeforeAnyCall() throws Exception {
    try (ShortTempDir dir = new ShortTempDir("csiv");
        CsiClient client = CsiClient.create(dir.resolve("csi.sock"))) {
      assertRejected("volumeId must not be blank, got ' '", () -> client.nodeUnstageVolumeAsync(" ", ABS));
      assertRejected("stagingPath must be an absolute path, got staging/vol-1",
          () -> client.nodeUnstageVolumeAsync("vol-1", REL));
      assertRejected("targetPath must be an absolute path, got staging/vol-1",
          () -> client.nodeUnpublishVolumeAsync("vol-1", REL));
      assertRejected("volumePath must be an absolute path, got staging/vol-1",
          () -> client.nodeGetVolumeStatsAsync("vol-1", REL, Optional.empty()));
      assertRejected("volumeId must not be blank, got ''", () -> client.deleteVolumeAsync("", Secrets.none()));
      assertRejected("nodeId must not be blank, got ' '",
          () -> client.controllerUnpublishVolumeAsync("vol-1", " ", Secrets.none()));
      assertRejected("volumeId must not be blank, got ''", () -> client.controllerExpandVolumeAsync("",
          CapacityRange.atLeast(1), Optional.empty(), Secrets.none()));
    }
  }

  @Test
  void capacityRange_rules() {
    assertEquals(new CapacityRange(5, 0), CapacityRange.atLeast(5));
    assertEquals(10, new CapacityRange(10, 10).limitBytes(), "exactly one size");
    assertEquals(0, new CapacityRange(0, 10).requiredBytes(), "only a limit");
    assertRejected("requiredBytes must not be negative, got -1", () -> new CapacityRange(-1, 0));
    assertRejected("limitBytes must not be negative, got -5", () -> new CapacityRange(1, -5));
    assertRejected("requiredBytes or limitBytes must be set, got both 0", () -> new CapacityRange(0, 0));
    assertRejected("requiredBytes must be <= limitBytes, got 11 > 10", () -> new CapacityRange(11, 10));
    assertRejected("requiredBytes must be positive, got 0", () -> CapacityRange.atLeast(0));
  }

  @Test
  void blockCapability_hasNoFileSystemFlagsOrGroup() {
    assertRejected("a block volume has no fsType, mountFlags or volumeMountGroup, got fsType 'ext4', 0 mount flag(s),"
        + " volumeMountGroup ''", () -> new VolumeCapability(VolumeCapability.AccessType.BLOCK, "ext4", List.of(), "",
            AccessMode.SINGLE_NODE_WRITER));
    IllegalArgumentException flags = assertThrows(IllegalArgumentException.class,
        () -> new VolumeCapability(VolumeCapability.AccessType.BLOCK, "", List.of(SECRET_FLAG), "",
            AccessMode.SINGLE_NODE_WRITER));
    assertTrue(flags.getMessage().contains("1 mount flag(s)"), flags.getMessage());
    assertFalse(flags.getMessage().contains(SECRET_FLAG), "a flag may be sensitive: " + flags.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> VolumeCapability.block(AccessMode.SINGLE_NODE_WRITER).withVolumeMountGroup("1000"));
  }

  @Test
  void mountCapability_rejectsBlankFlagsAndControlCharacters_namingTheField() {
    assertRejected("mountFlags[1] must not be blank",
        () -> VolumeCapability.mount("ext4", List.of(SECRET_FLAG, " "), AccessMode.SINGLE_NODE_WRITER));
    IllegalArgumentException fs = assertThrows(IllegalArgumentException.class,
        () -> VolumeCapability.mount("ext4\n", List.of(), AccessMode.SINGLE_NODE_WRITER));
    assertTrue(fs.getMessage().startsWith("fsType must not contain control characters"), fs.getMessage());
    IllegalArgumentException group = assertThrows(IllegalArgumentException.class,
        () -> MOUNT.withVolumeMountGroup("10\u000700"));
    assertTrue(group.getMessage().startsWith("volumeMountGroup must not contain control characters"),
        group.getMessage());
  }

  @Test
  void createVolumeRequest_needsACapability() {
    assertRejected("capabilities must not be empty",
        () -> new CreateVolumeRequest("data", Optional.empty(), List.of(), Map.of(), Secrets.none()));
  }

  @Test
  void topologyRequirement_needsOneList_andPreferredWithinRequisite() {
    Map<String, String> z1 = Map.of("zone", "Z1");
    Map<String, String> z2 = Map.of("zone", "Z2");
    assertRejected("requisite or preferred must be given (CSI), got both empty",
        () -> new TopologyRequirement(List.of(), List.of()));
    assertRejected("preferred topology {zone=Z2} must also be in requisite [{zone=Z1}] (CSI)",
        () -> new TopologyRequirement(List.of(z1), List.of(z2)));
    assertRejected("requisite must not hold an empty topology",
        () -> new TopologyRequirement(List.of(Map.of()), List.of()));
    assertEquals(new TopologyRequirement(List.of(z1), List.of(z1)), TopologyRequirement.of(z1));
    assertEquals(List.of(z2), new TopologyRequirement(List.of(), List.of(z2)).preferred(), "preferred alone is fine");
  }

  @Test
  void secretsAndMountFlags_neverShow_inAnyRequestsToString() {
    Secrets secrets = Secrets.of(Map.of("password", SECRET_VALUE));
    VolumeCapability flagged = VolumeCapability.mount("ext4", List.of("noatime", SECRET_FLAG),
        AccessMode.SINGLE_NODE_WRITER);
    assertEquals("Secrets[1 key(s), redacted]", secrets.toString());
    assertEquals("Secrets[none]", Secrets.none().toString());
    assertEquals("mount(ext4, 2 flag(s))/SINGLE_NODE_WRITER", flagged.toString());
    assertEquals("mount(default fs, group 1000)/SINGLE_NODE_WRITER", MOUNT.withVolumeMountGroup("1000").toString());
    assertEquals("block/MULTI_NODE_READER_ONLY", VolumeCapability.block(AccessMode.MULTI_NODE_READER_ONLY).toString());

    List<Object> requests = new ArrayList<>(List.of(
        new NodeStageRequest("vol-1", Map.of(), ABS, flagged, secrets, Map.of()),
        new NodePublishRequest("vol-1", Map.of(), Optional.of(ABS), ABS, flagged, true, secrets, Map.of()),
        new NodeExpandRequest("vol-1", ABS, CapacityRange.atLeast(1), Optional.empty(), Optional.of(flagged), secrets),
        new CreateVolumeRequest("data", Optional.empty(), List.of(flagged), Map.of(), secrets),
        new ControllerPublishRequest("vol-1", "node-1", flagged, false, secrets, Map.of())));
    for (Object request : requests) {
      String text = request.toString();
      assertFalse(text.contains(SECRET_VALUE), text);
      assertFalse(text.contains("password"), "not even the key: " + text);
      assertFalse(text.contains(SECRET_FLAG), text);
      assertTrue(text.contains("Secrets[1 key(s), redacted]"), text);
    }
  }

  @Test
  void badSecrets_areRejected_withoutShowingAValue() {
    Map<String, String> nullValue = new HashMap<>();
    nullValue.put("password", null);
    Map<String, String> blankKey = Map.of(" ", SECRET_VALUE);
    for (Map<String, String> bad : List.of(nullValue, blankKey)) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Secrets.of(bad));
      assertEquals("secrets must not contain a blank or null key or a null value", e.getMessage());
    }
    assertTrue(Secrets.of(Map.of()).isEmpty());
    assertEquals(Secrets.of(Map.of("k", "v")), Secrets.of(new HashMap<>(Map.of("k", "v"))));
  }

  @Test
  void requests_copyTheirMaps() {
    Map<String, String> context = new HashMap<>(Map.of("k", "v"));
    NodeStageRequest stage = new NodeStageRequest("vol-1", context, ABS, MOUNT, Secrets.none(), context);
    context.put("k2", "v2");
    assertEquals(Map.of("k", "v"), stage.publishContext());
    assertEquals(Map.of("k", "v"), stage.volumeContext());
    assertThrows(UnsupportedOperationException.class, () -> stage.volumeContext().put("a", "b"));
    List<String> flags = new ArrayList<>(List.of("noatime"));
    VolumeCapability capability = VolumeCapability.mount("xfs", flags, AccessMode.SINGLE_NODE_WRITER);
    flags.add("ro");
    assertEquals(List.of("noatime"), capability.mountFlags());
    assertEquals(VolumeCapability.mount("xfs", List.of(), AccessMode.SINGLE_NODE_WRITER), capability.withoutMountFlags());
  }
}
