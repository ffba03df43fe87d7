#!/usr/bin/env bash
# Benchmarks of the agent as operators run it, through the launcher the package installs
# (dist/src/bin/csi-agent): its JVM flags, its class-data archives.
#
#   benchmarks/agent-process.sh cli [RUNS]          14: latency of `plugins`, `status`, `volume list`, `volume
#                                                   mount` (and `events`) as users call them, against a running
#                                                   agent (one launched mock plugin): through ./csi-agent with
#                                                   --config, through the installed layout (the tarball's bin/ and
#                                                   lib/) with CSI_AGENT_CONFIG and with --admin-socket, without the
#                                                   archive; the mount's own RPC time measured apart in a warm JVM;
#                                                   beside a bare `java -version` with the same flags and archive
#   benchmarks/agent-process.sh footprint [SECONDS] 10b: the agent's RSS and threads with 5, 20 and 200
#                                                   supervised plugins (5 launched, the rest external sockets
#                                                   served by one plugin-farm process), beside an agent with
#                                                   none and the same 5 with the JVM's default flags
#
# Prints RESULT lines as benchmarks/run.sh does. Needs agent/target/csi-agent.jar and
# benchmarks/target/csi-benchmarks.jar (benchmarks/run.sh builds both).
set -euo pipefail

what="${1:-cli}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
export CSI_AGENT_JAR="$repo/agent/target/csi-agent.jar"
launcher="$repo/dist/src/bin/csi-agent"
bench_jar="$here/target/csi-benchmarks.jar"
work="$(mktemp -d /tmp/csi-bench-agent.XXXXXX)"
export CSI_AGENT_CDS_DIR="$work/cds"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# percentiles of the numbers on stdin (milliseconds), nearest rank
stats() {
  sort -n | awk '{a[NR]=$1} END {
    p50=a[int((NR*50+99)/100)]; p99=a[int((NR*99+99)/100)];
    printf "p50 %d ms, p99 %d ms (min %d, max %d, n=%d)", p50, p99, a[1], a[NR], NR }'
}

# times (ms) of RUNS runs of a command
times() {
  local runs="$1"; shift
  local i t0 t1
  for ((i = 0; i < runs; i++)); do
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
  done
}

# config with LAUNCHED builtin mock plugins and EXTERNAL sockets under $2/csi
config() { # file data_dir launched external
  local file="$1" data="$2" launched="$3" external="$4" i
  {
    echo "data_dir: $data"
    echo "metrics_address: \"off\""
    echo "resource_interval: \"off\""
    if [[ $((launched + external)) -eq 0 ]]; then echo "plugins: []"; else echo "plugins:"; fi
    for ((i = 0; i < launched; i++)); do
      printf '  - {id: launched-%d, type: node, command: "builtin:mock-plugin"}\n' "$i"
    done
    for ((i = 0; i < external; i++)); do
      printf '  - {id: farm-%d, type: node, socket: %s}\n' "$i" "$work/farm/node/$(printf 'sup-%04d' "$i")/csi.sock"
    done
  } >"$file"
}

start_agent() { # config data_dir command... : sets agent_pid; waits for the admin socket
  local cfg="$1" data="$2" i; shift 2
  "$@" run --config "$cfg" >"$cfg.log" 2>&1 &
  agent_pid=$!
  pids+=("$agent_pid")
  for ((i = 0; i < 600; i++)); do
    [[ -S "$data/agent.sock" ]] && break
    sleep 0.1
  done
}

wait_healthy() { # data count
  local n=0 i
  for ((i = 0; i < 1200; i++)); do
    n=$("$launcher" plugins --admin-socket "$1/agent.sock" --type node 2>/dev/null | grep -c healthy || true)
    [[ "$n" -ge "$2" ]] && return 0
    sleep 0.5
  done
  echo "only $n of $2 plugins healthy" >&2
  return 1
}

rss_threads() { # pid -> "RSS_MiB THREADS"
  local rss
  rss=$(awk '/VmRSS/ {print int($2/1024)}' "/proc/$1/status")
  echo "$rss $(ls "/proc/$1/task" | wc -l)"
}

