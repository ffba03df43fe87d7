/** Test doubles shared by the modules' tests: {@link dev.csisupervisor.testing.FakeScheduler}. */
package dev.csisupervisor.testing;
