package dev.csisupervisor.tasks.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProcessRecordsTest {
  @TempDir Path dir;
  private final Clock clock = Clock.fixed(Instant.parse("2026-01-02T03:04:05Z"), ZoneOffset.UTC);

  private static ProcessRecord rec(String id, long pid) {
    return new ProcessRecord(id, pid, 1234, List.of("/bin/" + id, "--x"), "/csi/" + id + ".sock");
  }

  @Test
  void putAndRemove_surviveReopen() throws Exception {
    Path f = dir.resolve("processes.json");
    ProcessRecords r = ProcessRecords.open(f, clock);
    assertTrue(r.all().isEmpty());
    r.put(rec("a", 10));
    r.put(rec("b", 11));
    r.remove("a");
    r.remove("never-there");

    ProcessRecords again = ProcessRecords.open(f, clock);
    assertEquals(Map.of("b", rec("b", 11)), again.all());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
    try (Stream<Path> files = Files.list(dir)) {
      assertEquals(List.of(f), files.toList(), "no temporary file left behind");
    }
  }

  @Test
  void corruptFile_isMovedAside_andStartsEmpty() throws Exception {
    Path f = dir.resolve("processes.json");
    Files.writeString(f, "{\"version\": 1, \"processes\": {\"a\": ");
    ProcessRecords r = ProcessRecords.open(f, clock);
    assertTrue(r.all().isEmpty());
    assertFalse(Files.exists(f));
    assertTrue(Files.exists(dir.resolve("processes.json.corrupt-20260102T030405.000Z")));
    r.put(rec("a", 10));
    assertEquals(1, ProcessRecords.open(f, clock).all().size());
  }

  @Test
  void unknownVersion_isTreatedAsCorrupt() throws Exception {
    Path f = dir.resolve("processes.json");
    Files.writeString(f, "{\"version\": 9, \"processes\": {}}");
    assertTrue(ProcessRecords.open(f, clock).all().isEmpty());
    assertFalse(Files.exists(f));
  }

  @Test
  void removeOfAnOlderProcess_keepsTheNewerRecordOfTheSameId() throws Exception {
    Path f = dir.resolve("processes.json");
    ProcessRecords r = ProcessRecords.open(f, java.time.Clock.systemUTC());
    r.put(new ProcessRecord("ebs", 100, 1, java.util.List.of("/bin/ebs"), "/s"));
    // Removed from the config and added back: the new task's process is recorded...
    r.put(new ProcessRecord("ebs", 200, 2, java.util.List.of("/bin/ebs"), "/s"));
    // ...then the old task's stop completes: it must not take the new record with it.
    r.remove("ebs", 100);
    assertEquals(200, r.get("ebs").orElseThrow().pid());
    assertEquals(200, ProcessRecords.open(f, java.time.Clock.systemUTC()).get("ebs")
        .orElseThrow().pid());
    r.remove("ebs", 200);
    assertTrue(r.get("ebs").isEmpty());
  }
}
