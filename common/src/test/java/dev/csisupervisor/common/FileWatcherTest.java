package dev.csisupervisor.common;

import org.awaitility.core.ConditionFactory;
import org.awaitility.Awaitility;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.csisupervisor.common.FileWatcher.DirectoryEvent;
import dev.csisupervisor.common.FileWatcher.DirectoryEvent.Kind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The inotify watch on real directories; Awaitility where the kernel's timing is the point. */
class FileWatcherTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir Path root;
  private final FileWatcher watcher = new FileWatcher();

  @AfterEach
  void tearDown() {
    watcher.close();
  }

  @Test
  void socketInDirectoriesThatDoNotExistYet_isFollowedDownFromTheNearestAncestor()
      throws Exception {
    Path socket = root.resolve("a/b/c/csi.sock");
    AtomicInteger fired = new AtomicInteger();
    watcher.watchFile(socket, Runnable::run, fired::incrementAndGet);
    assertEquals(root, watcher.watchedDirectory(socket));
    Files.createDirectories(root.resolve("a/b"));
    await().atMost(WAIT).until(() -> root.resolve("a/b").equals(watcher.watchedDirectory(socket)));
    Files.createDirectory(root.resolve("a/b/c"));
    await().atMost(WAIT).until(() -> socket.getParent().equals(watcher.watchedDirectory(socket)));
    Files.createFile(socket);
    await().atMost(WAIT).until(() -> fired.get() == 1);
  }

  @Test
  void wholePathCreatedAtOnce_isFollowedToTheSocket_evenWhenDirectoriesOutrunTheWatch()
      throws Exception {
    // mkdir -p creates a/b/c faster than the watch moves down one level at a time: directories
    // created before the deeper watch was registered send it no event.
    for (int i = 0; i < 20; i++) {
      Path socket = root.resolve("run" + i + "/a/b/c/csi.sock");
      AtomicInteger fired = new AtomicInteger();
      FileWatcher.Watch w = watcher.watchFile(socket, Runnable::run, fired::incrementAndGet);
      Files.createDirectories(socket.getParent());
      await().atMost(WAIT).until(() -> socket.getParent().equals(watcher.watchedDirectory(socket)));
      Files.createFile(socket);
      await().atMost(WAIT).until(() -> fired.get() == 1);
      w.cancel();
    }
  }

  @Test
  void everyReappearanceOfTheSocket_fires() throws Exception {
    Path socket = root.resolve("csi.sock");
    AtomicInteger fired = new AtomicInteger();
    watcher.watchFile(socket, Runnable::run, fired::incrementAndGet);
    for (int i = 1; i <= 3; i++) {
      Files.createFile(socket);
      int expected = i;
      await().atMost(WAIT).until(() -> fired.get() == expected);
      Files.delete(socket);
    }
  }

  @Test
  void watchedDirectoryRemoved_isReArmed_andSeesTheSocketInItsNewIncarnation() throws Exception {
    Path dir = Files.createDirectory(root.resolve("plugin"));
    Path socket = dir.resolve("csi.sock");
    AtomicInteger fired = new AtomicInteger();
    watcher.watchFile(socket, Runnable::run, fired::incrementAndGet);
    assertEquals(dir, watcher.watchedDirectory(socket));
    Files.delete(dir);
    await().atMost(WAIT).until(() -> root.equals(watcher.watchedDirectory(socket)));
    Files.createDirectory(dir);
    await().atMost(WAIT).until(() -> dir.equals(watcher.watchedDirectory(socket)));
    Files.createFile(socket);
    await().atMost(WAIT).until(() -> fired.get() == 1);
  }

  @Test
  void directoryWatch_hearsEntriesCreatedAndDeleted_inOrder() throws Exception {
    List<DirectoryEvent> heard = new CopyOnWriteArrayList<>();
    watcher.watchDirectory(root, Runnable::run, heard::addAll);
    Files.createFile(root.resolve("a.sock"));
    Files.delete(root.resolve("a.sock"));
    await().atMost(WAIT).until(() -> heard.size() >= 2);
    assertEquals(List.of(new DirectoryEvent(Kind.CREATED, "a.sock"),
        new DirectoryEvent(Kind.DELETED, "a.sock")), heard);
  }

  @Test
  void directoryWatchedForADirectoryAndAFile_sharesOneKey_andBothAreHeard() throws Exception {
    List<DirectoryEvent> heard = new CopyOnWriteArrayList<>();
    FileWatcher.Watch dirWatch = watcher.watchDirectory(root, Runnable::run, heard::addAll);
    Path socket = root.resolve("p.sock");
    AtomicInteger fired = new AtomicInteger();
    FileWatcher.Watch fileWatch = watcher.watchFile(socket, Runnable::run, fired::incrementAndGet);
    assertEquals(root, watcher.watchedDirectory(socket));
    Files.createFile(socket);
    await().atMost(WAIT).until(() -> fired.get() == 1 && heard.size() == 1);
    // Either one cancelled leaves the other watching.
    fileWatch.cancel();
    Files.delete(socket);
    await().atMost(WAIT).until(() -> heard.size() == 2);
    dirWatch.cancel();
    fileWatch = watcher.watchFile(socket, Runnable::run, fired::incrementAndGet);
    Files.createFile(socket);
    await().atMost(WAIT).until(() -> fired.get() == 2);
    assertEquals(2, heard.size(), "a cancelled directory watch hears no more");
    fileWatch.cancel();
  }

  @Test
  void watchedDirectoryRemoved_endsTheDirectoryWatch_withWatchLost() throws Exception {
    Path dir = Files.createDirectory(root.resolve("plugins.d"));
    List<DirectoryEvent> heard = new CopyOnWriteArrayList<>();
    watcher.watchDirectory(dir, Runnable::run, heard::addAll);
    Files.delete(dir);
    await().atMost(WAIT).until(
        () -> heard.contains(new DirectoryEvent(Kind.WATCH_LOST, "")));
    assertEquals(new DirectoryEvent(Kind.WATCH_LOST, ""), heard.get(heard.size() - 1));
  }

  @Test
  void directoryThatDoesNotExist_cannotBeWatched() {
    assertThrows(IOException.class,
        () -> watcher.watchDirectory(root.resolve("missing"), Runnable::run, events -> { }));
  }

  @Test
  void callbacksRunOnTheWatchsExecutor_notOnTheWatchThread() throws Exception {
    ExecutorService executor = Executors.newSingleThreadExecutor(r -> new Thread(r, "callbacks"));
    try {
      Path socket = root.resolve("csi.sock");
      List<String> threads = new CopyOnWriteArrayList<>();
      watcher.watchFile(socket, executor, () -> threads.add(Thread.currentThread().getName()));
      watcher.watchDirectory(root, executor,
          events -> threads.add(Thread.currentThread().getName()));
      Files.createFile(socket);
      await().atMost(WAIT).until(() -> threads.size() == 2);
      assertEquals(List.of("callbacks", "callbacks"), threads);
    } finally {
      executor.shutdownNow();
    }
  }

  @Test
  void closedWatcher_refusesDirectoryWatches_andGivesNoOpFileWatches() {
    watcher.close();
    assertThrows(IllegalStateException.class,
        () -> watcher.watchDirectory(root, Runnable::run, events -> { }));
    watcher.watchFile(root.resolve("csi.sock"), Runnable::run, () -> { }).cancel();
    assertEquals(null, watcher.watchedDirectory(root.resolve("csi.sock")));
  }

  @Test
  void cancelledWatch_firesNoMore() throws Exception {
    Path socket = root.resolve("csi.sock");
    AtomicInteger fired = new AtomicInteger();
    FileWatcher.Watch w = watcher.watchFile(socket, Runnable::run, fired::incrementAndGet);
    w.cancel();
    assertEquals(null, watcher.watchedDirectory(socket));
  }

  /** Awaitility polling from the first moment and every 10 ms (by default it waits 100 ms before it first looks). */
  private static ConditionFactory await() {
    return Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10));
  }
}
