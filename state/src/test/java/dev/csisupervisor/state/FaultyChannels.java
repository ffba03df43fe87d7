package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A {@link JournalWriter.ChannelFactory} whose channels fail the Nth positional write or the Nth force (counted
 * across every channel it opened) with {@code IOException("No space left on device")}; all other calls go to a
 * real file channel.
 */
final class FaultyChannels implements JournalWriter.ChannelFactory {
  final AtomicInteger writes = new AtomicInteger();
  final AtomicInteger forces = new AtomicInteger();
  volatile int failWrite = -1;
  volatile int failForce = -1;

  /** Fails the {@code n}th write from now (1 = the next one). */
  void failWriteIn(int n) {
    failWrite = writes.get() + n;
  }

  /** Fails the {@code n}th force from now (1 = the next one). */
  void failForceIn(int n) {
    failForce = forces.get() + n;
  }

  /** Segments are prepared right after the batch that started one: counts stay deterministic. */
  @Override
  public Executor segmentPreparer() {
    return Runnable::run;
  }

  @Override
  public FileChannel open(Path path, Set<? extends OpenOption> options) throws IOException {
    return new Faulty(FileChannel.open(path, options));
  }

  private final class Faulty extends FileChannel {
    private final FileChannel d;

    Faulty(FileChannel d) {
      this.d = d;
    }

    @Override
    public int write(ByteBuffer src, long position) throws IOException {
      if (writes.incrementAndGet() == failWrite) {
        // A real short write: part of the buffer reaches the file, then the error.
        int half = src.remaining() / 2;
        ByteBuffer part = src.duplicate();
        part.limit(part.position() + half);
        d.write(part, position);
        throw new IOException("No space left on device");
      }
      return d.write(src, position);
    }

    @Override
    public void force(boolean metaData) throws IOException {
      if (forces.incrementAndGet() == failForce) {
        throw new IOException("No space left on device");
      }
      d.force(metaData);
    }

    @Override public int read(ByteBuffer dst) throws IOException { return d.read(dst); }
    @Override public long read(ByteBuffer[] dsts, int offset, int length) throws IOException { return d.read(dsts, offset, length); }
    @Override public int write(ByteBuffer src) throws IOException { return d.write(src); }
    @Override public long write(ByteBuffer[] srcs, int offset, int length) throws IOException { return d.write(srcs, offset, length); }
    @Override public long position() throws IOException { return d.position(); }
    @Override public FileChannel position(long newPosition) throws IOException { d.position(newPosition); return this; }
    @Override public long size() throws IOException { return d.size(); }
    @Override public FileChannel truncate(long size) throws IOException { d.truncate(size); return this; }
    @Override public long transferTo(long position, long count, WritableByteChannel target) throws IOException { return d.transferTo(position, count, target); }
    @Override public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException { return d.transferFrom(src, position, count); }
    @Override public int read(ByteBuffer dst, long position) throws IOException { return d.read(dst, position); }
    @Override public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException { return d.map(mode, position, size); }
    @Override public FileLock lock(long position, long size, boolean shared) throws IOException { return d.lock(position, size, shared); }
    @Override public FileLock tryLock(long position, long size, boolean shared) throws IOException { return d.tryLock(position, size, shared); }
    @Override protected void implCloseChannel() throws IOException { d.close(); }
  }
}
