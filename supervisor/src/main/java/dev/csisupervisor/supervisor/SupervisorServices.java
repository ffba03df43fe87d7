package dev.csisupervisor.supervisor;

import dev.csisupervisor.common.FileWatcher;
import dev.csisupervisor.registry.PluginRegistry;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Random;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.LongSupplier;

/**
 * What every hook of one {@link CsiPluginSupervisor} shares: where plugin directories live, the
 * registry and the thread that writes to it, the scheduler that probes, time, the socket watch, how a
 * plugin is connected to and what is told of each probe.
 */
record SupervisorServices(
    Path csiRoot,
    PluginRegistry registry,
    Executor registryExecutor,
    ScheduledExecutorService scheduler,
    Clock clock,
    LongSupplier nanoTicker,
    Random random,
    PluginConnection.Connector connector,
    FileWatcher watcher,
    ProbeObserver probeObserver) {}
