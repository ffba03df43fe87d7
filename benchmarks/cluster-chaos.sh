#!/usr/bin/env bash
# Chaos run of cluster volumes (issues 28 and 35; benchmarks/README.md sections 16 and 17), everything real and on this
# machine: three etcd members, four agents (`csi-agent run`: a1 and a4 run plugin `ebs` as `monolith`, so both campaign
# for its controller and one is elected; a2 and a3 run its node plugin), mock plugins on one shared "cloud" file that
# refuses to attach a single-node disk to a second node and counts what a correct CO never does (its oracle), six
# single-node-writer volumes registered in the cluster. Node plugins fail a fraction of NodeUnstageVolume calls
# (INTERNAL "target is busy", seeded per node) and a4's ControllerPublishVolume is slow. For SECONDS, at random
# (seeded): mounts and unmounts through the CLI on random nodes, a re-mount of the same alloc right after its unmount,
# kill -9 of an agent (restarted 2-5 s later), an agent paused with SIGSTOP past its lease (3 s) then thawed, kill -9
# of an etcd member (restarted 3 s later) or a member paused with SIGSTOP for 3-6 s. A monitor reads the cloud file
# every 100 ms. Then it settles: everything thawed and restarted, every mount the nodes list unmounted, and it waits
# until etcd has no claim and no attachment left; then asks the oracle (`csi-mock-plugin cloud-report`, with etcd's
# attachment keys as the CO's records). The SECONDS are cut into ROUNDS rounds of chaos, each followed by a settle.
#
#   benchmarks/cluster-chaos.sh [SECONDS=120] [SEED=28] [ROUNDS=4]
#   env: UNSTAGE_FAIL=0.3 (fraction of NodeUnstageVolume failing), SLOW_PUBLISH=2s (a4's ControllerPublishVolume),
#        KEEP_WORK=1 (keep the work directory: agent, etcd and event logs, the oracle's reports)
#
# RESULT line: double attachments seen in the cloud (must be 0), second attachments the cloud refused (an attempt
# at one: must be 0, no forced detach happens here), the oracle's counts (double_attach, detach_in_use,
# deposed_controller_call: since the start; unrecorded_attachment: summed over the settles; all must be 0), claims
# and attachments left after settling (0), the settle times, mounts and re-mounts tried / done / refused, and a
# mount's CLI round trip through the cluster beside a node-only agent's in the same run.
# Needs agent/target/csi-agent.jar (./csi-agent builds it), etcd and etcdctl on the PATH, jq.
set -uo pipefail

seconds="${1:-120}"
seed="${2:-28}"
rounds="${3:-4}"
unstage_fail="${UNSTAGE_FAIL:-0.3}"
slow_publish="${SLOW_PUBLISH:-2s}"
RANDOM=$seed
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
A="$repo/csi-agent"
work="$(mktemp -d /tmp/csi-chaos.XXXXXX)"
cloud="$work/cloud"
prefix=/csi-supervisor # the agents' default cluster prefix
base=$((24000 + RANDOM % 2000 * 8))
eps="http://127.0.0.1:$base,http://127.0.0.1:$((base + 2)),http://127.0.0.1:$((base + 4))"
export CSI_AGENT_ETCD_ENDPOINTS="$eps"
declare -A agent_pid etcd_pid
monitor_pid=""
ev() { echo "$(date -u +%H:%M:%S.%3N) $*" >>"$work/events"; } # what the script did, to read beside the agents' logs

