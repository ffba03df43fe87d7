/**
 * A scriptable CSI plugin for tests and demos: {@link dev.csisupervisor.mockplugin.MockCsiPlugin}
 * serves CSI Identity / Controller / Node over a real unix socket, in-process or as a standalone
 * program ({@code MockCsiPlugin.main}), with readiness, faults, latency and crashes under the
 * caller's control.
 */
package dev.csisupervisor.mockplugin;
