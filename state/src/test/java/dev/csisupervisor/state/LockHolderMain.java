package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Child-JVM helper for {@link JournalStateStoreTest}: opens the store in {@code args[0]}, prints {@code LOCKED}
 * and holds it until its stdin closes (or it is killed).
 */
public final class LockHolderMain {
  private LockHolderMain() {}

  public static void main(String[] args) throws IOException {
    try (JournalStateStore store = JournalStateStore.open(Path.of(args[0]))) {
      store.put("held-by", ("pid " + ProcessHandle.current().pid()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      System.out.println("LOCKED");
      System.out.flush();
      while (System.in.read() != -1) {
        // wait for the parent to close our stdin
      }
    }
  }
}
