package dev.csisupervisor.state;

import java.util.Set;

/**
 * One operation {@link PowerCutIo} recorded, on inodes of a {@link DiskModel} (so a renamed directory keeps its
 * files). Data operations ({@link Write}, {@link Zeros}, {@link Truncate}) belong to a file and are durable once it
 * is forced; directory operations belong to the directories whose entries they change and are durable once each of
 * them is forced. {@link Expect} is no operation: it says what a power cut from there on must leave.
 */
sealed interface DiskOp {

  /** A readable line for failure messages. */
  String what();

  /** A data operation on one file. */
  sealed interface Data extends DiskOp {
    long inode();
  }

  /** A directory operation: the directories whose entries it changes, and the names it uses there. */
  sealed interface DirectoryOp extends DiskOp {
    Set<Long> directories();

    /** (directory, name) pairs: two operations sharing one are ordered on every file system. */
    Set<String> names();
  }

  /** A directory operation on one name in one directory. */
  sealed interface OneName extends DirectoryOp {
    long dir();

    String name();

    @Override
    default Set<Long> directories() {
      return Set.of(dir());
    }

    @Override
    default Set<String> names() {
      return Set.of(dir() + "/" + name());
    }
  }

  record Create(long dir, String name, long inode, String what) implements OneName {}

  record Mkdir(long dir, String name, long inode, String what) implements OneName {}

  /** Moves an entry, replacing the target's. */
  record Rename(long fromDir, String fromName, long toDir, String toName, String what) implements DirectoryOp {
    @Override
    public Set<Long> directories() {
      return fromDir == toDir ? Set.of(fromDir) : Set.of(fromDir, toDir);
    }

    @Override
    public Set<String> names() {
      String from = fromDir + "/" + fromName;
      String to = toDir + "/" + toName;
      return from.equals(to) ? Set.of(from) : Set.of(from, to);
    }
  }

  record Unlink(long dir, String name, String what) implements OneName {}

  record Write(long inode, long position, byte[] bytes, String what) implements Data {}

  /** Zeros written (a preallocation): no bytes kept. */
  record Zeros(long inode, long position, long length, String what) implements Data {}

  record Truncate(long inode, long size, String what) implements Data {}

  /** A file's force; one that failed ({@code ok} false) makes nothing durable. */
  record Sync(long inode, boolean ok, String what) implements DiskOp {}

  /** A directory's force. */
  record SyncDir(long inode, String what) implements DiskOp {}

  /** From here on a power cut must leave what {@code expectation} allows. */
  record Expect(PowerCutIo.Expectation expectation) implements DiskOp {
    @Override
    public String what() {
      return "expect " + expectation;
    }
  }
}