cleanup() {
  [[ -n "$monitor_pid" ]] && kill "$monitor_pid" 2>/dev/null
  for n in "${!agent_pid[@]}"; do kill -CONT "${agent_pid[$n]}" 2>/dev/null; kill -TERM "${agent_pid[$n]}" 2>/dev/null; done
  sleep 3
  pkill -f -- "--cloud $cloud" 2>/dev/null
  for n in "${!agent_pid[@]}"; do kill -KILL "${agent_pid[$n]}" 2>/dev/null; done
  for m in "${!etcd_pid[@]}"; do kill -CONT "${etcd_pid[$m]}" 2>/dev/null; kill -KILL "${etcd_pid[$m]}" 2>/dev/null; done
  if [[ -n "${KEEP_WORK:-}" ]]; then echo ">>> work directory kept: $work" >&2; else rm -rf "$work"; fi
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

config() { # node type [cluster|local] [extra plugin args, as YAML list items]
  local n=$1 t=$2
  {
    echo "data_dir: $work/$n"
    echo "metrics_address: off"
    echo "volumes: {verify_mounts: false}"
    echo "plugins:"
    echo "  - id: ebs"
    echo "    type: $t"
    echo "    command: builtin:mock-plugin"
    echo "    args: [--type, $t, --node-id, $n, --cloud, $cloud, --cloud-attach-ms, \"200\"${4:+, $4}]"
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
# The CO's records for the oracle: every attachment key in etcd, <prefix>/attachments/<plugin>/<vol>/<node> (segments
# %XX-escaped), as 'VOLUME_ID NODE_ID' lines.
recorded() {
  local key rest vol node
  ETCDCTL_API=3 etcdctl --endpoints="$eps" --command-timeout=10s get --prefix "$prefix/attachments/" --keys-only |
    while read -r key; do
      [[ -n "$key" ]] || continue
      rest="${key#"$prefix"/attachments/*/}"
      vol="${rest%/*}" node="${rest##*/}"
      printf '%b %b\n' "${vol//%/\\x}" "${node//%/\\x}"
    done
}
oracle() { # OUT.json: the cloud's report, with etcd's attachment keys as the records
  recorded >"$1.recorded" || echo ">>> etcdctl failed: the records are incomplete" >&2
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$repo/agent/target/csi-agent.jar" \
    dev.csisupervisor.mockplugin.MockCsiPlugin cloud-report --cloud "$cloud" --recorded "$1.recorded" >"$1"
}
count() { jq -r ".counts.$2 // \"?\"" "$1" 2>/dev/null || echo "?"; }

percentiles() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) {print "n=0"; exit} printf "p50 %d ms, p99 %d ms (n=%d)", a[int((NR*50+99)/100)], a[int((NR*99+99)/100)], NR}'; }

for i in 1 2 3; do start_etcd "$i"; done
i=0
for n in a1 a2 a3 a4; do
  i=$((i + 1))
  faults="--fail-fraction, \"NodeUnstageVolume=$unstage_fail:INTERNAL:target is busy\", --fault-seed, \"$((seed * 10 + i))\""
  [[ "$n" == a4 ]] && faults="$faults, --delay, \"ControllerPublishVolume=$slow_publish\""
  case $n in a1 | a4) config "$n" monolith cluster "$faults" ;; *) config "$n" node cluster "$faults" ;; esac
done
config solo monolith local # a node-only agent beside them, for the mount reference (a cloud of its own, no faults)
sed -i "s|--cloud, $cloud|--cloud, $work/solo-cloud|" "$work/solo.yaml"
for n in a1 a2 a3 a4 solo; do start_agent "$n"; done
for ((i = 0; i < 120; i++)); do
  out="$("$A" cluster plugins 2>/dev/null)"
  [[ "$out" =~ ebs[[:space:]]+2/2[[:space:]]+4/4 ]] && break
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

