/**
 * What operators read, written once for every place that shows it: the cluster's plugins, volumes, requests and
 * stuck items as the CLI's {@code --json} prints them and the operator page's {@code /api/v1/...} serves them.
 */
package dev.csisupervisor.agent.views;
