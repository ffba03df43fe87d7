#!/usr/bin/env bash
# Chaos run of cluster volumes (issue 28; benchmarks/README.md section 16), everything real and on this machine:
# three etcd members, four agents (`csi-agent run`: a1 runs the controller of plugin `ebs`, a2-a4 its node plugin;
# mock plugins on one shared "cloud" file that refuses to attach a single-node disk to a second node), six
# single-node-writer volumes registered in the cluster. For SECONDS, at random (seeded): mounts and unmounts through
# the CLI on random nodes, kill -9 of an agent (restarted 2-5 s later), a node paused with SIGSTOP past its lease (3 s)
# then thawed, kill -9 of an etcd member (restarted 3 s later). A monitor reads the cloud file every 100 ms.
# Then it settles: everything thawed and restarted, every mount the nodes list unmounted, and it waits until etcd has
# no claim and no attachment left. The SECONDS are cut into ROUNDS rounds of chaos, each followed by a settle, so
# that one run gives ROUNDS settle times.
#
#   benchmarks/cluster-chaos.sh [SECONDS=120] [SEED=28] [ROUNDS=4]
#
# RESULT line: double attachments seen in the cloud (must be 0), second attachments the cloud refused (an attempt
# at one: must be 0, no forced detach happens here), claims left after settling (0), the settle times, mounts tried /
# done / refused, and a mount's CLI round trip through the cluster beside a node-only agent's in the same run.
# Needs agent/target/csi-agent.jar (./csi-agent builds it) and etcd on the PATH.
set -uo pipefail

seconds="${1:-120}"
seed="${2:-28}"
rounds="${3:-4}"
RANDOM=$seed
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
A="$repo/csi-agent"
work="$(mktemp -d /tmp/csi-chaos.XXXXXX)"
cloud="$work/cloud"
base=$((24000 + RANDOM % 2000 * 8))
eps="http://127.0.0.1:$base,http://127.0.0.1:$((base + 2)),http://127.0.0.1:$((base + 4))"
export CSI_AGENT_ETCD_ENDPOINTS="$eps"
declare -A agent_pid etcd_pid
monitor_pid=""

cleanup() {
  [[ -n "$monitor_pid" ]] && kill "$monitor_pid" 2>/dev/null
  for n in "${!agent_pid[@]}"; do kill -CONT "${agent_pid[$n]}" 2>/dev/null; kill -TERM "${agent_pid[$n]}" 2>/dev/null; done
  sleep 3
  pkill -f -- "--cloud $cloud" 2>/dev/null
  for n in "${!agent_pid[@]}"; do kill -KILL "${agent_pid[$n]}" 2>/dev/null; done
  for m in "${!etcd_pid[@]}"; do kill -KILL "${etcd_pid[$m]}" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

start_etcd() { # member 1..3
  local i=$1 c=$((base + 2 * ($1 - 1))) p=$((base + 2 * ($1 - 1) + 1))
  local cluster="m1=http://127.0.0.1:$((base + 1)),m2=http://127.0.0.1:$((base + 3)),m3=http://127.0.0.1:$((base + 5))"
  local state=new
  [[ -d "$work/etcd-m$i/member" ]] && state=existing
  etcd --name "m$i" --data-dir "$work/etcd-m$i" --listen-client-urls "http://127.0.0.1:$c" \
    --advertise-client-urls "http://127.0.0.1:$c" --listen-peer-urls "http://127.0.0.1:$p" \
    --initial-advertise-peer-urls "http://127.0.0.1:$p" --initial-cluster "$cluster" \
    --initial-cluster-state "$state" >>"$work/etcd-m$i.log" 2>&1 &
  etcd_pid[$i]=$!
}

config() { # node type [cluster|local]
  local n=$1 t=$2
  {
    echo "data_dir: $work/$n"
    echo "metrics_address: off"
    echo "volumes: {verify_mounts: false}"
    echo "plugins:"
    echo "  - id: ebs"
    echo "    type: $t"
    echo "    command: builtin:mock-plugin"
    echo "    args: [--type, $t, --node-id, $n, --cloud, $cloud, --cloud-attach-ms, \"200\"]"
    if [[ "${3:-cluster}" == cluster ]]; then
      echo "cluster:"
      echo "  endpoints: [${eps//,/, }]"
      echo "  node_id: $n"
      echo "  lease_ttl: 3s"
    fi
  } >"$work/$n.yaml"
}

start_agent() { # node
  "$A" run --config "$work/$1.yaml" >>"$work/$1.log" 2>&1 &
  agent_pid[$1]=$!
}

ms() { date +%s%3N; }
percentiles() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) {print "n=0"; exit} printf "p50 %d ms, p99 %d ms (n=%d)", a[int((NR*50+99)/100)], a[int((NR*99+99)/100)], NR}'; }

