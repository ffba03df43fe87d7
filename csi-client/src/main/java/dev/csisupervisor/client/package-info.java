/**
 * The CSI client: {@link dev.csisupervisor.client.CsiClient} talks to one CSI plugin over its
 * unix domain socket (gRPC, Netty epoll) and reports every failure as a typed
 * {@link dev.csisupervisor.client.CsiException} naming the socket. Public types here are the
 * contract; gRPC and the generated stubs stay inside this package.
 */
package dev.csisupervisor.client;
