package dev.csisupervisor.agent.cli;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

/**
 * Runs an action on SIGHUP. The JDK's only way to handle a signal is {@code sun.misc.Signal}
 * (module jdk.unsupported); it is reached reflectively so the build has no warning about it, and
 * where it is missing the agent simply has no SIGHUP reload.
 */
final class Hangup {
  private Hangup() {}

  /**
   * Installs {@code action} (run on the JDK's signal thread: it must return quickly).
   *
   * @return whether it could be installed
   */
  static boolean onHangup(Runnable action) {
    try {
      Class<?> signal = Class.forName("sun.misc.Signal");
      Class<?> handler = Class.forName("sun.misc.SignalHandler");
      Constructor<?> ctor = signal.getConstructor(String.class);
      Object hup = ctor.newInstance("HUP");
      Object proxy = Proxy.newProxyInstance(Hangup.class.getClassLoader(),
          new Class<?>[] {handler}, (p, m, args) -> {
            if (m.getName().equals("handle")) {
              action.run();
              return null;
            }
            if (m.getName().equals("toString")) {
              return "csi-agent SIGHUP handler";
            }
            if (m.getName().equals("hashCode")) {
              return System.identityHashCode(p);
            }
            if (m.getName().equals("equals")) {
              return p == args[0];
            }
            return null;
          });
      Method handle = signal.getMethod("handle", signal, handler);
      handle.invoke(null, hup, proxy);
      return true;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return false;
    }
  }
}
