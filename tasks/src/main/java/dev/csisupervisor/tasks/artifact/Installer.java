package dev.csisupervisor.tasks.artifact;

import dev.csisupervisor.tasks.artifact.ArtifactException.Reason;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipFile;
import org.apache.commons.compress.compressors.gzip.GzipCompressorInputStream;

/**
 * Installs a verified artifact file into an empty staging directory: the file itself as the
 * executable, or the archive's entries. Every entry is checked before anything is written for it:
 * names must stay inside the directory (no absolute paths, no {@code ..}), symbolic links must
 * point inside it, hard links must name an entry inside it, and only files, directories and links
 * are accepted (no devices or FIFOs). Files are written with {@code CREATE_NEW} and without
 * following links, so an entry can never write through a link. Permission bits are kept except
 * set-id, sticky and group/other write bits. Not thread-safe; one install per staging directory.
 */
final class Installer {
  /** An archive that unpacks to more than this is refused (a decompression bomb). */
  static final long DEFAULT_MAX_BYTES = 4L * 1024 * 1024 * 1024;
  static final int DEFAULT_MAX_ENTRIES = 100_000;

  private static final Set<PosixFilePermission> DIR_MODE =
      PosixFilePermissions.fromString("rwxr-xr-x");
  private static final Set<PosixFilePermission> EXECUTABLE_MODE =
      PosixFilePermissions.fromString("rwx------");

  private final Path staging;
  private final ArtifactSpec spec;
  private final long maxBytes;
  private final int maxEntries;
  private long written;
  private int entries;

  Installer(Path staging, ArtifactSpec spec, long maxBytes, int maxEntries) {
    this.staging = staging.toAbsolutePath().normalize();
    this.spec = spec;
    this.maxBytes = maxBytes;
    this.maxEntries = maxEntries;
  }

  /** Installs {@code file} (already verified) and checks the entry; returns the executable. */
  Path install(Path file) throws ArtifactException {
    try {
      switch (spec.unpack()) {
        case NONE -> {
          Path exe = staging.resolve(spec.entry());
          Files.move(file, exe, StandardCopyOption.REPLACE_EXISTING);
          // A downloaded file carries no mode: it is the executable because the config says so.
          Files.setPosixFilePermissions(exe, EXECUTABLE_MODE);
        }
        case TAR_GZ -> untar(file);
        case ZIP -> unzip(file);
        default -> throw new IllegalStateException("unpack " + spec.unpack());
      }
    } catch (IOException e) {
      throw new ArtifactException(Reason.IO, "cannot install " + spec.displayUrl() + " into "
          + staging + ": " + e, false, e);
    }
    return checkEntry();
  }

  // ---- tar.gz ------------------------------------------------------------------------------

  private void untar(Path file) throws ArtifactException, IOException {
    try (InputStream raw = new BufferedInputStream(Files.newInputStream(file))) {
      GzipCompressorInputStream gz;
      try {
        gz = new GzipCompressorInputStream(raw);
      } catch (IOException e) {
        throw corrupt("not gzip: " + e.getMessage(), e);
      }
      untar(new TarArchiveInputStream(gz));
    }
  }

  private void untar(TarArchiveInputStream tar) throws ArtifactException, IOException {
    try (tar) {
      TarArchiveEntry e;
      while ((e = nextTar(tar)) != null) {
        String name = e.getName();
        if (e.isDirectory()) {
          Path dir = target(name);
          if (dir != null) {
            makeDir(dir, name);
          }
        } else if (e.isSymbolicLink()) {
          symlink(name, e.getLinkName());
        } else if (e.isLink()) {
          hardLink(name, e.getLinkName());
        } else if (e.isCharacterDevice() || e.isBlockDevice() || e.isFIFO()) {
          throw hostile(name, "is a " + tarType(e) + ", not a file, directory or link");
        } else if (e.isFile()) {
          file(name, tar, e.getMode());
        } else {
          throw hostile(name, "is a " + tarType(e) + ", not a file, directory or link");
        }
      }
    }
  }

  private TarArchiveEntry nextTar(TarArchiveInputStream tar) throws ArtifactException {
    try {
      TarArchiveEntry e = tar.getNextEntry();
      if (e != null && ++entries > maxEntries) {
        throw corrupt("it has more than " + maxEntries + " entries", null);
      }
      return e;
    } catch (IOException | IllegalArgumentException e) {
      throw corrupt(e.getMessage(), e);
    }
  }

