package dev.csisupervisor.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.etcdpb.WatchRequest;
import dev.csisupervisor.catalog.etcdpb.WatchResponse;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** Issue 35 (10): the watch keeps at most one stream open whatever fails while opening it. */
class SingleWatchTest {
  /** A stream the fake opened: open until cancelled or failed. */
  private final class Stream implements StreamObserver<WatchRequest> {
    final StreamObserver<WatchResponse> responses;
    boolean open = true;
    int creates;

    Stream(StreamObserver<WatchResponse> responses) {
      this.responses = responses;
    }

    @Override
    public void onNext(WatchRequest r) {
      creates++;
      onCreate.accept(this);
    }

    @Override
    public void onError(Throwable t) {
      open = false;
    }

    @Override
    public void onCompleted() {
      open = false;
    }

    void fail() {
      open = false;
      responses.onError(Status.UNAVAILABLE.asRuntimeException());
    }
  }

  private final List<Stream> streams = new ArrayList<>();
  private final Deque<Runnable> reopens = new ArrayDeque<>();
  private final AtomicInteger hints = new AtomicInteger();
  private int failOpens;
  private Consumer<Stream> onCreate = s -> { };

  private int failLists;
  private int downs;
  private String restartOn;

  private final SingleWatch.Handler handler = new SingleWatch.Handler() {
    @Override
    public List<dev.csisupervisor.catalog.etcdpb.WatchCreateRequest> creates() {
      if (failLists > 0) {
        failLists--;
        throw new EtcdException("list failed", "UNAVAILABLE", null);
      }
      return List.of(SingleWatch.prefix("/p/claims/", 0), SingleWatch.prefix("/p/attachments/", 0));
    }

    @Override
    public String onResponse(WatchResponse r) {
      if (r.getEventsCount() > 0) {
        hints.incrementAndGet();
      }
      return r.getCanceled() ? restartOn : null;
    }

    @Override
    public void onDown() {
      downs++;
    }

    @Override
    public void onReopened() {
      hints.incrementAndGet();
    }
  };

  private final SingleWatch.Watcher watcher = new SingleWatch.Watcher() {
    @Override
    public StreamObserver<WatchRequest> watch(StreamObserver<WatchResponse> responses) {
      if (failOpens > 0) {
        failOpens--;
        throw new IllegalStateException("channel shut down");
      }
      Stream s = new Stream(responses);
      streams.add(s);
      return s;
    }

    @Override
    public void failover() {}

    @Override
    public String describe(Throwable t) {
      return t.toString();
    }

    @Override
    public void cancel(StreamObserver<WatchRequest> stream, String why) {
      ((Stream) stream).open = false;
    }
  };

  private SingleWatch hints() {
    return new SingleWatch(watcher, "/p/", handler, reopens::add);
  }

  private long open() {
    return streams.stream().filter(s -> s.open).count();
  }

  private void runReopens() {
    while (!reopens.isEmpty()) {
      reopens.poll().run();
      assertTrue(open() <= 1, "streams open: " + open());
    }
  }

  @Test
  void theOpenThrowing_leavesNoStream_andOneReopen() {
    failOpens = 2;
    SingleWatch h = hints().open();
    assertEquals(0, open());
    assertEquals(1, reopens.size());
    reopens.poll().run(); // fails again: one more reopen, still none open
    assertEquals(1, reopens.size());
    runReopens();
    assertEquals(1, open());
    assertTrue(h.isOpen());
    assertEquals(1, hints.get(), "one hint once it is back: changes may have been missed");
  }

  @Test
  void aCreateRequestRefused_cancelsTheHalfMadeStream() {
    onCreate = s -> {
      if (streams.size() == 1 && s.creates == 2) {
        throw new IllegalStateException("call was cancelled");
      }
    };
    SingleWatch h = hints().open();
    assertEquals(0, open(), "the half-made stream is cancelled");
    assertEquals(1, reopens.size());
    runReopens();
    assertEquals(1, open());
    assertTrue(h.isOpen());
  }

  @Test
  void theStreamFailingWhileBeingOpened_andTheOpenThrowingToo_makeOneReopen() {
    onCreate = s -> {
      if (streams.size() == 1 && s.creates == 1) {
        s.fail(); // etcd answers the first create with an error at once
        throw new IllegalStateException("half-closed");
      }
    };
    hints().open();
    assertEquals(0, open());
    assertEquals(1, reopens.size(), "one reopen, not one per failure");
    runReopens();
    assertEquals(1, open());
  }

  @Test
  void theStreamFailingWhileBeingOpened_withoutAThrow_isNotKept() {
    onCreate = s -> {
      if (streams.size() == 1 && s.creates == 2) {
        s.fail();
      }
    };
    SingleWatch h = hints().open();
    assertFalse(h.isOpen());
    assertEquals(1, reopens.size());
    runReopens();
    assertEquals(1, open());
    assertEquals(2, streams.size());
  }

  @Test
  void anOpenStreamFailingTwice_makesOneReopen() {
    SingleWatch h = hints().open();
    Stream first = streams.get(0);
    first.fail();
    first.responses.onCompleted();
    assertEquals(1, reopens.size());
    runReopens();
    assertEquals(1, open());
    assertTrue(h.isOpen());
  }

  @Test
  void closedWhileAReopenIsPending_opensNothing() {
    failOpens = 1;
    SingleWatch h = hints().open();
    h.close();
    runReopens();
    assertEquals(0, open());
    assertEquals(0, streams.size());
  }

  @Test
  void events_giveHints_emptyAnswersDoNot() {
    hints().open();
    streams.get(0).responses.onNext(WatchResponse.newBuilder().setCreated(true).build());
    assertEquals(0, hints.get());
    streams.get(0).responses.onNext(WatchResponse.newBuilder()
        .addEvents(dev.csisupervisor.catalog.etcdpb.Event.getDefaultInstance()).build());
    assertEquals(1, hints.get());
  }

  @Override
  public String toString() {
    return "streams " + streams.size() + ", downs " + downs;
  }

  @Test
  void thePreparationFailing_opensNoStream_andIsTriedAgain() {
    failLists = 1;
    SingleWatch h = hints().open();
    assertEquals(0, streams.size());
    assertEquals(1, downs);
    runReopens();
    assertTrue(h.isOpen());
    assertEquals(1, open());
  }

  @Test
  void theHandlerAskingForARestart_endsTheStream_andOpensANewOne() {
    restartOn = "etcd compacted past the watch";
    SingleWatch h = hints().open();
    streams.get(0).responses.onNext(WatchResponse.newBuilder().setCanceled(true).build());
    assertEquals(0, open(), "the old stream is cancelled");
    assertEquals(1, downs);
    runReopens();
    assertEquals(1, open());
    assertEquals(2, streams.size());
    assertTrue(h.isOpen());
    // A late response of the old stream reaches nobody.
    streams.get(0).responses.onNext(WatchResponse.newBuilder()
        .addEvents(dev.csisupervisor.catalog.etcdpb.Event.getDefaultInstance()).build());
    assertEquals(1, hints.get(), "only the reopen's hint");
  }
}
