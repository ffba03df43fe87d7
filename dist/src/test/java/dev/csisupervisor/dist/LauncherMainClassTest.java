package dev.csisupervisor.dist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The installed launcher starts the jar's main class by name ({@code -cp JAR MAIN}, not {@code -jar}, which reads
 * the jar's manifest twice before main): the class it names must be the one the jar's manifest names.
 */
class LauncherMainClassTest {
  @Test
  void theLauncher_startsTheMainClassTheJarsManifestNames() throws Exception {
    Matcher manifest = Pattern.compile("<mainClass>([^<]+)</mainClass>")
        .matcher(Files.readString(Path.of("..", "agent", "pom.xml")));
    assertTrue(manifest.find(), "no <mainClass> in agent/pom.xml");
    String launcher = Files.readString(Path.of("src", "bin", "csi-agent"));
    Matcher exec = Pattern.compile("\nexec \"\\$JAVA\" .* -cp \"\\$JAR\" (\\S+) \"\\$@\"\n").matcher(launcher);
    assertTrue(exec.find(), "the launcher's exec line is not `exec \"$JAVA\" ... -cp \"$JAR\" MAIN \"$@\"`");
    assertEquals(manifest.group(1), exec.group(1));
  }
}
