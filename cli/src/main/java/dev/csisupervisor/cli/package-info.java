/**
 * The admin CLI: commands that talk to a running agent over its admin socket ({@link
 * dev.csisupervisor.cli.AdminClient}) and print what it answers ({@link dev.csisupervisor.cli.Format}). It
 * knows the admin API, not the daemon: a program adds the commands through {@link
 * dev.csisupervisor.cli.AdminCommands}.
 *
 * <h2>Why these commands build their picocli models in code</h2>
 *
 * The program has one rule for picocli, in two forms: a command whose start-up is measured against a goal (the
 * admin-socket commands here, and {@code csi-agent}'s top level that dispatches to them) builds its model with
 * picocli's programmatic API ({@link dev.csisupervisor.cli.CommandSpecs}); every other command (the daemon's
 * {@code run}, {@code state}, {@code demo}, {@code cluster ...}, {@code class-data-training}; the mock plugin's)
 * keeps picocli's annotations. Decided for issue 36 (item 5, "one picocli style") after reading both:
 * <ul>
 *   <li><b>Annotations here too</b> would bring back what was measured as the largest part of a CLI call's start:
 *       picocli reads annotations by reflection, and the JDK makes annotation proxy classes at run time that no
 *       JDK 17 class-data archive holds (benchmarks/README.md section 14: 50 ms of {@code plugins}' start,
 *       70 ms of {@code volume mount}'s, against 20 ms for the same models built here). Section 14b's switch to
 *       these models (with the other start-up work of issue 29) took the commands from p50 146-186 ms to
 *       109-131 ms, inside the 150 ms goal; annotations would spend most of that margin again.
 *   <li><b>Code everywhere</b> would lose nothing at start, but buys nothing where start-up is not measured (the
 *       daemon runs for days; the {@code cluster} commands load the etcd client), and costs what the annotations
 *       give: picocli's documented, declarative form, which a reader checks at a glance. The models here need
 *       {@code CliTextTest} (agent module) to hold every help text and usage error to what the annotations printed.
 * </ul>
 * An annotated command's reflection is never paid by an admin command: the top level builds only the subcommand
 * its first argument names ({@code CsiAgentCommand}). A new admin-socket command is built here, in code; a new
 * command that runs for long or loads a heavy client is annotated.
 */
package dev.csisupervisor.cli;
