/**
 * Test doubles shared by the modules' tests: {@link dev.csisupervisor.testing.FakeScheduler};
 * {@link dev.csisupervisor.testing.TestSeed}, the one seed of the randomised tests;
 * {@link dev.csisupervisor.testing.TmpfsMount}, a real small disk to fill.
 */
package dev.csisupervisor.testing;
