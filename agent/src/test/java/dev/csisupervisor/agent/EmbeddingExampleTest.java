package dev.csisupervisor.agent;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PrestartResponse;
import java.io.IOException;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's "Embedding the library in a Java scheduler" example, read from {@code README.md} at
 * test time, compiled against this module's test classpath, and run against a mock plugin: the
 * README cannot drift from the API. The block's free variables ({@code dataDir}, {@code allocId},
 * {@code taskEnv}, {@code taskRunner}, {@code liveAllocIds}) become parameters; its two
 * placeholders for the caller's own code ("start the task", "when the task stops") become calls
 * back into this test, which starts the plugin and checks the registration. Public, with public
 * callbacks: the compiled example lives in another class loader and package.
 */
public class EmbeddingExampleTest {
  static final String HEADING = "## Embedding the library in a Java scheduler";
  static final String START_TASK = "// ... start the task with pre.mounts() and pre.env() ...";
  static final String TASK_STOPS = "// ... when the task stops:";

  /** The README's {@code taskRunner}: the scheduler's own task runner. */
  public interface TaskRunner {
    void restartLater(String allocId, String reason);
  }

  /** What the README leaves to the caller, at its placeholders, and the end of the example. */
  public interface Steps {
    void startTask(CsiPluginSupervisorHook hook, PrestartResponse pre) throws Exception;

    void taskStops(PluginRegistry registry) throws Exception;

    void finished(PluginRegistry registry) throws Exception;
  }

  @TempDir Path dir;

