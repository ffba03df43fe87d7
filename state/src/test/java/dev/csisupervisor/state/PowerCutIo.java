package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

/**
 * The store's {@link StateIo} for power-cut tests: every operation is done on the real file system (so the store
 * reads back what it wrote) and recorded, on inodes, in a log that {@link CrashSimulator} turns into the disk images
 * a power cut could leave. Forces are recorded, not done: durability is the log's business, and a run stays fast.
 *
 * <p>Writes made outside the seam (MapDB's into a checkpoint's temporary file) are found when the file is next
 * opened through the seam (to be forced) and recorded then, as one write of the whole file. The lock file, opened
 * directly, is not in the log: it holds no data and open makes it again.
 *
 * <p>Also: faults (the Nth force or write from now fails; no room to preallocate), background work (the segment
 * preparer and background checkpoints) held until {@link #runBackground()} so a run is one order of operations,
 * and a hook called after each open (a test blocks a thread there). Thread-safe: operations are done and
 * recorded under one lock, so the log is one order the file system saw.
 */
final class PowerCutIo implements StateIo {

  /**
   * What a power cut from some point on must leave: the records exactly one of {@code allowed} (the acknowledged
   * state, and the state with the change in flight, if one is), every path in {@code absent} missing; a strict open
   * may fail as corrupt only if {@code strictMayFail} (a repair under way).
   */
  record Expectation(String label, List<Map<String, String>> allowed, boolean strictMayFail, List<Path> absent) {
    static Expectation exactly(String label, Map<String, String> records) {
      return new Expectation(label, List.of(Map.copyOf(records)), false, List.of());
    }

    static Expectation either(String label, Map<String, String> before, Map<String, String> after) {
      return new Expectation(label, List.of(Map.copyOf(before), Map.copyOf(after)), false, List.of());
    }

    Expectation withStrictMayFail() {
      return new Expectation(label, allowed, true, absent);
    }

    Expectation withAbsent(Path... paths) {
      return new Expectation(label, allowed, strictMayFail, List.of(paths));
    }

    @Override
    public String toString() {
      return label;
    }
  }

  private final Path root;
  private final DiskModel base;
  private final DiskModel live; // what the file system holds now, by the log
  private final List<DiskOp> log = new ArrayList<>();
  private final Deque<Runnable> background = new ArrayDeque<>();
  private final boolean ownThreads;
  private long nextInode;
  private int forces;
  private int writes;
  private int failForce = -1;
  private int failWrite = -1;
  private boolean noRoom;
  private String failForcesOf;
  private boolean failDirectorySyncs;
  private volatile Consumer<Path> afterOpen = p -> { };

  /**
   * Records from now on under {@code root}, whose present contents count as durable.
   *
   * @param ownThreads true: the store runs its background work on its own threads; false: it waits for
   *     {@link #runBackground()}
   */
  PowerCutIo(Path root, boolean ownThreads) throws IOException {
    this.root = root;
    this.base = DiskModel.read(root);
    this.live = base.copy();
    this.nextInode = base.maxInode() + 1;
    this.ownThreads = ownThreads;
  }

  /** The disk as it was when the recording started: durable. */
  DiskModel base() {
    return base.copy();
  }

  synchronized List<DiskOp> log() {
    return List.copyOf(log);
  }

  /** From here on, a power cut must leave what {@code e} allows. */
  synchronized void expect(Expectation e) {
    log.add(new DiskOp.Expect(e));
  }

  /** Fails the {@code n}th force from now (1 = the next one); it is recorded as failed, and makes nothing durable. */
  synchronized void failForceIn(int n) {
    failForce = forces + n;
  }

  /** The {@code n}th write from now writes half its bytes, then fails. */
  synchronized void failWriteIn(int n) {
    failWrite = writes + n;
  }

  /** Every force of a file whose name contains {@code name} fails from now on: a region of the disk gone bad. */
  synchronized void failForcesOf(String name) {
    failForcesOf = name;
  }

  /** Whether every force of a directory fails from now on. */
  synchronized void failDirectorySyncs(boolean fail) {
    failDirectorySyncs = fail;
  }

