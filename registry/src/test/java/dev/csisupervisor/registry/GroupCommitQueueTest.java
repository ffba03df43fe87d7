package dev.csisupervisor.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The group commit queue on its own, where the registry cannot reach: a committer that throws or forgets. */
class GroupCommitQueueTest {
  private static final class Req extends GroupCommit.Request<String> {
    final String name;

    Req(String name) {
      this.name = name;
    }

    @Override
    String result() {
      return "done " + name;
    }
  }

  private final List<List<String>> batches = new ArrayList<>();
  private Function<List<Req>, Runnable> behaviour;
  private final GroupCommit<Req> queue = new GroupCommit<>(batch -> behaviour.apply(batch));

  private Runnable commitAll(List<Req> batch) {
    batches.add(batch.stream().map(r -> r.name).toList());
    batch.forEach(GroupCommit.Request::succeed);
    return () -> { };
  }

  @Test
  void aCommitterThatThrows_failsItsRequestWithThat_rethrows_andTheQueueGoesOn() {
    IllegalStateException bug = new IllegalStateException("bug in commitBatch");
    behaviour = batch -> {
      throw bug;
    };
    Req first = new Req("a");
    assertSame(bug, assertThrows(IllegalStateException.class, () -> queue.submit(first)));
    assertSame(bug, assertThrows(IllegalStateException.class, first::get), "its caller learns the outcome");

    behaviour = this::commitAll;
    Req second = new Req("b");
    queue.submit(second);
    assertEquals("done b", second.get());
    assertEquals(List.of(List.of("b")), batches, "the failed batch is not committed again");
  }

  @Test
  void aCommitterThatGivesNoOutcome_failsTheRequestAsAnInternalError() {
    behaviour = batch -> () -> { };
    Req r = new Req("a");
    queue.submit(r);
    IllegalStateException e = assertThrows(IllegalStateException.class, r::get);
    assertEquals("internal error: request finished without an outcome", e.getMessage());
  }

  @Test
  void failQueued_withNothingInFlight_failsWhatIsQueuedOnly() {
    behaviour = this::commitAll;
    queue.failQueued(new IllegalStateException("closed"));
    Req r = new Req("after");
    queue.submit(r);
    assertEquals("done after", r.get(), "a request after failQueued is committed (the owner refuses new ones)");
  }
}
