package dev.csisupervisor.agent.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeInstanceTest {
  @TempDir Path tmp;

  @Test
  void madeOnce_theSameAcrossLoads_otherInAnotherDataDir() throws Exception {
    Path data = tmp.resolve("data");
    String token = NodeInstance.load(data);
    assertTrue(token.matches("[0-9a-f-]{36}"), token);
    assertEquals(token, NodeInstance.load(data));
    assertEquals(token + "\n", Files.readString(data.resolve(NodeInstance.FILE)));
    assertNotEquals(token, NodeInstance.load(tmp.resolve("other")));
  }

  @Test
  void aTornFile_isMadeAgain() throws Exception {
    Path data = Files.createDirectories(tmp.resolve("data"));
    Files.writeString(data.resolve(NodeInstance.FILE), "3f2a");
    String token = NodeInstance.load(data);
    assertTrue(token.matches("[0-9a-f-]{36}"), token);
    assertEquals(token, NodeInstance.load(data));
  }
}
