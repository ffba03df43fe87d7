package dev.csisupervisor.tests;

import dev.csisupervisor.client.PluginKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Collectors;

/**
 * One random fault schedule: a few plugins, a sequence of fault steps over them, and how each plugin ends (healthy
 * with some version, or down in some way). Generated from a seed alone, so a schedule is reproducible from the
 * master seed and its index ({@link #generate}); {@link #toString()} prints it in full for failure messages.
 */
record FaultSchedule(int index, long seed, List<PluginSpec> plugins, List<Step> steps, List<Ending> endings) {

  /** How a plugin's process is when supervision starts. */
  enum Start { READY, READY_AFTER, NEVER_READY, ABSENT }

  /** One thing done to one plugin. {@code arg} is a duration in ms (flap period, latency) where one applies. */
  enum Fault {
    CRASH, STOP, START, HANG, UNHANG, FAIL_PROBES, CLEAR_FAILURE, NOT_READY, READY, FLAP, STOP_FLAPPING, SLOW, FAST,
    NEW_VERSION, NON_CSI
  }

  record PluginSpec(String id, PluginKind kind, Start start, int readyAfterMillis) {}

  /**
   * @param observe how many further probes (or connection attempts) the supervisor must make after the step before
   *     the next one, so that every fault is actually seen (0: go on at once)
   */
  record Step(int plugin, Fault fault, int arg, int observe) {
    @Override
    public String toString() {
      return "p" + plugin + ":" + fault + (arg > 0 ? "(" + arg + "ms)" : "") + (observe > 0 ? "+" + observe : "");
    }
  }

  /** Healthy (possibly with a new version) or down by one of CRASH, STOP, NON_CSI, NOT_READY, HANG. */
  record Ending(boolean healthy, boolean newVersion, Fault downBy) {
    @Override
    public String toString() {
      return healthy ? (newVersion ? "HEALTHY(new version)" : "HEALTHY") : "DOWN(" + downBy + ")";
    }
  }

  private static final Fault[] DOWN = {Fault.CRASH, Fault.STOP, Fault.NON_CSI, Fault.NOT_READY, Fault.HANG};

  /** The seed of schedule {@code index} under {@code masterSeed}. */
  static long seedOf(long masterSeed, int index) {
    long z = masterSeed + 0x9E3779B97F4A7C15L * (index + 1);
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  static FaultSchedule generate(long masterSeed, int index) {
    long seed = seedOf(masterSeed, index);
    Random r = new Random(seed);
    int pluginCount = 1 + r.nextInt(3);
    List<PluginSpec> plugins = new ArrayList<>();
    for (int p = 0; p < pluginCount; p++) {
      int dice = r.nextInt(10);
      Start start = dice < 6 ? Start.READY : dice < 8 ? Start.READY_AFTER : dice < 9 ? Start.NEVER_READY : Start.ABSENT;
      plugins.add(new PluginSpec("s" + index + "p" + p, PluginKind.values()[r.nextInt(3)], start, 20 + r.nextInt(200)));
    }
    int stepCount = 2 + r.nextInt(5);
    List<Step> steps = new ArrayList<>();
    Fault[] faults = Fault.values();
    for (int s = 0; s < stepCount; s++) {
      Fault f = faults[r.nextInt(faults.length)];
      int arg = switch (f) {
        case FLAP -> 30 + r.nextInt(120);
        case SLOW -> r.nextBoolean() ? 20 + r.nextInt(100) : 300 + r.nextInt(300); // within or beyond the deadline
        default -> 0;
      };
      steps.add(new Step(r.nextInt(pluginCount), f, arg, r.nextInt(3)));
    }
    List<Ending> endings = new ArrayList<>();
    for (int p = 0; p < pluginCount; p++) {
      boolean healthy = r.nextInt(10) < 7;
      endings.add(new Ending(healthy, r.nextBoolean(), healthy ? null : DOWN[r.nextInt(DOWN.length)]));
    }
    return new FaultSchedule(index, seed, List.copyOf(plugins), List.copyOf(steps), List.copyOf(endings));
  }

  @Override
  public String toString() {
    return "schedule #" + index + " (seed " + seed + "): plugins "
        + plugins.stream().map(p -> p.id() + "/" + p.kind() + "/" + p.start()).collect(Collectors.joining(", "))
        + "; steps " + steps + "; endings " + endings;
  }
}
