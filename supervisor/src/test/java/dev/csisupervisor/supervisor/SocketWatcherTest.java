package dev.csisupervisor.supervisor;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The inotify watch on real directories; Awaitility where the kernel's timing is the point. */
class SocketWatcherTest {
  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir Path root;
  private final SocketWatcher watcher = new SocketWatcher(Runnable::run);

  @AfterEach
  void tearDown() {
    watcher.close();
  }

  @Test
  void socketInDirectoriesThatDoNotExistYet_isFollowedDownFromTheNearestAncestor()
      throws Exception {
    Path socket = root.resolve("a/b/c/csi.sock");
    AtomicInteger fired = new AtomicInteger();
    watcher.watch(socket, fired::incrementAndGet);
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
      SocketWatcher.Watch w = watcher.watch(socket, fired::incrementAndGet);
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
    watcher.watch(socket, fired::incrementAndGet);
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
    watcher.watch(socket, fired::incrementAndGet);
    assertEquals(dir, watcher.watchedDirectory(socket));
    Files.delete(dir);
    await().atMost(WAIT).until(() -> root.equals(watcher.watchedDirectory(socket)));
    Files.createDirectory(dir);
    await().atMost(WAIT).until(() -> dir.equals(watcher.watchedDirectory(socket)));
    Files.createFile(socket);
    await().atMost(WAIT).until(() -> fired.get() == 1);
  }

  @Test
  void cancelledWatch_firesNoMore() throws Exception {
    Path socket = root.resolve("csi.sock");
    AtomicInteger fired = new AtomicInteger();
    SocketWatcher.Watch w = watcher.watch(socket, fired::incrementAndGet);
    w.cancel();
    assertEquals(null, watcher.watchedDirectory(socket));
  }
}
