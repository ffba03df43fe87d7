package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.AuthGrpc;
import dev.csisupervisor.catalog.etcdpb.AuthenticateRequest;
import dev.csisupervisor.catalog.etcdpb.CompactionRequest;
import dev.csisupervisor.catalog.etcdpb.KVGrpc;
import dev.csisupervisor.catalog.etcdpb.LeaseGrantRequest;
import dev.csisupervisor.catalog.etcdpb.LeaseGrpc;
import dev.csisupervisor.catalog.etcdpb.LeaseKeepAliveRequest;
import dev.csisupervisor.catalog.etcdpb.LeaseKeepAliveResponse;
import dev.csisupervisor.catalog.etcdpb.LeaseRevokeRequest;
import dev.csisupervisor.catalog.etcdpb.LeaseTimeToLiveRequest;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RangeResponse;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import dev.csisupervisor.catalog.etcdpb.WatchGrpc;
import dev.csisupervisor.catalog.etcdpb.WatchRequest;
import dev.csisupervisor.catalog.etcdpb.WatchResponse;
import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.AbstractStub;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;

/**
 * A thin client of etcd's v3 gRPC API on the project's grpc-java: one channel at a time to one of the
 * endpoints ({@link #failover()} moves to the next), TLS and user/password authentication from
 * {@link EtcdOptions} (a token etcd has forgotten is replaced and the call made again), the request timeout as
 * the deadline of every unary call, streams (keep-alive, watch) that require the member to have a leader, and
 * {@link StatusRuntimeException} translated into {@link EtcdException} saying what failed and why. Its callers
 * notice a silent stream themselves. Thread-safe.
 */
final class EtcdClient implements AutoCloseable {
  private final java.util.concurrent.atomic.AtomicLong unaryCalls = new java.util.concurrent.atomic.AtomicLong();
  private static final Metadata.Key<String> TOKEN = Metadata.Key.of("token", Metadata.ASCII_STRING_MARSHALLER);
  /**
   * etcd's "require leader" flag (clientv3's WithRequireLeader): a member that has lost its leader (cut off from
   * the quorum) ends the stream with "no leader" instead of serving it from its own, frozen, state.
   */
  private static final Metadata.Key<String> REQUIRE_LEADER = Metadata.Key.of("hasleader", Metadata.ASCII_STRING_MARSHALLER);

  private final EtcdOptions options;
  private final Object lock = new Object();
  private int current;
  private ManagedChannel channel;
  private volatile String token;
  private boolean closed;

  EtcdClient(EtcdOptions options) {
    this.options = options;
  }

  EtcdOptions options() {
    return options;
  }

  /** The endpoint requests go to now. */
  URI endpoint() {
    synchronized (lock) {
      return options.endpoints().get(current);
    }
  }

  /** Drops the current connection and moves to the next endpoint (the same one if there is only one). */
  void failover() {
    ManagedChannel old;
    synchronized (lock) {
      old = channel;
      channel = null;
      token = null;
      current = (current + 1) % options.endpoints().size();
    }
    if (old != null) {
      old.shutdownNow();
    }
  }

  private ManagedChannel channel() {
    synchronized (lock) {
      if (closed) {
        throw new EtcdException("etcd client is closed", "CLOSED", null);
      }
      if (channel == null) {
        URI u = options.endpoints().get(current);
        channel = Grpc.newChannelBuilderForAddress(u.getHost(), u.getPort(), credentials())
            // Notice a silently dead connection (partition) within ~15 s; etcd's minimum is 5 s.
            .keepAliveTime(10, TimeUnit.SECONDS)
            .keepAliveTimeout(5, TimeUnit.SECONDS)
            .maxInboundMessageSize(64 << 20)
            .build();
      }
      return channel;
    }
  }

  private ChannelCredentials credentials() {
    if (!options.tls()) {
      return InsecureChannelCredentials.create();
    }
    try {
      TlsChannelCredentials.Builder b = TlsChannelCredentials.newBuilder();
      if (options.caFile() != null) {
        b.trustManager(options.caFile().toFile());
      }
      if (options.certFile() != null) {
        b.keyManager(options.certFile().toFile(), options.keyFile().toFile());
      }
      return b.build();
    } catch (IOException e) {
      throw new EtcdException("cannot read TLS files (caFile " + options.caFile() + ", certFile " + options.certFile()
          + ", keyFile " + options.keyFile() + "): " + e.getMessage(), "TLS_FILES", e);
    }
  }

  private <S extends AbstractStub<S>> S withAuth(S stub) {
    if (options.user() == null) {
      return stub;
    }
    return stub.withCallCredentials(new CallCredentials() {
      @Override
      public void applyRequestMetadata(RequestInfo info, Executor appExecutor, MetadataApplier applier) {
        appExecutor.execute(() -> {
          try {
            Metadata m = new Metadata();
            m.put(TOKEN, token());
            applier.apply(m);
          } catch (EtcdException e) {
            applier.fail(Status.UNAUTHENTICATED.withDescription(e.getMessage()).withCause(e));
          }
        });
      }
    });
  }