for i in 1 2 3; do start_etcd "$i"; done
config a1 monolith
for n in a2 a3 a4; do config "$n" node; done
config solo monolith local # a node-only agent beside them, for the mount reference (a cloud of its own)
sed -i "s|--cloud, $cloud|--cloud, $work/solo-cloud|" "$work/solo.yaml"
for n in a1 a2 a3 a4 solo; do start_agent "$n"; done
for ((i = 0; i < 120; i++)); do
  out="$("$A" cluster plugins 2>/dev/null)"
  [[ "$out" =~ ebs[[:space:]]+1/1[[:space:]]+4/4 ]] && break
  sleep 0.5
done
echo ">>> cluster up: $out" >&2

vols=()
for i in 1 2 3 4 5 6; do # through the controller agent (a request in etcd), from a node-only agent's machine
  v="$("$A" cluster volume create ebs "chaos-$i" --size 1MiB --access-mode single-node-writer | sed -n 's/^created volume \([^ ]*\) .*/\1/p')"
  [[ -n "$v" ]] || { echo ">>> cluster volume create chaos-$i failed" >&2; exit 1; }
  vols+=("$v")
done
svols=()
for i in $(seq 1 20); do
  svols+=("$("$A" volume create --config "$work/solo.yaml" --plugin ebs --name "solo-$i" --size 1MiB 2>/dev/null | sed -n 's/^created volume \([^ ]*\) .*/\1/p')")
done

# The monitor: any disk attached to two nodes at once in the cloud.
( doubles=0
  while true; do
    d="$(awk '$1 == "attached" {n[$2]++} END {c = 0; for (v in n) if (n[v] > 1) c++; print c}' "$cloud" 2>/dev/null || echo 0)"
    [[ "${d:-0}" -gt 0 ]] && doubles=$((doubles + 1)) && echo "$doubles" >"$work/doubles"
    sleep 0.1
  done ) &
monitor_pid=$!

nodes=(a2 a3 a4)
declare -A paused_until dead_until
etcd_dead=0
tried=0 done_=0 refused=0 failed=0 n=0 kills=0 pauses=0 member_kills=0
: >"$work/cluster-mount-ms"
: >"$work/settle-ms"
unsettled=0 claims_left=0 attach_left=0
for ((round = 1; round <= rounds; round++)); do
end=$((SECONDS + seconds / rounds))
while ((SECONDS < end)); do
  now=$SECONDS
  for x in "${!paused_until[@]}"; do
    if ((now >= paused_until[$x])); then kill -CONT "${agent_pid[$x]}"; unset "paused_until[$x]"; fi
  done
  for x in "${!dead_until[@]}"; do
    if ((now >= dead_until[$x])); then start_agent "$x"; unset "dead_until[$x]"; fi
  done
  if ((etcd_dead && now >= etcd_dead)); then start_etcd "$etcd_member"; etcd_dead=0; fi
  r=$((RANDOM % 100))
  node="${nodes[RANDOM % 3]}"
  if ((r < 85)) && [[ -n "${paused_until[$node]:-}${dead_until[$node]:-}" ]]; then
    continue # its admin socket would not answer: the CLI is for live agents
  fi
  if ((r < 45)); then
    v="${vols[RANDOM % 6]}"; n=$((n + 1)); tried=$((tried + 1))
    t0=$(ms)
    if err="$(timeout 60 "$A" volume mount --config "$work/$node.yaml" --plugin ebs --volume "$v" --alloc "c$n" 2>&1 >/dev/null)"; then
      done_=$((done_ + 1)); echo $(($(ms) - t0)) >>"$work/cluster-mount-ms"
    elif [[ "$err" == *"refused: held by"* ]]; then refused=$((refused + 1))
    else failed=$((failed + 1)); echo "$node $v c$n: $err" >>"$work/mount-failures"; fi
  elif ((r < 85)); then
    line="$(timeout 60 "$A" volume list --config "$work/$node.yaml" 2>/dev/null | awk 'NR > 1 && $6 == "PUBLISHED" {print $2, $5}' | shuf -n 1 --random-source=<(yes $RANDOM))"
    if [[ -n "$line" ]]; then
      timeout 60 "$A" volume unmount --config "$work/$node.yaml" --plugin ebs --volume "${line% *}" --alloc "${line#* }" >/dev/null 2>&1
    fi
  elif ((r < 92)); then
    if [[ -z "${paused_until[$node]:-}${dead_until[$node]:-}" ]]; then
      kill -KILL "${agent_pid[$node]}"; dead_until[$node]=$((now + 2 + RANDOM % 4)); kills=$((kills + 1))
    fi
  elif ((r < 97)); then
    if [[ -z "${paused_until[$node]:-}${dead_until[$node]:-}" ]]; then
      kill -STOP "${agent_pid[$node]}"; paused_until[$node]=$((now + 5)); pauses=$((pauses + 1))
    fi
  elif ((etcd_dead == 0)); then
    etcd_member=$((1 + RANDOM % 3)); kill -KILL "${etcd_pid[$etcd_member]}"; etcd_dead=$((now + 3)); member_kills=$((member_kills + 1))
  fi
