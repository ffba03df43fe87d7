/**
 * Test doubles shared by the modules' tests: {@link dev.csisupervisor.testing.FakeScheduler}, and
 * {@link dev.csisupervisor.testing.TestSeed}, the one seed of the randomised tests.
 */
package dev.csisupervisor.testing;
