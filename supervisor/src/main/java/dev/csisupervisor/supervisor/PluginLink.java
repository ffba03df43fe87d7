package dev.csisupervisor.supervisor;

import dev.csisupervisor.common.FileWatcher;
import java.nio.file.Path;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;

/**
 * A supervisor hook's link to its plugin: one {@link PluginConnection} to the socket, whose loss is reported, and
 * the watch on the socket file, each (re)appearance of which is reported. Opened at the task's first poststart,
 * kept across the process's restarts, closed when supervision ends.
 *
 * <p>Not thread-safe: guarded by the hook's lock. Both reports run on the scheduler, as tasks of their own (so
 * they take the hook's lock themselves); neither must block.
 */
final class PluginLink {
  private final PluginTaskFiles files;
  private final CsiPluginConfig config;
  private final PluginConnection.Connector connector;
  private final FileWatcher watcher;
  private final ScheduledExecutorService scheduler;
  private PluginConnection connection;
  private FileWatcher.Watch watch;

  PluginLink(PluginTaskFiles files, CsiPluginConfig config, SupervisorServices services) {
    this.files = files;
    this.config = config;
    this.connector = services.connector();
    this.watcher = services.watcher();
    this.scheduler = services.scheduler();
  }

  /** Connects (lazily: nothing waits on the plugin) and starts watching the socket file. */
  void open(Consumer<PluginConnection> lost, Runnable appeared) {
    Path socket = files.socket();
    PluginConnection conn = connector.connect(socket, config.probeTimeout(), config.fingerprintTimeout());
    connection = conn;
    conn.onLost(() -> scheduler.execute(() -> lost.accept(conn)));
    // For the plugin's whole life: every (re)appearance of the socket is probed at once.
    watch = watcher.watchFile(socket, scheduler, appeared);
  }

  /** The connection calls use now; null before {@link #open} and after {@link #release}. */
  PluginConnection connection() {
    return connection;
  }

  /** Stops the watch and lets go of the connection; returns what closes it, to be run outside the lock. */
  Runnable release() {
    if (watch != null) {
      watch.cancel();
      watch = null;
    }
    PluginConnection was = connection;
    connection = null;
    return was == null ? () -> { } : was::close;
  }
}
