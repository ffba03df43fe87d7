#!/usr/bin/env bash
# Attach throughput of cluster volumes with one slow ControllerPublishVolume among them (issue 35; benchmarks/README.md
# section 17), everything real on this machine: one etcd member, a controller agent c1 (plugin `ebs`, type
# controller) and four node agents n1-n4, mock plugins on one shared cloud (attach 200 ms). VOLUMES single-node-writer
# volumes are created through the controller agent, then mounted through the CLI, PARALLEL at a time, spread over the
# four nodes, the slow volume first: its ControllerPublishVolume takes SLOW more (the mock's per-volume delay,
# `--delay ControllerPublishVolume@vol-1=SLOW`: on a fresh shared cloud the first volume made is vol-1).
#
#   benchmarks/cluster-attach.sh [VOLUMES=100] [SLOW=10s] [PARALLEL=8]
#   env: AGENT_TREE=DIR  a checkout whose ./csi-agent runs the agents and the CLI (default: this one), e.g. a git
#                        worktree of an older commit, built beforehand, for "today's" figure in the same session
#        MOCK_JAR=FILE   the jar the mock plugins run from (default: this checkout's agent/target/csi-agent.jar, so
#                        that both trees are measured against the same mock plugin; copied at start)
#        LEASE_TTL=3s    the agents' cluster lease_ttl (the controller's calls must end inside its election lease:
#                        on this branch a publish longer than about TTL - 1 s is never answered in time)
#        KEEP_WORK=1     keep the work directory
#
# RESULT line: the tree and its commit, mounts done / failed, wall time of every mount but the slow one's and the
# throughput it makes, the slow volume's mount time, a mount's time p50/p99 (slow one excluded).
# Needs etcd on the PATH and the agent jars built (./csi-agent builds its own tree's when stale).
set -uo pipefail

volumes="${1:-100}"
slow="${2:-10s}"
parallel="${3:-8}"
lease_ttl="${LEASE_TTL:-3s}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
tree="$(cd "${AGENT_TREE:-$repo}" && pwd)"
A="$tree/csi-agent"
mock_jar="${MOCK_JAR:-$repo/agent/target/csi-agent.jar}"
[[ -f "$mock_jar" ]] || { echo "no mock plugin jar at $mock_jar (build this checkout's agent first)" >&2; exit 1; }
java_bin="$(command -v java)"
work="$(mktemp -d /tmp/csi-attach.XXXXXX)"
cloud="$work/cloud"
cp "$mock_jar" "$work/mock.jar"
base=$((26000 + $$ % 1000 * 2))
export CSI_AGENT_ETCD_ENDPOINTS="http://127.0.0.1:$base"
declare -A agent_pid
etcd_pid=""