nodes=(a1 a2 a3 a4)
declare -A paused_until dead_until
etcd_dead=0 etcd_paused=0 etcd_member=0
tried=0 done_=0 refused=0 failed=0 n=0 kills=0 pauses=0 member_kills=0 member_pauses=0
re_tried=0 re_done=0 re_refused=0 re_failed=0
: >"$work/cluster-mount-ms"
: >"$work/settle-ms"
unsettled=0 claims_left=0 attach_left=0 unrecorded=0
try_mount() { # node volume alloc: 0 done, 1 refused (held elsewhere), 2 failed otherwise
  local t0 err
  t0=$(ms)
  if err="$(timeout 60 "$A" volume mount --config "$work/$1.yaml" --plugin ebs --volume "$2" --alloc "$3" 2>&1 >/dev/null)"; then
    echo $(($(ms) - t0)) >>"$work/cluster-mount-ms"; ev "mounted $2 on $1 for $3"; return 0
  elif [[ "$err" == *"refused: held by"* ]]; then return 1
  else echo "$1 $2 $3: $err" >>"$work/mount-failures"; ev "mount of $2 on $1 for $3 failed: ${err%%$'\n'*}"; return 2; fi
}
for ((round = 1; round <= rounds; round++)); do
end=$((SECONDS + seconds / rounds))
ev "round $round"
while ((SECONDS < end)); do
  now=$SECONDS
  for x in "${!paused_until[@]}"; do
    if ((now >= paused_until[$x])); then kill -CONT "${agent_pid[$x]}"; unset "paused_until[$x]"; ev "SIGCONT agent $x"; fi
  done
  for x in "${!dead_until[@]}"; do
    if ((now >= dead_until[$x])); then start_agent "$x"; unset "dead_until[$x]"; ev "restarted agent $x"; fi
  done
  if ((etcd_dead && now >= etcd_dead)); then start_etcd "$etcd_member"; etcd_dead=0; ev "restarted etcd m$etcd_member"; fi
  if ((etcd_paused && now >= etcd_paused)); then kill -CONT "${etcd_pid[$etcd_member]}"; etcd_paused=0; ev "SIGCONT etcd m$etcd_member"; fi
  r=$((RANDOM % 100))
  node="${nodes[RANDOM % 4]}"
  if ((r < 80)) && [[ -n "${paused_until[$node]:-}${dead_until[$node]:-}" ]]; then
    continue # its admin socket would not answer: the CLI is for live agents
  fi
  if ((r < 45)); then
    v="${vols[RANDOM % 6]}"; n=$((n + 1)); tried=$((tried + 1))
    try_mount "$node" "$v" "c$n"
    case $? in 0) done_=$((done_ + 1)) ;; 1) refused=$((refused + 1)) ;; *) failed=$((failed + 1)) ;; esac
  elif ((r < 80)); then
    line="$(timeout 60 "$A" volume list --config "$work/$node.yaml" 2>/dev/null | awk 'NR > 1 && $6 == "PUBLISHED" {print $2, $5}' | shuf -n 1 --random-source=<(yes $RANDOM))"
    if [[ -n "$line" ]]; then
      if timeout 60 "$A" volume unmount --config "$work/$node.yaml" --plugin ebs --volume "${line% *}" --alloc "${line#* }" >/dev/null 2>&1; then
        ev "unmounted ${line% *} on $node for ${line#* }"
        if ((RANDOM % 2)); then # the same alloc mounts it again at once (a task restarted in place)
          re_tried=$((re_tried + 1))
          try_mount "$node" "${line% *}" "${line#* }"
          case $? in 0) re_done=$((re_done + 1)) ;; 1) re_refused=$((re_refused + 1)) ;; *) re_failed=$((re_failed + 1)) ;; esac
        fi
      fi
    fi
  elif ((r < 88)); then
    if [[ -z "${paused_until[$node]:-}${dead_until[$node]:-}" ]]; then
      kill -KILL "${agent_pid[$node]}"; dead_until[$node]=$((now + 2 + RANDOM % 4)); kills=$((kills + 1)); ev "kill -9 agent $node"
    fi
  elif ((r < 94)); then
    if [[ -z "${paused_until[$node]:-}${dead_until[$node]:-}" ]]; then
      kill -STOP "${agent_pid[$node]}"; paused_until[$node]=$((now + 5)); pauses=$((pauses + 1)); ev "SIGSTOP agent $node"
    fi
  elif ((etcd_dead == 0 && etcd_paused == 0)); then
    etcd_member=$((1 + RANDOM % 3))
    if ((RANDOM % 2)); then
      kill -KILL "${etcd_pid[$etcd_member]}"; etcd_dead=$((now + 3)); member_kills=$((member_kills + 1)); ev "kill -9 etcd m$etcd_member"
    else
      kill -STOP "${etcd_pid[$etcd_member]}"; etcd_paused=$((now + 3 + RANDOM % 4)); member_pauses=$((member_pauses + 1))
      ev "SIGSTOP etcd m$etcd_member"
    fi
  fi
