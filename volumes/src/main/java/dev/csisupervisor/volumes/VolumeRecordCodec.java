package dev.csisupervisor.volumes;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeCapability.AccessType;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.Layout;
import dev.csisupervisor.volumes.VolumeRecord.Staging;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A {@link VolumeRecord}'s bytes in the state store: a format version, then every field in
 * declaration order (version 4; versions 1 to 3, without the fields each later one added, are still read),
 * enums by name (so a reordering cannot change a stored meaning), strings as modified UTF-8. Stateless.
 */
final class VolumeRecordCodec {
  /** The first format: per-usage stagings; no volume context, secrets file or forced flag. */
  static final byte VERSION_1 = 1;
  /** Adds the volume context, the secrets file's path, the forced flag, and per usage two flags. */
  static final byte VERSION_2 = 2;
  /** One staging per volume: the layout, the stagings by name, and per usage the name of its staging. */
  static final byte VERSION_3 = 3;
  /** Adds, after the usages, a node expansion owed: a flag, then (if set) its required and limit bytes. */
  static final byte VERSION_4 = 4;

  private VolumeRecordCodec() {}

  /** A stored record that cannot be read: a newer agent's, or damaged. */
  static final class RecordFormatException extends Exception {
    private static final long serialVersionUID = 1L;

    RecordFormatException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  static byte[] encode(VolumeRecord r) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(VERSION_4);
      out.writeUTF(r.pluginId());
      out.writeUTF(r.volumeId());
      out.writeUTF(r.pluginDir().toString());
      out.writeUTF(r.controller().name());
      out.writeUTF(r.controllerNodeId());
      writeMap(out, r.publishContext());
      writeMap(out, r.volumeContext());
      out.writeUTF(r.secretsFile().map(Path::toString).orElse(""));
      out.writeBoolean(r.forced());
      out.writeUTF(r.layout().name());
      out.writeInt(r.stagings().size());
      for (Map.Entry<String, Staging> e : r.stagings().entrySet()) {
        out.writeUTF(e.getKey());
        out.writeUTF(e.getValue().state().name());
        out.writeBoolean(e.getValue().mounted());
        out.writeUTF(e.getValue().compatibility());
      }
      out.writeInt(r.usages().size());
      for (UsageRecord u : r.usages().values()) {
        VolumeCapability c = u.capability();
        out.writeUTF(c.accessType().name());
        out.writeUTF(c.accessMode().name());
        out.writeBoolean(u.usage().readOnly());
        out.writeUTF(c.fsType());
        out.writeUTF(c.volumeMountGroup());
        out.writeUTF(u.staging());
        out.writeBoolean(u.needsClaim());
        out.writeInt(u.allocs().size());
        for (Map.Entry<String, AllocPhase> a : u.allocs().entrySet()) {
          out.writeUTF(a.getKey());
          out.writeUTF(a.getValue().name());
        }
      }
      out.writeBoolean(r.nodeExpansion().isPresent());
      if (r.nodeExpansion().isPresent()) {
        out.writeLong(r.nodeExpansion().get().requiredBytes());
        out.writeLong(r.nodeExpansion().get().limitBytes());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail
    }
    return bytes.toByteArray();
  }

