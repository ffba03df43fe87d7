package dev.csisupervisor.agent.commands;

import static java.util.Objects.requireNonNull;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

/**
 * Runs an action on a signal (SIGHUP: reload; SIGTERM, SIGINT: a clean stop that exits 0). The
 * JDK's only way to handle a signal is {@code sun.misc.Signal} (module jdk.unsupported); it is
 * reached reflectively so the build has no warning about it.
 *
 * <p>A signal that was ignored when the JVM started ({@code nohup} ignores SIGHUP; a shell runs
 * background jobs with SIGINT ignored) stays ignored: the JVM installs no handler for it, and the
 * action would never run. {@link #handle} says so instead of pretending.
 */
final class Signals {
  /** What {@link #handle} could do. */
  enum Outcome {
    /** The action runs on every delivery of the signal. */
    INSTALLED,
    /** The signal was ignored when this process started: it never reaches the action. */
    IGNORED,
    /** This JDK has no {@code sun.misc.Signal}, or refused the signal. */
    UNAVAILABLE
  }

  private Signals() {}

  /**
   * Installs {@code action} for signal {@code name} ("HUP", "TERM", "INT"); it runs on the JDK's
   * signal thread and must return quickly.
   */
  static Outcome handle(String name, Runnable action) {
    requireNonNull(name, "name");
    requireNonNull(action, "action");
    try {
      Class<?> signal = Class.forName("sun.misc.Signal");
      Class<?> handler = Class.forName("sun.misc.SignalHandler");
      Constructor<?> ctor = signal.getConstructor(String.class);
      Object sig = ctor.newInstance(name);
      Object proxy = Proxy.newProxyInstance(Signals.class.getClassLoader(),
          new Class<?>[] {handler}, (p, m, args) -> {
            switch (m.getName()) {
              case "handle" -> {
                action.run();
                return null;
              }
              case "toString" -> {
                return "csi-agent SIG" + name + " handler";
              }
              case "hashCode" -> {
                return System.identityHashCode(p);
              }
              case "equals" -> {
                return p == args[0];
              }
              default -> {
                return null;
              }
            }
          });
      Method handle = signal.getMethod("handle", signal, handler);
      Object previous = handle.invoke(null, sig, proxy);
      Object ignore = handler.getField("SIG_IGN").get(null);
      if (previous != null && previous.equals(ignore)) {
        // HotSpot leaves a HUP, INT or TERM ignored at start-up ignored and installs nothing.
        return Outcome.IGNORED;
      }
      return Outcome.INSTALLED;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return Outcome.UNAVAILABLE;
    }
  }
}
