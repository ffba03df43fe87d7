/**
 * The admin CLI: commands that talk to a running agent over its admin socket ({@link
 * dev.csisupervisor.cli.AdminClient}) and print what it answers ({@link dev.csisupervisor.cli.Format}). It
 * knows the admin API, not the daemon: a program adds the commands through {@link
 * dev.csisupervisor.cli.AdminCommands}.
 */
package dev.csisupervisor.cli;