cleanup() {
  for n in "${!agent_pid[@]}"; do kill -TERM "${agent_pid[$n]}" 2>/dev/null; done
  sleep 3
  for n in "${!agent_pid[@]}"; do kill -KILL "${agent_pid[$n]}" 2>/dev/null; done
  # The mock plugins are the agents' children, each started with this run's own cloud path: only this run's match.
  pkill -f -- "--cloud $cloud" 2>/dev/null
  [[ -n "$etcd_pid" ]] && kill -KILL "$etcd_pid" 2>/dev/null
  if [[ -n "${KEEP_WORK:-}" ]]; then echo ">>> work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

etcd --name m1 --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$base" \
  --advertise-client-urls "http://127.0.0.1:$base" --listen-peer-urls "http://127.0.0.1:$((base + 1))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((base + 1))" --initial-cluster "m1=http://127.0.0.1:$((base + 1))" \
  >"$work/etcd.log" 2>&1 &
etcd_pid=$!

config() { # node type
  {
    echo "data_dir: $work/$1"
    echo "metrics_address: off"
    echo "volumes: {verify_mounts: false}"
    echo "plugins:"
    echo "  - id: ebs"
    echo "    type: $2"
    echo "    command: $java_bin"
    echo "    args: [-XX:+UseSerialGC, -XX:TieredStopAtLevel=1, -Xmx64m, -cp, $work/mock.jar,"
    echo "      dev.csisupervisor.mockplugin.MockCsiPlugin, --type, $2, --node-id, $1, --cloud, $cloud,"
    echo "      --cloud-attach-ms, \"200\", --delay, \"ControllerPublishVolume@vol-1=$slow\"]"
    echo "cluster:"
    echo "  endpoints: [http://127.0.0.1:$base]"
    echo "  node_id: $1"
    echo "  lease_ttl: $lease_ttl"
  } >"$work/$1.yaml"
}
nodes=(n1 n2 n3 n4)
config c1 controller
for n in "${nodes[@]}"; do config "$n" node; done
for n in c1 "${nodes[@]}"; do
  "$A" run --config "$work/$n.yaml" >>"$work/$n.log" 2>&1 &
  agent_pid[$n]=$!
done
for ((i = 0; i < 120; i++)); do
  out="$("$A" cluster plugins 2>/dev/null)"
  [[ "$out" =~ ebs[[:space:]]+1/1[[:space:]]+4/4 ]] && break
  sleep 0.5
done
[[ "$out" =~ ebs[[:space:]]+1/1[[:space:]]+4/4 ]] || { echo ">>> cluster not up: $out" >&2; exit 1; }

# Create: through the controller agent, four at a time (not measured).
seq 1 "$volumes" | xargs -P 4 -I{} "$A" cluster volume create ebs "att-{}" --size 1MiB --access-mode single-node-writer \
  2>>"$work/create-errors" | sed -n 's/^created volume \([^ ]*\) .*/\1/p' >"$work/ids"
[[ "$(wc -l <"$work/ids")" -eq "$volumes" ]] || { echo ">>> created $(wc -l <"$work/ids") of $volumes" >&2; exit 1; }
grep -qx vol-1 "$work/ids" || { echo ">>> no vol-1 among the volumes: the slow one is not there" >&2; exit 1; }

# Mount: the slow volume first, then the others, each on a node in turn; PARALLEL CLI mounts at a time.
{ echo "vol-1 n1 a0"; grep -vx vol-1 "$work/ids" | awk '{print $1, "n" (NR % 4 + 1), "a" NR}'; } >"$work/plan"
export A work
one() { # volume node alloc -> "volume start end rc"
  local t0 t1 rc
  t0=$(date +%s%3N)
  timeout 300 "$A" volume mount --config "$work/$2.yaml" --plugin ebs --volume "$1" --alloc "$3" >/dev/null 2>>"$work/mount-errors"
  rc=$?
  t1=$(date +%s%3N)
  echo "$1 $t0 $t1 $rc"
}
export -f one
t_start=$(date +%s%3N)
xargs -P "$parallel" -L 1 bash -c 'one "$@"' _ <"$work/plan" >"$work/mounts"
t_end=$(date +%s%3N)

percentiles() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) {print "n=0"; exit} printf "p50 %d ms, p99 %d ms (n=%d)", a[int((NR*50+99)/100)], a[int((NR*99+99)/100)], NR}'; }
ok=$(awk '$4 == 0' "$work/mounts" | wc -l)
failed=$(awk '$4 != 0' "$work/mounts" | wc -l)
fast_end=$(awk '$1 != "vol-1" && $4 == 0 {if ($3 > m) m = $3} END {printf "%.0f\n", m}' "$work/mounts")
fast_n=$(awk '$1 != "vol-1" && $4 == 0' "$work/mounts" | wc -l)
fast_ms=$((fast_end - t_start))
slow_ms=$(awk '$1 == "vol-1" {print $3 - $2, ($4 == 0 ? "" : "(FAILED rc " $4 ")")}' "$work/mounts")
rate=$(awk -v n="$fast_n" -v ms="$fast_ms" 'BEGIN {printf "%.1f", (ms > 0 ? n * 1000 / ms : 0)}')
commit="$(git -C "$tree" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "RESULT cluster-attach | tree $tree ($commit) | $volumes single-node-writer volumes, 1 controller agent, 4 node agents," \
  "$parallel CLI mounts at a time, vol-1's ControllerPublishVolume +$slow, attach 200 ms, lease_ttl $lease_ttl |" \
  "mounts done $ok, failed $failed | all but the slow one mounted in $fast_ms ms ($rate mounts/s) |" \
  "the slow one: $slow_ms ms | a mount (slow one excluded): $(awk '$1 != "vol-1" && $4 == 0 {print $3 - $2}' "$work/mounts" | percentiles) |" \
  "all $volumes in $((t_end - t_start)) ms"
if [[ -s "$work/mount-errors" ]]; then echo ">>> mount errors (first 5):"; head -5 "$work/mount-errors"; fi
