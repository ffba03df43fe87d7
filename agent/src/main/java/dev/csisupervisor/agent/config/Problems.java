package dev.csisupervisor.agent.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The vocabulary the config's rules are written in: every problem found, in the order the rules
 * declare them, and the {@link Checked} values the rules are stated on.
 *
 * <p>A rule never stops the others: a value that breaks one is reported (its field, then what
 * is wrong) and then stands for its default, so that one reading of the file reports every
 * problem at once. Not thread-safe: one per config read.
 */
final class Problems {
  private final List<String> problems = new ArrayList<>();
  private final Path baseDir;

  /** @param baseDir what relative paths resolve against: the config file's directory */
  Problems(Path baseDir, List<String> earlier) {
    this.baseDir = baseDir;
    problems.addAll(earlier);
  }

  /** Reports {@code field: problem}. */
  void add(String field, String problem) {
    problems.add(field + ": " + problem);
  }

  /** The config file's directory, what relative paths resolve against. */
  Path baseDir() {
    return baseDir;
  }

  List<String> all() {
    return problems;
  }

  boolean none() {
    return problems.isEmpty();
  }

  /** How many problems so far: compare with a later count to see whether a part had any. */
  int count() {
    return problems.size();
  }

  // ---- values ------------------------------------------------------------------------------

  /** A value written as is. */
  <T> Checked<T> value(String field, T written) {
    return new Checked<>(this, field, written, written);
  }

  /** A value parsed by {@code parser}; its {@link IllegalArgumentException} is the problem. */
  <T> Checked<T> parsed(String field, String written, Function<String, T> parser) {
    if (written == null) {
      return new Checked<>(this, field, null, null);
    }
    try {
      return new Checked<>(this, field, written, parser.apply(written));
    } catch (IllegalArgumentException e) {
      add(field, e.getMessage());
      return Checked.failed(this, field, written);
    }
  }

  /** A duration: {@code 500ms}, {@code 30s}, {@code 1m30s}. */
  Checked<Duration> duration(String field, String written) {
    return parsed(field, written, Units::duration);
  }

  /** A byte size: {@code 512KiB}, {@code 10MiB}. */
  Checked<Long> size(String field, String written) {
    return parsed(field, written, dev.csisupervisor.common.ByteSizes::parse);
  }

  /** A path; a relative one resolves against the config file's directory. */
  Checked<Path> path(String field, String written) {
    return parsed(field, written, this::resolve);
  }

  private Path resolve(String value) {
    if (value.isBlank()) {
      throw new IllegalArgumentException("must not be empty");
    }
    if (value.indexOf('\0') >= 0) {
      throw new IllegalArgumentException("contains a NUL character");
    }
    try {
      return baseDir.resolve(value).normalize();
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("\"" + value + "\" is not a valid path: "
          + e.getMessage());
    }
  }

  /**
   * One of a few words, case-insensitive; anything else is {@code "<written>" <isNot>}, e.g.
   * {@code is not a restart mode (use delay or fail)}.
   */
  <T> Checked<T> oneOf(String field, String written, Map<String, T> words, String isNot) {
    return parsed(field, written, w -> {
      T v = words.get(w.strip().toLowerCase(Locale.ROOT));
      if (v == null) {
        throw new IllegalArgumentException("\"" + w + "\" " + isNot);
      }
      return v;
    });
  }

  /** A field that must be left out: reported with {@code problem} if it is written. */
  void absent(String field, Object written, String problem) {
    if (written != null) {
      add(field, problem);
    }
  }

  /**
   * A value of a config file, checked rule by rule. Absent (not written) is not a problem unless
   * {@link #required}; a value that broke a rule has no value any more, and later rules on it
   * are skipped.
   */
  static final class Checked<T> {
    private final Problems problems;
    private final String field;
    private final Object written;
    private T value;
    private boolean failed;

    private Checked(Problems problems, String field, Object written, T value) {
      this.problems = problems;
      this.field = field;
      this.written = written;
      this.value = value;
    }

    private static <T> Checked<T> failed(Problems problems, String field, Object written) {
      Checked<T> c = new Checked<>(problems, field, written, null);
      c.failed = true;
      return c;
    }

    /** Must be written; else {@code missing (<hint>)}. */
    Checked<T> required(String hint) {
      if (written == null && !failed) {
        problems.add(field, "missing (" + hint + ")");
        failed = true;
      }
      return this;
    }

    /** Must satisfy {@code rule}; else {@code problem}. */
    Checked<T> check(Predicate<? super T> rule, String problem) {
      return check(rule, v -> problem);
    }

    /** Must satisfy {@code rule}; else the problem {@code problem} describes for the value. */
    Checked<T> check(Predicate<? super T> rule, Function<? super T, String> problem) {
      if (value != null && !rule.test(value)) {
        problems.add(field, problem.apply(value));
        value = null;
        failed = true;
      }
      return this;
    }

    /** A duration must not be 0; else {@code must be greater than 0}. */
    Checked<T> positive() {
      return check(v -> !(v instanceof Duration d && d.isZero()), "must be greater than 0");
    }

    /** An integer must be {@code min} or more; else {@code must be >= min, got <value>}. */
    Checked<T> atLeast(int min) {
      return check(v -> ((Number) v).longValue() >= min, v -> "must be >= " + min + ", got " + v);
    }

    /** An integer must be {@code min} to {@code max}; else {@code must be 1 to 10<unit>, got n}. */
    Checked<T> between(int min, int max, String unit) {
      return check(v -> ((Number) v).longValue() >= min && ((Number) v).longValue() <= max,
          v -> "must be " + min + " to " + max + unit + ", got " + v);
    }

    /** What the file says, as written. */
    Object written() {
      return written;
    }

    /** Whether the field is written. */
    boolean present() {
      return written != null;
    }

    /** Whether a rule on it was broken. */
    boolean failed() {
      return failed;
    }

    /** The value if written and valid, else {@code dflt}. */
    T orElse(T dflt) {
      return value != null ? value : dflt;
    }

    /** The value if written and valid, else null. */
    T orNull() {
      return value;
    }
  }
}