  /** Whether preallocations fail for want of room (after writing half their zeros): a small disk. */
  synchronized void noRoomForPreallocation(boolean noRoom) {
    this.noRoom = noRoom;
  }

  /** Called with each path once it is open (or made), outside the lock: a test may block the thread there. */
  void afterOpen(Consumer<Path> hook) {
    afterOpen = hook;
  }

  /** Runs the background work the store handed over, until there is none. */
  void runBackground() {
    while (true) {
      Runnable r;
      synchronized (this) {
        r = background.poll();
      }
      if (r == null) {
        return;
      }
      r.run();
    }
  }

  private void defer(Runnable r) {
    synchronized (this) {
      background.add(r);
    }
  }

  @Override
  public Executor segmentPreparer() {
    return ownThreads ? null : this::defer;
  }

  @Override
  public Executor checkpointRunner() {
    return ownThreads ? null : this::defer;
  }

  // ---- the seam ----

  @Override
  public FileChannel open(Path path, Set<? extends OpenOption> options) throws IOException {
    FileChannel channel = openAndRecord(path, options);
    afterOpen.accept(path);
    return channel;
  }

  private synchronized FileChannel openAndRecord(Path path, Set<? extends OpenOption> options) throws IOException {
    boolean existed = Files.exists(path);
    FileChannel real = FileChannel.open(path, options);
    Long inode = live.resolve(relative(path));
    if (!existed) {
      Long parent = live.resolve(relative(path.getParent()));
      if (parent == null) {
        return real; // in a directory made outside the seam: not part of the model
      }
      inode = nextInode++;
      record(new DiskOp.Create(parent, name(path), inode, "create " + relative(path)));
    } else if (inode != null) {
      foreignWrites(inode, path);
      if (options.contains(StandardOpenOption.TRUNCATE_EXISTING)) {
        record(new DiskOp.Truncate(inode, 0, "truncate " + relative(path) + " to 0 (open)"));
      }
    }
    return inode == null ? real : new Recording(real, inode);
  }

  /** Records what was written into the file without the seam (MapDB) as one write of the whole file. */
  private void foreignWrites(long inode, Path path) throws IOException {
    byte[] real = Files.readAllBytes(path);
    byte[] known = live.content(inode);
    if (Arrays.equals(real, known)) {
      return;
    }
    if (real.length < known.length) {
      record(new DiskOp.Truncate(inode, real.length, "truncate " + relative(path) + " (outside the seam)"));
    }
    record(new DiskOp.Write(inode, 0, real, "write " + real.length + " bytes into " + relative(path)
        + " (outside the seam)"));
  }

  @Override
  public void preallocate(FileChannel file, long from, long length) throws IOException {
    if (!(file instanceof Recording r)) {
      StateIo.super.preallocate(file, from, length);
      return;
    }
    synchronized (this) {
      long zeros = noRoom ? length / 2 : length;
      StateIo.super.preallocate(r.real, from, zeros);
      record(new DiskOp.Zeros(r.inode, from, zeros, "zeros " + from + "+" + zeros + " in " + r.name()));
      if (noRoom) {
        throw new IOException("No space left on device (simulated)");
      }
    }
  }

  @Override
  public void rename(Path from, Path to) throws IOException {
    synchronized (this) {
      Long fromDir = live.resolve(relative(from.getParent()));
      Long toDir = live.resolve(relative(to.getParent()));
      boolean known = live.resolve(relative(from)) != null;
      StateIo.super.rename(from, to);
      if (known && fromDir != null && toDir != null) {
        record(new DiskOp.Rename(fromDir, name(from), toDir, name(to), "rename " + relative(from) + " -> "
            + relative(to)));
      }
    }
  }

  @Override
  public void delete(Path path) throws IOException {
    synchronized (this) {
      Long dir = live.resolve(relative(path.getParent()));
      boolean known = live.resolve(relative(path)) != null;
      if (Files.deleteIfExists(path) && known && dir != null) {
        record(new DiskOp.Unlink(dir, name(path), "unlink " + relative(path)));
      }
    }
  }

  @Override
  public void createDirectory(Path dir) throws IOException {
    synchronized (this) {
      StateIo.super.createDirectory(dir);
      Long parent = live.resolve(relative(dir.getParent()));
      if (parent != null) {
        record(new DiskOp.Mkdir(parent, name(dir), nextInode++, "mkdir " + relative(dir)));
      }
    }
  }

