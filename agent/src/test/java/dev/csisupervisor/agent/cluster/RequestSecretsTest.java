package dev.csisupervisor.agent.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.Secrets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 35 (9): the controller agent reads secrets files only under {@code cluster.secrets_dir}. */
class RequestSecretsTest {
  @TempDir Path tmp;

  private Path secretsFile(Path dir, String name) throws Exception {
    Files.createDirectories(dir);
    return Files.writeString(dir.resolve(name), "token=s3cret\n");
  }

  private String refusal(Path dir, Path file) {
    return assertThrows(RequestSecrets.Unreadable.class,
        () -> new RequestSecrets("n1", Optional.of(dir)).read("ebs", Optional.of(file))).getMessage();
  }

  @Test
  void aFileUnderTheDirectory_isRead() throws Exception {
    Path dir = tmp.resolve("secrets");
    Path f = secretsFile(dir, "ebs.yaml");
    assertEquals(Secrets.of(Map.of("token", "s3cret")), new RequestSecrets("n1", Optional.of(dir)).read("ebs", Optional.of(f)));
  }

  @Test
  void aFileOutsideTheDirectory_isRefused_namingTheSetting_andNoValue() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("secrets"));
    String m = refusal(dir, secretsFile(tmp.resolve("etc"), "shadow"));
    assertTrue(m.contains("is not under cluster.secrets_dir " + dir + " of controller agent n1"), m);
    assertFalse(m.contains("s3cret"), m);
  }

  @Test
  void aSymlinkInTheDirectory_toAFileOutside_isRefused() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("secrets"));
    Path elsewhere = secretsFile(tmp.resolve("etc"), "shadow");
    String m = refusal(dir, Files.createSymbolicLink(dir.resolve("link"), elsewhere));
    assertTrue(m.contains("(" + elsewhere.toRealPath() + ") is not under cluster.secrets_dir"), m);
  }

  @Test
  void aDotDotPath_outOfTheDirectory_isRefused() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("secrets"));
    secretsFile(tmp.resolve("etc"), "shadow");
    String m = refusal(dir, dir.resolve("../etc/shadow"));
    assertTrue(m.contains("is not under cluster.secrets_dir"), m);
  }

  @Test
  void aMissingFile_namesThePathAndWhoNeedsIt() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("secrets"));
    String m = refusal(dir, dir.resolve("no"));
    assertTrue(m.contains("the secrets file " + dir.resolve("no") + " cannot be read on controller agent n1"), m);
    assertTrue(m.contains("controller agent of ebs"), m);
  }

  @Test
  void noFile_noSecrets() throws Exception {
    assertEquals(Secrets.none(), new RequestSecrets("n1", Optional.empty()).read("ebs", Optional.empty()));
  }

  @Test
  void aRelativeDirectory_isRefused() {
    assertThrows(IllegalArgumentException.class, () -> new RequestSecrets("n1", Optional.of(Path.of("secrets"))));
  }
}