  private static String tarType(TarArchiveEntry e) {
    if (e.isCharacterDevice()) {
      return "character device";
    }
    if (e.isBlockDevice()) {
      return "block device";
    }
    if (e.isFIFO()) {
      return "FIFO";
    }
    return "special entry (type " + (char) e.getLinkFlag() + ")";
  }

  // ---- zip ---------------------------------------------------------------------------------

  private void unzip(Path file) throws ArtifactException, IOException {
    ZipFile zip;
    try {
      zip = ZipFile.builder().setPath(file).get();
    } catch (IOException | IllegalArgumentException e) {
      throw corrupt(e.getMessage(), e);
    }
    try (zip) {
      List<ZipArchiveEntry> all = Collections.list(zip.getEntries());
      if (all.size() > maxEntries) {
        throw corrupt("it has more than " + maxEntries + " entries", null);
      }
      for (ZipArchiveEntry e : all) {
        String name = e.getName();
        if (e.isUnixSymlink()) {
          String link;
          try {
            link = zip.getUnixSymlink(e);
          } catch (IOException | RuntimeException ex) {
            throw corrupt(ex.getMessage(), ex);
          }
          symlink(name, link);
        } else if (e.isDirectory()) {
          Path dir = target(name);
          if (dir != null) {
            makeDir(dir, name);
          }
        } else {
          int mode = e.getUnixMode();
          try (InputStream in = zip.getInputStream(e)) {
            file(name, in, mode == 0 ? 0644 : mode);
          } catch (ArtifactException ex) {
            throw ex;
          } catch (IOException | RuntimeException ex) {
            throw corrupt(name + ": " + ex.getMessage(), ex);
          }
        }
      }
    }
  }

  // ---- entries -----------------------------------------------------------------------------

  /**
   * Where an entry goes, or null for the archive's own root ({@code ./}).
   *
   * @throws ArtifactException if the name is absolute, has {@code ..}, or resolves outside
   */
  private Path target(String name) throws ArtifactException {
    if (name.isEmpty() || name.indexOf('\0') >= 0) {
      throw hostile(name, "has an empty or invalid name");
    }
    if (name.startsWith("/")) {
      throw hostile(name, "is an absolute path");
    }
    for (String part : name.split("/")) {
      if (part.equals("..")) {
        throw hostile(name, "contains '..'");
      }
    }
    Path p = staging.resolve(name).normalize();
    if (p.equals(staging)) {
      return null;
    }
    if (!p.startsWith(staging)) {
      throw hostile(name, "resolves outside the target directory");
    }
    return p;
  }

