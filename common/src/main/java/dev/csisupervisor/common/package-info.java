/**
 * Rules that several modules keep, each written once: the unix socket path limit
 * ({@link dev.csisupervisor.common.SocketPaths}), what a plugin id may be
 * ({@link dev.csisupervisor.common.PluginIds}), {@code CSI_ENDPOINT}
 * ({@link dev.csisupervisor.common.CsiEndpoint}), how a duration or a size reads
 * ({@link dev.csisupervisor.common.Durations}, {@link dev.csisupervisor.common.ByteSizes}), how text from
 * outside is made safe to print ({@link dev.csisupervisor.common.Printable}), range and value checks
 * ({@link dev.csisupervisor.common.Bounds}, {@link dev.csisupervisor.common.Values}), what a failed future
 * failed with ({@link dev.csisupervisor.common.Futures}) and how a temporary directory tree is removed
 * ({@link dev.csisupervisor.common.FileTrees}); and the machinery several modules share: one backoff rule
 * ({@link dev.csisupervisor.common.ExponentialBackoff#doubling}) and the file watch
 * ({@link dev.csisupervisor.common.FileWatcher}).
 *
 * <p>This package depends on nothing but the JDK and slf4j-api, so every module may use it. The rules are
 * stateless and thread-safe; a {@code FileWatcher} owns one thread, an {@code ExponentialBackoff} is one
 * retry loop's state.
 */
package dev.csisupervisor.common;
