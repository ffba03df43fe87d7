package dev.csisupervisor.state;

/**
 * MapDB (its Kotlin code) reads the calling thread's context class loader and fails with a
 * NullPointerException where there is none: threads started from a signal handler, from native
 * code, or by a thread factory that cleared it. Around every MapDB call the store makes sure there
 * is one (this module's own loader), and clears it again afterwards:
 * {@code ContextClassLoader loader = ensure(); try { ... } finally { loader.restore(); }}.
 */
final class ContextClassLoader {
  private final boolean set;

  private ContextClassLoader(boolean set) {
    this.set = set;
  }

  /** Gives the current thread this module's class loader if it has none; {@link #restore} undoes it. */
  static ContextClassLoader ensure() {
    Thread t = Thread.currentThread();
    if (t.getContextClassLoader() != null) {
      return new ContextClassLoader(false);
    }
    t.setContextClassLoader(ContextClassLoader.class.getClassLoader());
    return new ContextClassLoader(true);
  }

  void restore() {
    if (set) {
      Thread.currentThread().setContextClassLoader(null);
    }
  }
}