done

# Settle: every node back, every mount unmounted, until etcd holds no claim and no attachment.
t_settle=$(ms)
for x in "${!paused_until[@]}"; do kill -CONT "${agent_pid[$x]}"; unset "paused_until[$x]"; done
for x in "${!dead_until[@]}"; do start_agent "$x"; unset "dead_until[$x]"; done
((etcd_dead)) && start_etcd "$etcd_member"
etcd_dead=0
sleep 3
settled=""
for ((i = 0; i < 240; i++)); do
  for node in "${nodes[@]}"; do
    timeout 60 "$A" volume list --config "$work/$node.yaml" 2>/dev/null | awk 'NR > 1 {print $2, $5}' |
      while read -r v a; do timeout 60 "$A" volume unmount --config "$work/$node.yaml" --plugin ebs --volume "$v" --alloc "$a" >/dev/null 2>&1; done
  done
  st="$("$A" cluster volume status 2>/dev/null)"
  if [[ -n "$st" ]] && ! grep -qE '^  (claim|attachment) ' <<<"$st"; then settled=yes; break; fi
  sleep 1
done
echo $(($(ms) - t_settle)) >>"$work/settle-ms"
[[ -z "$settled" ]] && unsettled=$((unsettled + 1))
claims_left=$((claims_left + $(grep -cE '^  claim ' <<<"$st")))
attach_left=$((attach_left + $(grep -cE '^  attachment ' <<<"$st")))
echo ">>> round $round: settled ${settled:-NO} in $(tail -1 "$work/settle-ms") ms" >&2
done
refusals="$(grep -c "is attached to node" "$work/a1.log" 2>/dev/null)"
doubles="$(cat "$work/doubles" 2>/dev/null || echo 0)"

# The mount's CLI round trip through the cluster beside a node-only agent, same run, same plugin.
: >"$work/solo-mount-ms"
for i in $(seq 1 20); do
  t0=$(ms); "$A" volume mount --config "$work/solo.yaml" --plugin ebs --volume "${svols[i - 1]}" --alloc "s$i" >/dev/null 2>&1 && echo $(($(ms) - t0)) >>"$work/solo-mount-ms"
done

echo "RESULT cluster-chaos | ${seconds} s, seed $seed, 3 etcd members, 4 agents (1 controller), 6 single-node-writer volumes |" \
  "agent kill -9: $kills, node pauses (SIGSTOP past the lease): $pauses, etcd member kill -9: $member_kills |" \
  "mounts tried $tried, done $done_, refused (held elsewhere) $refused, failed otherwise $failed |" \
  "double attachments seen $doubles, controller errors naming an attachment elsewhere $refusals |" \
  "$rounds rounds, not settled $unsettled, settle time $(percentiles <"$work/settle-ms") max $(sort -n "$work/settle-ms" | tail -1) ms," \
  "claims left $claims_left, attachments left $attach_left (summed over the rounds) |" \
  "mount through the CLI, cluster: $(percentiles <"$work/cluster-mount-ms"); node-only agent, same run: $(percentiles <"$work/solo-mount-ms")"
if [[ -s "$work/mount-failures" ]]; then
  echo ">>> mounts that failed otherwise (first 10):"; head -10 "$work/mount-failures"
fi
