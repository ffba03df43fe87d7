/**
 * The operator page: a read-only page at {@code /ui/} and its JSON at {@code /api/v1/...}, served on the metrics
 * listener (loopback by default) by the metrics server's own handler. GET only; actions stay on the CLI and its 0600
 * admin socket.
 */
package dev.csisupervisor.agent.web;