  private void makeDir(Path dir, String name) throws ArtifactException, IOException {
    ensureParent(dir, name);
    if (Files.isSymbolicLink(dir)) {
      throw hostile(name, "is a directory over a symbolic link");
    }
    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      Files.createDirectory(dir);
    }
    Files.setPosixFilePermissions(dir, DIR_MODE);
  }

  /** Makes the parent directories and checks, links resolved, that they are inside. */
  private void ensureParent(Path p, String name) throws ArtifactException, IOException {
    Path parent = p.getParent();
    Files.createDirectories(parent);
    if (!parent.toRealPath().startsWith(staging.toRealPath())) {
      throw hostile(name, "would be written through a link that leads outside");
    }
  }

  private void file(String name, InputStream in, int mode) throws ArtifactException, IOException {
    Path p = target(name);
    if (p == null) {
      throw hostile(name, "has an empty name");
    }
    ensureParent(p, name);
    try (OutputStream out = Files.newOutputStream(p, StandardOpenOption.CREATE_NEW,
        StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
      byte[] buf = new byte[64 * 1024];
      int n;
      while (true) {
        try {
          n = in.read(buf);
        } catch (IOException e) {
          throw corrupt(name + ": " + e.getMessage(), e);
        }
        if (n < 0) {
          break;
        }
        written += n;
        if (written > maxBytes) {
          throw corrupt("it unpacks to more than " + maxBytes + " bytes", null);
        }
        out.write(buf, 0, n);
      }
    } catch (FileAlreadyExistsException e) {
      throw hostile(name, "appears twice (or over a link)");
    }
    Files.setPosixFilePermissions(p, mode(mode));
  }

  private void symlink(String name, String linkName) throws ArtifactException, IOException {
    Path p = target(name);
    if (p == null) {
      throw hostile(name, "is a link without a name");
    }
    if (linkName == null || linkName.isEmpty() || linkName.indexOf('\0') >= 0) {
      throw hostile(name, "is a link with an empty target");
    }
    if (linkName.startsWith("/")) {
      throw hostile(name, "is a symbolic link to the absolute path " + linkName);
    }
    Path resolved = p.getParent().resolve(linkName).normalize();
    if (!resolved.startsWith(staging)) {
      throw hostile(name, "is a symbolic link to " + linkName + ", outside the target directory");
    }
    ensureParent(p, name);
    try {
      Files.createSymbolicLink(p, Path.of(linkName));
    } catch (FileAlreadyExistsException e) {
      throw hostile(name, "appears twice");
    }
  }

  private void hardLink(String name, String linkName) throws ArtifactException, IOException {
    Path p = target(name);
    if (p == null || linkName == null || linkName.isEmpty()) {
      throw hostile(name, "is a hard link without a name or target");
    }
    if (linkName.startsWith("/")) {
      throw hostile(name, "is a hard link to the absolute path " + linkName);
    }
    Path existing;
    try {
      existing = target(linkName);
    } catch (ArtifactException e) {
      throw hostile(name, "is a hard link to " + linkName + ", outside the target directory");
    }
    if (existing == null || !Files.isRegularFile(existing, LinkOption.NOFOLLOW_LINKS)) {
      throw hostile(name, "is a hard link to " + linkName + ", which is not a file unpacked"
          + " before it");
    }
    ensureParent(p, name);
    if (!existing.toRealPath().startsWith(staging.toRealPath())) {
      throw hostile(name, "is a hard link to " + linkName + ", outside the target directory");
    }
    try {
      Files.createLink(p, existing);
    } catch (FileAlreadyExistsException e) {
      throw hostile(name, "appears twice");
    }
  }

  private static Set<PosixFilePermission> mode(int mode) {
    // Owner keeps read/write; no set-id, sticky, group- or world-writable bits.
    int m = (mode & 0755) | 0600;
    Set<PosixFilePermission> s = EnumSet.noneOf(PosixFilePermission.class);
    PosixFilePermission[] bits = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_READ};
    for (int i = 0; i < bits.length; i++) {
      if ((m & (1 << i)) != 0) {
        s.add(bits[i]);
      }
    }
    return s;
  }

  // ---- the entry ---------------------------------------------------------------------------

  private Path checkEntry() throws ArtifactException {
    Path exe = staging.resolve(spec.entry()).normalize();
    if (!Files.exists(exe)) {
      throw new ArtifactException(Reason.ENTRY_MISSING, "entry " + spec.entry() + " is not in "
          + spec.displayUrl() + (spec.unpack() == ArtifactSpec.Unpack.NONE ? ""
              : " (it holds: " + listing() + ")"), false);
    }
    try {
      if (!exe.toRealPath().startsWith(staging.toRealPath())) {
        throw new ArtifactException(Reason.ARCHIVE, "entry " + spec.entry()
            + " leads outside the artifact", false);
      }
    } catch (IOException e) {
      throw new ArtifactException(Reason.ENTRY_MISSING, "entry " + spec.entry()
          + " cannot be resolved: " + e, false, e);
    }
    if (Files.isDirectory(exe)) {
      throw new ArtifactException(Reason.ENTRY_NOT_EXECUTABLE, "entry " + spec.entry()
          + " of " + spec.displayUrl() + " is a directory, not an executable file", false);
    }
    if (!Files.isRegularFile(exe) || !Files.isExecutable(exe)) {
      String mode;
      try {
        mode = PosixFilePermissions.toString(Files.getPosixFilePermissions(exe));
      } catch (IOException e) {
        mode = "unknown";
      }
      throw new ArtifactException(Reason.ENTRY_NOT_EXECUTABLE, "entry " + spec.entry()
          + " of " + spec.displayUrl() + " is not executable (mode " + mode + ")", false);
    }
    return exe;
  }

  private String listing() {
    List<String> files = new ArrayList<>();
    try (Stream<Path> s = Files.walk(staging)) {
      s.filter(p -> !p.equals(staging)).limit(11)
          .forEach(p -> files.add(staging.relativize(p).toString()));
    } catch (IOException e) {
      return "?";
    }
    if (files.isEmpty()) {
      return "nothing";
    }
    String list = String.join(", ", files.subList(0, Math.min(10, files.size())));
    return files.size() > 10 ? list + ", ..." : list;
  }

  private ArtifactException hostile(String name, String what) {
    return new ArtifactException(Reason.ARCHIVE, "refusing " + spec.displayUrl() + ": entry \""
        + name + "\" " + what, false);
  }

  private ArtifactException corrupt(String detail, Throwable cause) {
    return new ArtifactException(Reason.ARCHIVE, "archive " + spec.displayUrl()
        + " is truncated or corrupt" + (detail == null || detail.isBlank() ? "" : ": " + detail),
        false, cause);
  }
}