done

# Settle: every node back, every mount unmounted, until etcd holds no claim and no attachment.
t_settle=$(ms)
ev "settle $round"
for x in "${!paused_until[@]}"; do kill -CONT "${agent_pid[$x]}"; unset "paused_until[$x]"; done
for x in "${!dead_until[@]}"; do start_agent "$x"; unset "dead_until[$x]"; done
((etcd_dead)) && start_etcd "$etcd_member"
((etcd_paused)) && kill -CONT "${etcd_pid[$etcd_member]}"
etcd_dead=0 etcd_paused=0
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
[[ -n "$settled" ]] || echo "$st" >"$work/unsettled-$round"
oracle "$work/oracle-$round.json"
u="$(count "$work/oracle-$round.json" unrecorded_attachment)"
[[ "$u" =~ ^[0-9]+$ ]] && unrecorded=$((unrecorded + u))
echo ">>> round $round: settled ${settled:-NO} in $(tail -1 "$work/settle-ms") ms; oracle: double_attach" \
  "$(count "$work/oracle-$round.json" double_attach), detach_in_use $(count "$work/oracle-$round.json" detach_in_use)," \
  "deposed_controller_call $(count "$work/oracle-$round.json" deposed_controller_call), unrecorded_attachment $u" >&2
done
last="$work/oracle-$rounds.json"
refusals="$(cat "$work/a1.log" "$work/a4.log" 2>/dev/null | grep -c "is attached to node")"
doubles="$(cat "$work/doubles" 2>/dev/null || echo 0)"

# The mount's CLI round trip through the cluster beside a node-only agent, same run, same plugin.
: >"$work/solo-mount-ms"
for i in $(seq 1 20); do
  t0=$(ms); "$A" volume mount --config "$work/solo.yaml" --plugin ebs --volume "${svols[i - 1]}" --alloc "s$i" >/dev/null 2>&1 && echo $(($(ms) - t0)) >>"$work/solo-mount-ms"
done

echo "RESULT cluster-chaos | ${seconds} s, seed $seed, 3 etcd members, 4 agents (2 controllers: a1, a4), 6 single-node-writer volumes," \
  "NodeUnstageVolume failing $unstage_fail, a4's ControllerPublishVolume +$slow_publish |" \
  "agent kill -9: $kills, agent pauses (SIGSTOP past the lease): $pauses, etcd member kill -9: $member_kills, etcd member pauses: $member_pauses |" \
  "mounts tried $tried, done $done_, refused (held elsewhere) $refused, failed otherwise $failed |" \
  "re-mounts of the same alloc tried $re_tried, done $re_done, refused $re_refused, failed otherwise $re_failed |" \
  "double attachments seen $doubles, controller errors naming an attachment elsewhere $refusals |" \
  "oracle: double_attach $(count "$last" double_attach), detach_in_use $(count "$last" detach_in_use)," \
  "deposed_controller_call $(count "$last" deposed_controller_call), unrecorded_attachment $unrecorded (summed over the settles) |" \
  "$rounds rounds, not settled $unsettled, settle time $(percentiles <"$work/settle-ms") max $(sort -n "$work/settle-ms" | tail -1) ms," \
  "claims left $claims_left, attachments left $attach_left (summed over the rounds) |" \
  "mount through the CLI, cluster: $(percentiles <"$work/cluster-mount-ms"); node-only agent, same run: $(percentiles <"$work/solo-mount-ms")"
if [[ -s "$work/mount-failures" ]]; then
  echo ">>> mounts that failed otherwise (first 10):"; head -10 "$work/mount-failures"
fi