  private String token() {
    String t = token;
    if (t != null) {
      return t;
    }
    try {
      t = AuthGrpc.newBlockingStub(channel())
          .withDeadlineAfter(options.requestTimeout().toMillis(), TimeUnit.MILLISECONDS)
          .authenticate(AuthenticateRequest.newBuilder().setName(options.user()).setPassword(options.password()).build())
          .getToken();
    } catch (StatusRuntimeException e) {
      throw translate("authenticate as '" + options.user() + "'", e);
    }
    token = t;
    return t;
  }

  private long deadlineMillis() {
    return options.requestTimeout().toMillis();
  }

  /**
   * One unary call with the request timeout, translated. A token etcd no longer knows (it forgets one after
   * {@code --auth-token-ttl} of disuse, 5 min by default, and keep-alives do not use it) is replaced and the
   * call made once more: etcd checks the token before anything else, so the first attempt did nothing.
   */
  private <T> T call(String what, java.util.function.Function<ManagedChannel, T> rpc) {
    unaryCalls.incrementAndGet();
    for (int attempt = 1; ; attempt++) {
      try {
        return rpc.apply(channel());
      } catch (StatusRuntimeException e) {
        if (attempt == 1 && options.user() != null && invalidToken(e.getStatus())) {
          token = null;
          continue;
        }
        throw translate(what, e);
      }
    }
  }

  /**
   * etcd answers UNAUTHENTICATED only for a token it does not know (rpctypes.ErrGRPCInvalidAuthToken). Our own
   * credentials fail a call with UNAUTHENTICATED too, but carry the authenticate's {@link EtcdException} (a
   * wrong password): that one is not retried, a new token would fail the same way.
   */
  private static boolean invalidToken(Status s) {
    return s.getCode() == Status.Code.UNAUTHENTICATED && !(s.getCause() instanceof EtcdException);
  }

  private KVGrpc.KVBlockingStub kv(ManagedChannel c) {
    return withAuth(KVGrpc.newBlockingStub(c)).withDeadlineAfter(deadlineMillis(), TimeUnit.MILLISECONDS);
  }

  private LeaseGrpc.LeaseBlockingStub lease(ManagedChannel c) {
    return withAuth(LeaseGrpc.newBlockingStub(c)).withDeadlineAfter(deadlineMillis(), TimeUnit.MILLISECONDS);
  }

  /** Unary requests made (ranges, transactions, lease calls); streams (watches, keep-alives) are not counted. */
  long unaryCalls() {
    return unaryCalls.get();
  }

  RangeResponse range(RangeRequest request) {
    return call("range " + request.getKey().toStringUtf8(), c -> kv(c).range(request));
  }

  TxnResponse txn(TxnRequest request) {
    return call("txn of " + (request.getSuccessCount() + request.getFailureCount()) + " op(s)", c -> kv(c).txn(request));
  }

  /** Compacts the key-value history up to {@code revision} (used by tests and operators' tools). */
  void compact(long revision) {
    call("compact to revision " + revision,
        c -> kv(c).compact(CompactionRequest.newBuilder().setRevision(revision).setPhysical(true).build()));
  }

  /** Grants a lease of {@code ttlSeconds}; returns its id. */
  long grantLease(long ttlSeconds) {
    var r = call("lease grant (ttl " + ttlSeconds + " s)",
        c -> lease(c).leaseGrant(LeaseGrantRequest.newBuilder().setTTL(ttlSeconds).build()));
    if (!r.getError().isEmpty()) {
      throw new EtcdException("lease grant refused by " + endpoint() + ": " + r.getError(), "LEASE", null);
    }
    return r.getID();
  }

  /** The lease's remaining time to live in seconds, or -1 if it expired or never existed. */
  long leaseTimeToLive(long leaseId) {
    return call("lease time-to-live of " + Long.toHexString(leaseId),
        c -> lease(c).leaseTimeToLive(LeaseTimeToLiveRequest.newBuilder().setID(leaseId).build())).getTTL();
  }

  /** The keys attached to the lease, or null if it expired or never existed. */
  java.util.List<ByteString> leaseKeys(long leaseId) {
    var r = call("lease keys of " + Long.toHexString(leaseId),
        c -> lease(c).leaseTimeToLive(LeaseTimeToLiveRequest.newBuilder().setID(leaseId).setKeys(true).build()));
    return r.getTTL() <= 0 ? null : r.getKeysList();
  }

  /** Revokes the lease: etcd deletes every key attached to it. */
  void revokeLease(long leaseId) {
    try {
      call("lease revoke of " + Long.toHexString(leaseId),
          c -> lease(c).leaseRevoke(LeaseRevokeRequest.newBuilder().setID(leaseId).build()));
    } catch (EtcdException e) {
      if (!e.code().equals(Status.Code.NOT_FOUND.name())) {
        throw e;
      }
      // already gone
    }
  }

