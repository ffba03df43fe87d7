package dev.csisupervisor.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipArchiveOutputStream;
import org.apache.commons.compress.compressors.gzip.GzipCompressorOutputStream;

/** Builds archives in memory for tests, hostile ones included. */
public final class TestArchives {
  private TestArchives() {}

  /** One archive entry. */
  public sealed interface E permits FileE, DirE, SymlinkE, HardlinkE, FifoE {}

  public record FileE(String name, byte[] content, int mode) implements E {}

  public record DirE(String name) implements E {}

  public record SymlinkE(String name, String target) implements E {}

  public record HardlinkE(String name, String target) implements E {}

  public record FifoE(String name) implements E {}

  public static E file(String name, String content, int mode) {
    return new FileE(name, content.getBytes(StandardCharsets.UTF_8), mode);
  }

  public static E dir(String name) {
    return new DirE(name);
  }

  public static E symlink(String name, String target) {
    return new SymlinkE(name, target);
  }

  public static E hardlink(String name, String target) {
    return new HardlinkE(name, target);
  }

  public static E fifo(String name) {
    return new FifoE(name);
  }

  /** A gzip-compressed tar of the entries, names kept exactly (absolute ones too). */
  public static byte[] tarGz(List<E> entries) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (GzipCompressorOutputStream gz = new GzipCompressorOutputStream(bytes);
        TarArchiveOutputStream tar = new TarArchiveOutputStream(gz)) {
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      for (E e : entries) {
        TarArchiveEntry t;
        if (e instanceof FileE f) {
          t = new TarArchiveEntry(f.name(), true);
          t.setSize(f.content().length);
          t.setMode(0100000 | f.mode());
          tar.putArchiveEntry(t);
          tar.write(f.content());
        } else if (e instanceof DirE d) {
          t = new TarArchiveEntry(d.name().endsWith("/") ? d.name() : d.name() + "/", true);
          t.setMode(040755);
          tar.putArchiveEntry(t);
        } else if (e instanceof SymlinkE s) {
          t = new TarArchiveEntry(s.name(), TarConstants.LF_SYMLINK, true);
          t.setLinkName(s.target());
          tar.putArchiveEntry(t);
        } else if (e instanceof HardlinkE h) {
          t = new TarArchiveEntry(h.name(), TarConstants.LF_LINK, true);
          t.setLinkName(h.target());
          tar.putArchiveEntry(t);
        } else if (e instanceof FifoE ff) {
          t = new TarArchiveEntry(ff.name(), TarConstants.LF_FIFO, true);
          tar.putArchiveEntry(t);
        } else {
          throw new IllegalArgumentException(String.valueOf(e));
        }
        tar.closeArchiveEntry();
      }
      tar.finish();
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
    return bytes.toByteArray();
  }

  /** A zip of the entries with unix modes (and unix symlinks). */
  public static byte[] zip(List<E> entries) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ZipArchiveOutputStream zip = new ZipArchiveOutputStream(bytes)) {
      for (E e : entries) {
        if (e instanceof FileE f) {
          ZipArchiveEntry z = new ZipArchiveEntry(f.name());
          z.setUnixMode(0100000 | f.mode());
          zip.putArchiveEntry(z);
          zip.write(f.content());
        } else if (e instanceof DirE d) {
          ZipArchiveEntry z = new ZipArchiveEntry(d.name().endsWith("/") ? d.name()
              : d.name() + "/");
          z.setUnixMode(040755);
          zip.putArchiveEntry(z);
        } else if (e instanceof SymlinkE s) {
          ZipArchiveEntry z = new ZipArchiveEntry(s.name());
          z.setUnixMode(0120777);
          zip.putArchiveEntry(z);
          zip.write(s.target().getBytes(StandardCharsets.UTF_8));
        } else {
          throw new IllegalArgumentException("not in zips: " + e);
        }
        zip.closeArchiveEntry();
      }
      zip.finish();
    } catch (IOException ex) {
      throw new UncheckedIOException(ex);
    }
    return bytes.toByteArray();
  }

  public static String sha256(byte[] data) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
