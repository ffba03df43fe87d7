package dev.csisupervisor.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.URI;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Which failures of a call move the cluster volumes' client to the next endpoint. No etcd: nothing connects. */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class EtcdOpsFailoverTest {
  private final EtcdClient client = new EtcdClient(EtcdOptions.of("http://127.0.0.1:1",
      "http://127.0.0.1:2", "http://127.0.0.1:3"));
  private final EtcdOps ops = new EtcdOps(client, CatalogKeys.of("/t"));

  @AfterEach
  void close() {
    client.close();
  }

  @Test
  void anAnswerOfTheCluster_isThrownAtOnce_onTheSameEndpoint() {
    for (String code : List.of("PERMISSION_DENIED", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND",
        "OUT_OF_RANGE", "ALREADY_EXISTS", "RESOURCE_EXHAUSTED", "UNAUTHENTICATED", "UNIMPLEMENTED")) {
      URI before = client.endpoint();
      AtomicInteger tries = new AtomicInteger();
      EtcdException answer = new EtcdException("etcdserver: " + code, code, null);
      EtcdException thrown = assertThrows(EtcdException.class, () -> ops.call(() -> {
        tries.incrementAndGet();
        throw answer;
      }));
      assertSame(answer, thrown);
      assertEquals(1, tries.get(), code + ": tried once");
      assertEquals(before, client.endpoint(), code + ": no failover (it would cut the lease's keep-alive)");
    }
  }

  @Test
  void noAnswer_triesEveryEndpointOnce_thenThrowsTheFirst() {
    for (String code : List.of("UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL", "UNKNOWN", "CONTENTION")) {
      URI before = client.endpoint();
      AtomicInteger tries = new AtomicInteger();
      EtcdException thrown = assertThrows(EtcdException.class, () -> ops.call(() -> {
        throw new EtcdException("try " + tries.incrementAndGet(), code, null);
      }));
      assertEquals("try 1", thrown.getMessage(), code);
      assertEquals(2, thrown.getSuppressed().length, code);
      assertEquals(3, tries.get(), code + ": every endpoint once");
      assertEquals(before, client.endpoint(), code + ": three failovers over three endpoints: back where it was");
    }
  }

  @Test
  void aClosedClient_isNotRetried() {
    AtomicInteger tries = new AtomicInteger();
    assertThrows(EtcdException.class, () -> ops.call(() -> {
      tries.incrementAndGet();
      throw new EtcdException("etcd client is closed", "CLOSED", null);
    }));
    assertEquals(1, tries.get());
  }
}
