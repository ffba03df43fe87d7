package dev.csisupervisor.volumes;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeCapability.AccessType;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
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
 * declaration order (version 2; version 1, without the fields version 2 added, is still read), enums by name (so a reordering cannot change a stored meaning), strings as
 * modified UTF-8. Stateless.
 */
final class VolumeRecordCodec {
  /** The first format: no volume context, secrets file, forced flag, staging-mounted or needs-claim flags. */
  static final byte VERSION_1 = 1;
  /** Adds the volume context, the secrets file's path, the forced flag, and per usage the two flags. */
  static final byte VERSION_2 = 2;

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
      out.writeByte(VERSION_2);
      out.writeUTF(r.pluginId());
      out.writeUTF(r.volumeId());
      out.writeUTF(r.pluginDir().toString());
      out.writeUTF(r.controller().name());
      out.writeUTF(r.controllerNodeId());
      writeMap(out, r.publishContext());
      writeMap(out, r.volumeContext());
      out.writeUTF(r.secretsFile().map(Path::toString).orElse(""));
      out.writeBoolean(r.forced());
      out.writeInt(r.usages().size());
      for (UsageRecord u : r.usages().values()) {
        VolumeCapability c = u.capability();
        out.writeUTF(c.accessType().name());
        out.writeUTF(c.accessMode().name());
        out.writeBoolean(u.usage().readOnly());
        out.writeUTF(c.fsType());
        out.writeUTF(c.volumeMountGroup());
        out.writeUTF(u.stage().name());
        out.writeBoolean(u.stagingMounted());
        out.writeBoolean(u.needsClaim());
        out.writeInt(u.allocs().size());
        for (Map.Entry<String, AllocPhase> a : u.allocs().entrySet()) {
          out.writeUTF(a.getKey());
          out.writeUTF(a.getValue().name());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail
    }
    return bytes.toByteArray();
  }

  static VolumeRecord decode(String key, byte[] value) throws RecordFormatException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
      int version = in.readUnsignedByte();
      if (version != VERSION_1 && version != VERSION_2) {
        throw new RecordFormatException("format version " + version + " is not one this agent reads (1, 2)", null);
      }
      boolean v2 = version == VERSION_2;
      String pluginId = in.readUTF();
      String volumeId = in.readUTF();
      Path pluginDir = Path.of(in.readUTF());
      ControllerState controller = ControllerState.valueOf(in.readUTF());
      String nodeId = in.readUTF();
      Map<String, String> publishContext = readMap(in);
      Map<String, String> volumeContext = v2 ? readMap(in) : Map.of();
      String secretsFile = v2 ? in.readUTF() : "";
      boolean forced = v2 && in.readBoolean();
      TreeMap<VolumeUsage, UsageRecord> usages = new TreeMap<>(VolumeRecord.USAGE_ORDER);
      for (int i = 0, n = count(in); i < n; i++) {
        AccessType type = AccessType.valueOf(in.readUTF());
        AccessMode mode = AccessMode.valueOf(in.readUTF());
        boolean readOnly = in.readBoolean();
        String fsType = in.readUTF();
        String group = in.readUTF();
        StageState stage = StageState.valueOf(in.readUTF());
        boolean stagingMounted = v2 && in.readBoolean();
        boolean needsClaim = v2 && in.readBoolean();
        TreeMap<String, AllocPhase> allocs = new TreeMap<>();
        for (int j = 0, m = count(in); j < m; j++) {
          allocs.put(VolumeIds.check("allocId", in.readUTF()), AllocPhase.valueOf(in.readUTF()));
        }
        VolumeUsage usage = new VolumeUsage(type, mode, readOnly);
        usages.put(usage, new UsageRecord(usage, new VolumeCapability(type, fsType, List.of(), group, mode), stage,
            allocs, stagingMounted, needsClaim));
      }
      if (in.available() > 0) {
        throw new RecordFormatException(in.available() + " unexpected byte(s) after the record", null);
      }
      VolumeRecord r = new VolumeRecord(pluginId, volumeId, pluginDir, controller, nodeId, publishContext, usages,
          volumeContext, secretsFile.isEmpty() ? Optional.empty() : Optional.of(Path.of(secretsFile)), forced);
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