  static VolumeRecord decode(String key, byte[] value) throws RecordFormatException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
      int version = in.readUnsignedByte();
      if (version < VERSION_1 || version > VERSION_4) {
        throw new RecordFormatException("format version " + version + " is not one this agent reads (1 to 4)", null);
      }
      String pluginId = in.readUTF();
      String volumeId = in.readUTF();
      Path pluginDir = Path.of(in.readUTF());
      ControllerState controller = ControllerState.valueOf(in.readUTF());
      String nodeId = in.readUTF();
      Map<String, String> publishContext = readMap(in);
      Map<String, String> volumeContext = version >= VERSION_2 ? readMap(in) : Map.of();
      String secretsFile = version >= VERSION_2 ? in.readUTF() : "";
      boolean forced = version >= VERSION_2 && in.readBoolean();
      Layout layout = version >= VERSION_3 ? Layout.valueOf(in.readUTF()) : Layout.PER_USAGE;
      TreeMap<String, Staging> stagings = new TreeMap<>();
      if (version >= VERSION_3) {
        for (int i = 0, n = count(in); i < n; i++) {
          stagings.put(in.readUTF(), new Staging(StageState.valueOf(in.readUTF()), in.readBoolean(), in.readUTF()));
        }
      }
      TreeMap<VolumeUsage, UsageRecord> usages = new TreeMap<>(VolumeRecord.USAGE_ORDER);
      for (int i = 0, n = count(in); i < n; i++) {
        AccessType type = AccessType.valueOf(in.readUTF());
        AccessMode mode = AccessMode.valueOf(in.readUTF());
        boolean readOnly = in.readBoolean();
        String fsType = in.readUTF();
        String group = in.readUTF();
        VolumeUsage usage = new VolumeUsage(type, mode, readOnly);
        VolumeCapability capability = new VolumeCapability(type, fsType, List.of(), group, mode);
        String staging;
        boolean needsClaim;
        if (version >= VERSION_3) {
          staging = in.readUTF();
          needsClaim = in.readBoolean();
        } else {
          // The previous versions staged once per usage, at staging/<volume>/<usage>.
          StageState stage = StageState.valueOf(in.readUTF());
          boolean stagingMounted = version >= VERSION_2 && in.readBoolean();
          needsClaim = version >= VERSION_2 && in.readBoolean();
          staging = stage == StageState.NOT_STAGED ? "" : volumeId + "/" + usage.dirName();
          if (!staging.isEmpty()) {
            stagings.put(staging, new Staging(stage, stagingMounted, VolumeRecord.compatibility(capability)));
          }
        }
        TreeMap<String, AllocPhase> allocs = new TreeMap<>();
        for (int j = 0, m = count(in); j < m; j++) {
          allocs.put(VolumeIds.check("allocId", in.readUTF()), AllocPhase.valueOf(in.readUTF()));
        }
        usages.put(usage, new UsageRecord(usage, capability, staging, allocs, needsClaim));
      }
      Optional<CapacityRange> nodeExpansion = version >= VERSION_4 && in.readBoolean()
          ? Optional.of(new CapacityRange(in.readLong(), in.readLong())) : Optional.empty();
      if (in.available() > 0) {
        throw new RecordFormatException(in.available() + " unexpected byte(s) after the record", null);
      }
      VolumeRecord r = new VolumeRecord(pluginId, volumeId, pluginDir, controller, nodeId, publishContext, usages,
          volumeContext, secretsFile.isEmpty() ? Optional.empty() : Optional.of(Path.of(secretsFile)), forced,
          layout, stagings, nodeExpansion);
      if (!r.key().storeKey().equals(key)) {
        throw new RecordFormatException("it names " + r.key().storeKey() + ", not its key", null);
      }
      return r;
    } catch (IOException | IllegalArgumentException e) {
      throw new RecordFormatException("unreadable volume record: " + e.getMessage(), e);
    }
  }

  private static int count(DataInputStream in) throws IOException {
    int n = in.readInt();
    if (n < 0 || n > in.available()) {
      throw new IOException("count " + n + " does not fit the record");
    }
    return n;
  }

  private static void writeMap(DataOutputStream out, Map<String, String> map) throws IOException {
    out.writeInt(map.size());
    for (Map.Entry<String, String> e : map.entrySet()) {
      out.writeUTF(e.getKey());
      out.writeUTF(e.getValue());
    }
  }

  private static Map<String, String> readMap(DataInputStream in) throws IOException {
    TreeMap<String, String> map = new TreeMap<>();
    for (int i = 0, n = count(in); i < n; i++) {
      map.put(in.readUTF(), in.readUTF());
    }
    return map;
  }
}
