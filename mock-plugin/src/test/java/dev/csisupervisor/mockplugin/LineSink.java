package dev.csisupervisor.mockplugin;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** A PrintStream whose lines a test takes one by one, with a timeout. */
final class LineSink {
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private final PrintStream stream;

  LineSink() {
    OutputStream out = new OutputStream() {
      private final ByteArrayOutputStream line = new ByteArrayOutputStream();

      @Override
      public synchronized void write(int b) {
        if (b == '\n') {
          lines.add(line.toString(StandardCharsets.UTF_8));
          line.reset();
        } else {
          line.write(b);
        }
      }
    };
    stream = new PrintStream(out, true, StandardCharsets.UTF_8);
  }

  PrintStream stream() {
    return stream;
  }

  String next(Duration timeout) throws InterruptedException {
    String line = lines.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (line == null) {
      throw new AssertionError("no output line within " + timeout);
    }
    return line;
  }
}