  /**
   * Opens a keep-alive stream to the current member, which must have a leader; responses and the stream's end
   * arrive on {@code responses}.
   */
  StreamObserver<LeaseKeepAliveRequest> keepAlive(StreamObserver<LeaseKeepAliveResponse> responses) {
    return requireLeader(withAuth(LeaseGrpc.newStub(channel()))).leaseKeepAlive(responses);
  }

  /**
   * Opens a watch stream to the current member, which must have a leader; responses and the stream's end
   * arrive on {@code responses}.
   */
  StreamObserver<WatchRequest> watch(StreamObserver<WatchResponse> responses) {
    return requireLeader(withAuth(WatchGrpc.newStub(channel()))).watch(responses);
  }

  private static <S extends AbstractStub<S>> S requireLeader(S stub) {
    Metadata m = new Metadata();
    m.put(REQUIRE_LEADER, "true");
    return stub.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(m));
  }

  /**
   * Ends a stream this client opened ({@link #watch}, {@link #keepAlive}) by cancelling its call: a half-closed
   * watch stream stays open on etcd's side, and {@link #close} then waits two seconds for the channel to end. The
   * stream's observer hears CANCELLED.
   */
  static void cancel(StreamObserver<?> stream, String why) {
    if (stream instanceof ClientCallStreamObserver<?> call) {
      call.cancel(why, null);
    } else {
      stream.onCompleted();
    }
  }

  /** Translates a failure of a streaming call (from {@code onError}). */
  EtcdException translate(String what, Throwable t) {
    Status s = Status.fromThrowable(t);
    if (s.getCode() == Status.Code.UNAUTHENTICATED
        || (s.getDescription() != null && s.getDescription().contains("invalid auth token"))) {
      token = null; // authenticate again on the next call
    }
    // The first line: gRPC appends its Netty pipeline to an "io exception" on the next. A deadline's own text
    // is a screen of gRPC internals: what matters is that the member did not answer in time.
    String why = s.getCode() == Status.Code.DEADLINE_EXCEEDED
        ? "no answer within " + options.requestTimeout().toMillis() + " ms"
        : s.getDescription() == null ? null : s.getDescription().lines().findFirst().orElse(null);
    String cause = null;
    for (Throwable c = s.getCause(); c != null; c = c.getCause()) {
      if (c instanceof EtcdException e) {
        // Authentication failed first (the call's credentials): that is the failure to report, once.
        return new EtcdException(e.getMessage() + " (before " + what + ")", e.code(), t);
      }
      if (c.getMessage() != null && !c.getMessage().isBlank() && !(c instanceof StatusRuntimeException)) {
        cause = c.getMessage();
      }
    }
    if (cause != null && (why == null || !why.contains(cause))) {
      // gRPC's "io exception" or "ssl exception" alone says neither that a certificate was refused nor why.
      why = (why == null ? "" : why + ": ") + cause + tlsHint(cause);
    }
    return new EtcdException("etcd " + endpoint() + ": " + what + " failed: " + s.getCode()
        + (why == null ? "" : " (" + why + ")"), s.getCode().name(), t);
  }

  /** What a TLS failure means for the operator, from the TLS library's words; "" if it is not one. */
  private static String tlsHint(String message) {
    String m = message.toUpperCase(java.util.Locale.ROOT);
    if (m.contains("BAD_CERTIFICATE") || m.contains("CERTIFICATE_REQUIRED") || m.contains("UNKNOWN_CA")
        || m.contains("CERTIFICATE_UNKNOWN")) {
      return "; etcd refused this client's certificate (cert_file/key_file, and the CA etcd trusts)";
    }
    if (m.contains("CERTIFICATION PATH") || m.contains("TRUST ANCHOR") || m.contains("PKIX")
        || m.contains("CERTIFICATE_VERIFY_FAILED")) {
      return "; etcd's certificate is not signed by a trusted CA (ca_file)";
    }
    return "";
  }

  static ByteString bytes(String s) {
    return ByteString.copyFrom(s, StandardCharsets.UTF_8);
  }

  /** The end of the range of every key starting with {@code prefix}. */
  static ByteString prefixEnd(ByteString prefix) {
    byte[] b = prefix.toByteArray();
    for (int i = b.length - 1; i >= 0; i--) {
      if (b[i] != (byte) 0xff) {
        b[i]++;
        return ByteString.copyFrom(b, 0, i + 1);
      }
    }
    return ByteString.copyFrom(new byte[] {0}); // every key
  }

  @Override
  public void close() {
    ManagedChannel c;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      c = channel;
      channel = null;
    }
    if (c != null) {
      c.shutdown();
      try {
        if (!c.awaitTermination(2, TimeUnit.SECONDS)) {
          c.shutdownNow();
        }
      } catch (InterruptedException e) {
        c.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
  }
}