thread_groups() { # pid -> thread names grouped (digits folded), most first
  for t in /proc/"$1"/task/*; do cat "$t/comm"; done | sed -E 's/[0-9]+/N/g' | sort | uniq -c | sort -rn |
    awk '{c=$1; $1=""; printf "%s%s x%d", sep, substr($0,2), c; sep=", "}'
}

echo ">>> agent-process $what, $(date -u), nproc $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$launcher" --version >/dev/null 2>&1 # makes the archives (not timed)

case "$what" in
  cli)
    runs="${2:-50}"
    data="$work/cli-data"
    # The installed layout: the launcher in bin/, the jar in lib/ (as the tarball lays them out; the .deb's are
    # the same launcher and jar), its archives in lib/cds/ made on first use; the agent runs from it too, so a
    # rebuild of agent/target/ cannot pull the jar from under it.
    pkg="$work/pkg"
    mkdir -p "$pkg/bin" "$pkg/lib"
    cp "$launcher" "$pkg/bin/csi-agent"
    cp "$CSI_AGENT_JAR" "$pkg/lib/csi-agent.jar"
    installed() { env -u CSI_AGENT_JAR -u CSI_AGENT_CDS_DIR "$pkg/bin/csi-agent" "$@"; }
    {
      echo "data_dir: $data"
      echo "metrics_address: \"off\""
      echo "resource_interval: \"off\""
      echo "volumes: {verify_mounts: false}" # the mock plugin mounts nothing
      echo "plugins:"
      echo "  - {id: mock, type: monolith, command: \"builtin:mock-plugin\"}"
    } >"$work/cli.yaml"
    installed --version >/dev/null 2>&1 # its archives (not timed)
    start_agent "$work/cli.yaml" "$data" env -u CSI_AGENT_JAR -u CSI_AGENT_CDS_DIR "$pkg/bin/csi-agent"
    wait_healthy "$data" 1
    # ./csi-agent: the checkout's launcher, on agent/target/csi-agent.jar (current: run.sh built it; a stale
    # tree is rebuilt here, before any timing), its archives in $CSI_AGENT_CDS_DIR.
    "$repo/csi-agent" --version >/dev/null
    flags=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData)
    # The jar on the class path: the CLI's archive holds the jar's classes and maps only with the class path it was
    # made with (without it the JVM silently runs with no archive at all, which is the second line).
    bare=$(times "$runs" java "${flags[@]}" -XX:SharedArchiveFile="$pkg/lib/cds/cli.jsa" -Xshare:auto \
      -cp "$pkg/lib/csi-agent.jar" -version | stats)
    echo "RESULT cli reference: bare JVM, the CLI's flags and archive, -version | $bare"
    echo "RESULT cli reference: bare JVM, the CLI's flags, no archive, -version | $(times "$runs" java "${flags[@]}" \
      -Xshare:off -version | stats)"
    # Volumes to mount, one per timed mount (made through the admin API, not timed).
    mount_rpc() { java -cp "$pkg/lib/csi-agent.jar" "$here/src/cli/MountRpc.java" "$@"; }
    mapfile -t volumes < <(mount_rpc create "$data/agent.sock" mock vol- $((4 * runs + 20)))
    row() { # name, then the command (a function or program) and its arguments
      local name="$1"; shift
      if ! "$@" >/dev/null 2>&1; then # a failing command is no measure of one that works
        echo "RESULT cli $name | FAILED: $("$@" 2>&1 | tail -1)"
        return
      fi
      echo "RESULT cli $name | $(times "$runs" "$@" | stats) | reference bare JVM: $bare | goal p50 <= 150 ms, p99 <= 250 ms"
    }
    mounts() { # first-volume way : `volume mount` RUNS times, each a volume of its own for an alloc of its own
      local first="$1" way="$2" i v t0 t1
      for ((i = 0; i < runs; i++)); do
        v=$((first + i))
        t0=$(date +%s%N)
        "$way" volume mount --plugin mock --volume "${volumes[$v]}" --alloc "cli-$v" >/dev/null 2>&1 ||
          echo "volume mount of ${volumes[$v]} ($way) failed" >&2
        t1=$(date +%s%N)
        echo $(((t1 - t0) / 1000000))
      done
    }
    # The ways users call a command: the finder of the agent after the command's own arguments.
    checkout_config() { "$repo/csi-agent" "$@" --config "$work/cli.yaml"; }
    installed_env() { CSI_AGENT_CONFIG="$work/cli.yaml" installed "$@"; }
    installed_socket() { installed "$@" --admin-socket "$data/agent.sock"; }
    installed_no_archive() { CSI_AGENT_CDS=off installed "$@" --config "$work/cli.yaml"; }
    declare -A way_name=([checkout_config]="./csi-agent --config" [installed_env]="installed, CSI_AGENT_CONFIG"
      [installed_socket]="installed, --admin-socket" [installed_no_archive]="installed, --config, no archive")
    first=0
    for way in checkout_config installed_env installed_socket; do
      for cmd in plugins status "volume list" events; do
        read -r -a c <<<"$cmd"
        row "$cmd, ${way_name[$way]}" "$way" "${c[@]}"
      done
      echo "RESULT cli volume mount, ${way_name[$way]} | $(mounts "$first" "$way" | stats) | reference bare JVM: $bare | goal p50 <= 150 ms + the RPC, p99 <= 250 ms + the RPC"
      first=$((first + runs))
    done
    # The mount's own time: the same MountVolume call from a warm JVM (after 20 untimed), on fresh volumes.
    echo "RESULT cli volume mount RPC alone (warm client) | $(mount_rpc mount "$data/agent.sock" mock 20 \
      "${volumes[@]:$first:$((runs + 20))}")"
    row "plugins, ${way_name[installed_no_archive]}" installed_no_archive plugins
    ;;
  footprint)
    settle="${2:-20}"
    # Its stdin: a fifo this script holds open, so it serves until the script ends.
    mkfifo "$work/farm.in"
    exec 8<>"$work/farm.in"
    java -jar "$bench_jar" plugin-farm "$work/farm" 195 2 <"$work/farm.in" >"$work/farm.log" 2>&1 &
    pids+=("$!")
    for ((i = 0; i < 600; i++)); do grep -q READY "$work/farm.log" 2>/dev/null && break; sleep 0.1; done
    for setup in "0 0 flags" "5 0 flags" "5 0 default" "5 15 flags" "5 195 flags"; do
      read -r launched external how <<<"$setup"
      data="$work/fp-$launched-$external-$how"
      config "$data.yaml" "$data" "$launched" "$external"
      if [[ "$how" == default ]]; then
        start_agent "$data.yaml" "$data" java -jar "$CSI_AGENT_JAR"
      else
        start_agent "$data.yaml" "$data" "$launcher"
      fi
      pid=$agent_pid
      total=$((launched + external))
      [[ "$total" -gt 0 ]] && wait_healthy "$data" "$total"
      sleep "$settle"
      read -r rss threads <<<"$(rss_threads "$pid")"
      echo "RESULT footprint $total plugins ($launched launched, $external external), $how JVM flags | RSS $rss MiB, $threads threads | threads: $(thread_groups "$pid")"
      kill -TERM "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    done
    ;;
  *) echo "usage: $0 cli [RUNS] | footprint [SECONDS]" >&2; exit 2 ;;
esac
