package dev.csisupervisor.agent.metrics;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

/** Makes families in one registry, the ways the agent's metrics are made. Thread-safe, as the registry is. */
final class MetricFamilies {
  private final PrometheusRegistry prometheus;

  MetricFamilies(PrometheusRegistry prometheus) {
    this.prometheus = prometheus;
  }

  Counter counter(String name, String help, String... labels) {
    return Counter.builder().name(name).help(help).labelNames(labels).register(prometheus);
  }

  /** A gauge without labels, read from {@code value} at each scrape. */
  void gaugeOf(String name, String help, DoubleSupplier value) {
    GaugeWithCallback.builder().name(name).help(help)
        .callback(cb -> cb.call(value.getAsDouble())).register(prometheus);
  }

  /** A counter without labels, read from {@code value} at each scrape. */
  void counterOf(String name, String help, DoubleSupplier value) {
    CounterWithCallback.builder().name(name).help(help)
        .callback(cb -> cb.call(value.getAsDouble())).register(prometheus);
  }

  Histogram histogram(String name, String help, String label, double... upperBounds) {
    return Histogram.builder().name(name).help(help).labelNames(label).classicOnly()
        .classicUpperBounds(upperBounds).register(prometheus);
  }

  /** A gauge of one label, read at each scrape: a sample per entry of {@code byLabel} (label value to count). */
  void gaugeByLabel(String name, String help, String label, Supplier<Map<String, Long>> byLabel) {
    GaugeWithCallback.builder()
        .name(name)
        .help(help)
        .labelNames(label)
        .callback(cb -> byLabel.get().forEach((value, n) -> cb.call(n, value)))
        .register(prometheus);
  }
}