  @Test
  void readmeExample_compilesAndRegistersAndDeregisters() throws Throwable {
    Path classes = compile(readmeBlock(readme()));

    String allocId = "alloc-1";
    List<String> restarts = new CopyOnWriteArrayList<>();
    List<PluginEvent> seen = new CopyOnWriteArrayList<>();
    List<MockCsiPlugin> plugins = new ArrayList<>();
    Steps steps = new Steps() {
      @Override
      public void startTask(CsiPluginSupervisorHook hook, PrestartResponse pre) throws Exception {
        assertTrue(pre.env().containsKey("CSI_ENDPOINT"), pre.env().toString());
        plugins.add(MockCsiPlugin.builder().socket(hook.socketPath()).mode(MockMode.NODE)
            .name("ebs.csi.dev").build().start());
      }

      @Override
      public void taskStops(PluginRegistry registry) {
        registry.subscribe(PluginType.CSI_NODE, seen::add, Runnable::run);
        await().atMost(Duration.ofSeconds(30))
            .until(() -> registry.find(PluginType.CSI_NODE, "ebs").isPresent());
        assertEquals(allocId, registry.find(PluginType.CSI_NODE, "ebs").orElseThrow().allocId());
      }

      @Override
      public void finished(PluginRegistry registry) {
        assertTrue(registry.find(PluginType.CSI_NODE, "ebs").isEmpty(), "deregistered by stop()");
        // stop() returns once the deregistration is durable; its event may come a moment later.
        await().atMost(Duration.ofSeconds(30)).until(() -> seen.stream().anyMatch(
            e -> e.kind() == PluginEvent.Kind.DEREGISTERED && e.plugin().name().equals("ebs")));
      }
    };
    try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()},
        getClass().getClassLoader())) {
      Method run = loader.loadClass("readme.Example").getMethod("run", Path.class, String.class,
          Map.class, TaskRunner.class, Set.class, Steps.class);
      TaskRunner taskRunner = (a, reason) -> restarts.add(reason);
      run.invoke(null, dir, allocId, Map.of(), taskRunner, Set.of(allocId), steps);
    } catch (InvocationTargetException e) {
      throw e.getCause(); // the example's own failure, or one of the checks above
    } finally {
      for (MockCsiPlugin p : plugins) {
        p.close();
      }
    }
    assertEquals(List.of(), restarts, "a healthy plugin is never restarted");
  }

  /** README.md of the repository: the module runs in {@code agent/}, the README is one level up. */
  static Path readme() {
    Path moduleDir = Path.of(System.getProperty("basedir", System.getProperty("user.dir")))
        .toAbsolutePath();
    for (Path d = moduleDir; d != null; d = d.getParent()) {
      if (Files.isRegularFile(d.resolve("README.md"))
          && Files.isRegularFile(d.resolve("agent/pom.xml"))) {
        return d.resolve("README.md");
      }
    }
    return fail("no README.md beside agent/ above " + moduleDir);
  }

  /** The README's example: its code, and the README line its first line is on. */
  record Block(int firstLine, String code) {}

  /** The first ```java block after the embedding heading, with the placeholders made into calls. */
  static Block readmeBlock(Path readme) throws IOException {
    List<String> lines = Files.readAllLines(readme, StandardCharsets.UTF_8);
    int heading = lines.indexOf(HEADING);
    if (heading < 0) {
      fail(readme + " has no heading '" + HEADING
          + "': the embedding example is gone or was renamed");
    }
    int start = -1;
    for (int i = heading + 1; i < lines.size() && start < 0; i++) {
      if (lines.get(i).startsWith("## ")) {
        break;
      }
      if (lines.get(i).trim().equals("```java")) {
        start = i + 1;
      }
    }
    if (start < 0) {
      fail(readme + ": no ```java block under '" + HEADING + "'");
    }
    int end = start;
    while (end < lines.size() && !lines.get(end).trim().equals("```")) {
      end++;
    }
    if (end == lines.size()) {
      fail(readme + ": the ```java block under '" + HEADING + "' (line " + start
          + ") is not closed");
    }
    StringBuilder block = new StringBuilder();
    boolean startsTask = false;
    boolean stopsTask = false;
    for (int i = start; i < end; i++) {
      String line = lines.get(i);
      // One source line per README line, so that a compile error names the README's own line.
      if (line.trim().equals(START_TASK)) {
        line = "steps.startTask(hook, pre);";
        startsTask = true;
      } else if (line.trim().equals(TASK_STOPS)) {
        line = "steps.taskStops(registry);";
        stopsTask = true;
      }
      block.append(line).append('\n');
    }
    if (!startsTask || !stopsTask) {
      fail(readme + ": the embedding example lost its placeholder line '"
          + (startsTask ? TASK_STOPS : START_TASK)
          + "', where this test starts the plugin and checks the registration");
    }
    return new Block(start + 1, block.toString());
  }

  /** The block as the body of {@code readme.Example.run(...)}, compiled into a new directory. */
  private Path compile(Block block) throws IOException {
    String header = String.join(" ",
        "package readme;",
        "import dev.csisupervisor.agent.EmbeddingExampleTest.Steps;",
        "import dev.csisupervisor.agent.EmbeddingExampleTest.TaskRunner;",
        "import dev.csisupervisor.client.*; import dev.csisupervisor.registry.*;",
        "import dev.csisupervisor.state.*; import dev.csisupervisor.supervisor.*;",
        "import java.nio.file.*; import java.time.*; import java.util.*;",
        "import java.util.concurrent.*;",
        "public final class Example {",
        "public static void run(Path dataDir, String allocId, Map<String, String> taskEnv,",
        "TaskRunner taskRunner, Set<String> liveAllocIds, Steps steps) throws Exception {");
    // The header is padded to the README line before the block: diagnostics name README lines.
    String source = header + "\n".repeat(block.firstLine() - 1) + block.code()
        + "steps.finished(registry);\n"
        + "sub.close(); supervisor.close(); registry.close(); store.close();"
        + " scheduler.shutdownNow();\n}}\n";
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    if (javac == null) {
      fail("no Java compiler in this runtime (a JRE?): cannot check the README's example");
    }
    Path out = Files.createDirectories(dir.resolve("classes"));
    String classpath = System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path"));
    JavaFileObject file = new SimpleJavaFileObject(URI.create("string:///README.md"),
        JavaFileObject.Kind.SOURCE) {
      @Override
      public CharSequence getCharContent(boolean ignoreEncodingErrors) {
        return source;
      }

      @Override
      public boolean isNameCompatible(String simpleName, JavaFileObject.Kind kind) {
        return true; // the README is not named Example.java
      }
    };
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    StringWriter output = new StringWriter();
    boolean ok = javac.getTask(output, null, diagnostics,
        List.of("-classpath", classpath, "-d", out.toString(), "--release", "17", "-proc:none"),
        null, List.of(file)).call();
    if (!ok) {
      StringBuilder why = new StringBuilder("the README's embedding example does not compile:\n");
      diagnostics.getDiagnostics().forEach(d -> why.append("  README.md:")
          .append(d.getLineNumber()).append(": ").append(d.getMessage(null)).append('\n'));
      fail(why.append(output).toString());
    }
    return out;
  }
}
