/** The admin API: gRPC service and server on a unix socket, and the CLI's client. */
package dev.csisupervisor.agent.admin;
