#!/usr/bin/env bash
# The crash simulator's heavy variant (issue 36; benchmarks/README.md section 17): state/'s CrashSimulatorTest with
# -Dcsi.crash.heavy=true, whose runs are longer than the suite's (twice the commits of the two segment tests, twice
# those of the failed-writes test): every crash state ALICE would consider, of each run, opened strict and
# repairing. The suite (./mvnw verify) runs the same tests, shorter; this keeps the longer runs without making every
# build pay for them.
#
#   benchmarks/crash-simulator.sh
#
# RESULT line: the crash points, crash states and distinct images checked, and the wall time; the run fails (exit
# status not 0) when any crash state does not open with every acknowledged change. Runs Maven in the reactor
# (verify of state/ and what it needs, never install); on a shared machine, run it through the build lock.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$repo"
t0=$SECONDS
status=0
./mvnw -B -q -pl state -am verify -Dtest=CrashSimulatorTest -Dsurefire.failIfNoSpecifiedTests=false \
  -Dcsi.crash.heavy=true || status=$?
out="$repo/state/target/surefire-reports/dev.csisupervisor.state.CrashSimulatorTest-output.txt"
grep -h '\[crash simulator\]' "$out" || true
awk -v took=$((SECONDS - t0)) -v status=$status '
  /\[crash simulator\]/ { points += $3; states += $6; images += $9; runs++ }
  END { printf "RESULT crash-simulator heavy | %d runs | %d crash points, %d crash states, %d distinct images | %s | %d s\n",
        runs, points, states, images, status == 0 ? "all opened with every acknowledged change" : "FAILED", took }' "$out"
exit $status
