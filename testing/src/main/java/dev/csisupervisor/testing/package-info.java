/** Test doubles shared by the modules' tests: {@link dev.csisupervisor.testing.FakeScheduler}, {@link dev.csisupervisor.testing.TmpfsMount}. */
package dev.csisupervisor.testing;
