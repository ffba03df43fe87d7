#!/usr/bin/env bash
# Runs the csi-supervisor benchmarks and writes their output to benchmarks/target/bench-results/.
#
#   benchmarks/run.sh quick   # every benchmark, reduced sizes/durations: under 5 minutes on 2 cores
#   benchmarks/run.sh full    # the sizes the issue asks for (1000 supervised plugins for 60 s, 100k events...)
#   benchmarks/run.sh quick time-to-register   # just one: env | jmh | time-to-register | restore |
#                                              #   supervision | fanout-stuck | cluster-catalog |
#                                              #   cluster-failover | cluster-volumes-scale |
#                                              #   cluster-requests | volumes | plugin-death | journal-roll |
#                                              #   restore-cds | cli | footprint | cluster-chaos |
#                                              #   crash-simulator
#   JMH_FILTER=fanout benchmarks/run.sh full jmh   # one JMH suite (regex over suite names)
#
# Not run by CI or by ./mvnw verify. The benchmark jar is (re)built first if it is missing or older
# than any source file of the reactor (NO_BUILD=1 skips that); the build is not part of the time budget.
# The first run also builds the pre-filled state files (10 to 100 000 registrations, about 40 s) into
# benchmarks/target/bench-data/, reused afterwards.
set -euo pipefail

mode="${1:-quick}"
only="${2:-all}"
case "$mode" in
  quick|full) ;;
  *) echo "usage: $0 quick|full [env|jmh|time-to-register|restore|supervision|fanout-stuck|cluster-catalog|cluster-failover|cluster-volumes-scale|cluster-requests|volumes|plugin-death|journal-roll|restore-cds|cli|footprint|cluster-chaos|crash-simulator]" >&2; exit 2 ;;
esac

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
jar="$here/target/csi-benchmarks.jar"

if [[ ! -f "$jar" ]] || [[ "${NO_BUILD:-0}" != 1 && -n "$(find "$repo" -path '*/src/main/*' -newer "$jar" -print -quit 2>/dev/null)" ]]; then
  echo ">>> building $jar" >&2
  (cd "$repo" && ./mvnw -B -q package -pl benchmarks,agent -am -DskipTests) # package, not install: ~/.m2 keeps no build of this tree
fi

cd "$here"
out="$here/target/bench-results"
mkdir -p "$out"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
log="$out/$mode-$stamp.log"
java=(java -Xms1g -Xmx3g -Dbench.data="$here/target/bench-data" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -jar "$jar")

run() {
  echo ">>> $* (uptime: $(uptime))"
  local t0=$SECONDS
  "${java[@]}" "$@"
  echo ">>> $1 took $((SECONDS - t0)) s"
}

want() { [[ "$only" == all || "$only" == "$1" ]]; }

{
  echo ">>> csi-supervisor benchmarks, mode $mode, $(date -u)"
  echo ">>> nproc: $(nproc); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
  java -version 2>&1 | sed 's/^/>>> /'
  t_all=$SECONDS
  if want env; then run env; fi
  if want jmh; then run jmh "$mode" "${JMH_FILTER:-.*}"; fi
  if want time-to-register; then
    run time-to-register "$mode" durable
    # The same without disk (in-memory store): the supervisor's own share. Full mode only, for time.
    if [[ "$mode" == full ]]; then run time-to-register "$mode" memory; fi
  fi
  if want restore; then
    run restore "$mode" 10000
    run restore "$mode" 100000
  fi
  if want supervision; then run supervision "$mode"; fi
  if want fanout-stuck; then run fanout-stuck "$mode"; fi
  if want cluster-catalog; then run cluster-catalog "$mode"; fi
  if want cluster-failover; then run cluster-failover "$mode"; fi
  if want cluster-volumes-scale; then run cluster-volumes-scale "$mode"; fi
  if want cluster-requests; then run cluster-requests "$mode"; fi
  if want volumes; then run volumes "$mode"; fi
  if want plugin-death; then run plugin-death "$mode"; fi
  if want journal-roll; then run journal-roll "$mode"; fi
  if want restore-cds; then
    # The cold restore (round 1) of 100 000 with the agent's daemon JVM flags, without and with a class-data
    # archive trained on a small restore (as the launcher's archive is trained on a small agent).
    daemon=(java -Xms16m -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1
      -Dbench.data="$here/target/bench-data" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)
    "${daemon[@]}" -XX:ArchiveClassesAtExit="$out/restore.jsa" -Xlog:cds=off -jar "$jar" restore quick 10 >/dev/null
    # The state templates first, each in a JVM of its own: a run that made its template has warmed up on it.
    for size in 10000 100000; do "${java[@]}" restore quick "$size" >/dev/null; done
    for size in 10000 100000; do
      echo ">>> restore $size, daemon flags, no archive"
      "${daemon[@]}" -jar "$jar" restore quick "$size"
      echo ">>> restore $size, daemon flags, archive"
      "${daemon[@]}" -XX:SharedArchiveFile="$out/restore.jsa" -Xshare:auto -Xlog:cds=off -jar "$jar" restore quick "$size"
      echo ">>> restore $size, the JVM's default flags (C2, G1), no archive"
      "${java[@]}" restore quick "$size"
    done
  fi
  if want cli; then "$here/agent-process.sh" cli "$([[ "$mode" == full ]] && echo 50 || echo 20)"; fi
  if want footprint; then "$here/agent-process.sh" footprint "$([[ "$mode" == full ]] && echo 30 || echo 10)"; fi
  if want cluster-chaos; then "$here/cluster-chaos.sh" "$([[ "$mode" == full ]] && echo 120 || echo 40)"; fi
  # The crash simulator's heavy variant (the suite runs shorter ones): full mode, or asked for by name.
  if [[ "$only" == crash-simulator || ( "$mode" == full && "$only" == all ) ]]; then "$here/crash-simulator.sh"; fi
  echo ">>> all done in $((SECONDS - t_all)) s (uptime: $(uptime))"
  echo
  echo ">>> summary"
} 2>&1 | tee "$log"

grep -E '^(RESULT|>>> .* took|>>> all done)' "$log" | tee -a "$log.summary"
echo ">>> full log: $log"
