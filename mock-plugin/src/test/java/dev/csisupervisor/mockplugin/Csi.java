package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.NodeGrpc;
import dev.csisupervisor.csi.v1.ProbeRequest;
import dev.csisupervisor.csi.v1.VolumeCapability;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.function.Executable;

import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A plain gRPC client over a unix socket for the tests (deliberately not the csi-client module):
 * one channel, stubs with a 5 s deadline unless a test sets a shorter one.
 */
final class Csi implements AutoCloseable {

  final ManagedChannel channel;

  Csi(Path socket) {
    channel = Grpc.newChannelBuilder("unix://" + socket, InsecureChannelCredentials.create())
        .overrideAuthority("localhost")
        .build();
  }

  IdentityGrpc.IdentityBlockingStub identity() {
    return IdentityGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  IdentityGrpc.IdentityFutureStub identityFuture() {
    return IdentityGrpc.newFutureStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
  }

  ControllerGrpc.ControllerBlockingStub controller() {
    return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  NodeGrpc.NodeBlockingStub node() {
    return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  /** Probe's ready field, asserting that the plugin set it explicitly. */
  boolean ready() {
    var response = identity().probe(ProbeRequest.getDefaultInstance());
    if (!response.hasReady()) {
      throw new AssertionError("Probe response without an explicit ready field: " + response);
    }
    return response.getReady().getValue();
  }

  /** {@code capability} (its access type set) with access mode SINGLE_NODE_WRITER. */
  static VolumeCapability singleNodeWriter(VolumeCapability.Builder capability) {
    return capability.setAccessMode(VolumeCapability.AccessMode.newBuilder()
        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build();
  }

  static Status.Code codeOf(Executable call) {
    return assertThrows(StatusRuntimeException.class, call).getStatus().getCode();
  }

  static Status statusOf(Executable call) {
    return assertThrows(StatusRuntimeException.class, call).getStatus();
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