  @Override
  public void syncDirectory(Path dir) throws IOException {
    synchronized (this) {
      if (!Files.isDirectory(dir)) {
        throw new IOException("not a directory: " + dir);
      }
      if (failDirectorySyncs) {
        throw new IOException("Input/output error (simulated directory fsync failure)");
      }
      Long inode = live.resolve(relative(dir));
      if (inode != null) {
        record(new DiskOp.SyncDir(inode, "fsync directory " + relative(dir)));
      }
    }
  }

  private void record(DiskOp op) {
    live.apply(op);
    log.add(op);
  }

  private Path relative(Path p) {
    return root.relativize(p.toAbsolutePath().normalize());
  }

  private static String name(Path p) {
    return p.getFileName().toString();
  }

  /** A channel whose writes, forces and truncations are recorded against one inode. */
  private final class Recording extends FileChannel {
    final FileChannel real;
    final long inode;

    Recording(FileChannel real, long inode) {
      this.real = real;
      this.inode = inode;
    }

    /** The file's name now (it may have been renamed since it was opened). */
    String name() {
      return live.pathOf(inode);
    }

    @Override
    public int write(ByteBuffer src, long position) throws IOException {
      synchronized (PowerCutIo.this) {
        boolean fail = ++writes == failWrite;
        ByteBuffer part = src.duplicate();
        if (fail) {
          part.limit(part.position() + part.remaining() / 2);
        }
        byte[] bytes = new byte[part.remaining()];
        part.duplicate().get(bytes);
        int n = real.write(part, position);
        src.position(src.position() + n);
        record(new DiskOp.Write(inode, position, Arrays.copyOf(bytes, n), "write " + n + " bytes at " + position
            + " of " + name()));
        if (fail) {
          throw new IOException("No space left on device (simulated, after " + n + " bytes)");
        }
        return n;
      }
    }

    @Override
    public void force(boolean metaData) throws IOException {
      synchronized (PowerCutIo.this) {
        boolean fail = ++forces == failForce || failForcesOf != null && name().contains(failForcesOf);
        record(new DiskOp.Sync(inode, !fail, (fail ? "FAILED " : "") + "fsync " + name()));
        if (fail) {
          throw new IOException("Input/output error (simulated fsync failure)");
        }
      }
    }

    @Override
    public FileChannel truncate(long size) throws IOException {
      synchronized (PowerCutIo.this) {
        real.truncate(size);
        record(new DiskOp.Truncate(inode, size, "truncate " + name() + " to " + size));
        return this;
      }
    }

    @Override public int read(ByteBuffer dst) throws IOException { return real.read(dst); }
    @Override public long read(ByteBuffer[] dsts, int offset, int length) throws IOException { return real.read(dsts, offset, length); }
    @Override public int read(ByteBuffer dst, long position) throws IOException { return real.read(dst, position); }
    @Override public long position() throws IOException { return real.position(); }
    @Override public FileChannel position(long newPosition) throws IOException { real.position(newPosition); return this; }
    @Override public long size() throws IOException { return real.size(); }
    @Override protected void implCloseChannel() throws IOException { real.close(); }

    // Not used by the store; refused so that a change that starts using one is noticed here.
    @Override public int write(ByteBuffer src) { throw unrecorded(); }
    @Override public long write(ByteBuffer[] srcs, int offset, int length) { throw unrecorded(); }
    @Override public long transferTo(long position, long count, WritableByteChannel target) { throw unrecorded(); }
    @Override public long transferFrom(ReadableByteChannel src, long position, long count) { throw unrecorded(); }
    @Override public MappedByteBuffer map(MapMode mode, long position, long size) { throw unrecorded(); }
    @Override public FileLock lock(long position, long size, boolean shared) { throw unrecorded(); }
    @Override public FileLock tryLock(long position, long size, boolean shared) { throw unrecorded(); }

    private UnsupportedOperationException unrecorded() {
      return new UnsupportedOperationException("PowerCutIo records positional writes, force and truncate only");
    }
  }
}
