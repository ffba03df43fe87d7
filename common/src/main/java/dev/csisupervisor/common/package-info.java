/**
 * Rules that several modules keep, each written once: the unix socket path limit
 * ({@link dev.csisupervisor.common.SocketPaths}), what a plugin id may be
 * ({@link dev.csisupervisor.common.PluginIds}), how a duration reads in a message
 * ({@link dev.csisupervisor.common.Durations}), how text from outside is made safe to print
 * ({@link dev.csisupervisor.common.Printable}) and how a temporary directory tree is removed
 * ({@link dev.csisupervisor.common.FileTrees}).
 *
 * <p>This package depends on nothing but the JDK, so every module may use it. Everything here is
 * stateless and thread-safe.
 */
package dev.csisupervisor.common;
