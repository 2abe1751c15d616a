#!/usr/bin/env bash
# Runs one job over emulated hosts on this machine: H network namespaces on a
# bridge, each with its own mount namespace and a private tmpfs on /dev/shm that
# only its workers share (so workers on one "host" use shared memory, and workers on
# different ones talk gRPC, as on separate machines). W workers per host, each with
# TF_CONFIG naming every worker's address, and a shared cluster token. Needs root.
# Prints each worker's output prefixed with [worker:i]; exits with the first
# failing worker's code (0 when all succeeded). Everything it made is removed.
#
#   sudo scripts/emulated_hosts.sh --hosts=2 --workers_per_host=2 [--timeout_s=300] \
#     [--mtu=1500] [--rate=10gbit] [--cores_per_host=1] -- bazel-bin/bench/allreduce_bench --allreduce_algorithm=hierarchical
#
# --mtu sets every link's MTU (default 1500, a NIC's; loopback has 65536); --rate
# shapes what each host sends with tc's token bucket (tbf), as a link of that rate
# would (default: unshaped). --cores_per_host=N gives each host N of this machine's
# cores (host h: cores h*N to h*N+N-1 of those it may use, modulo their number) and
# binds each of its workers to its share of them (N / W, at least 1), as a scheduler
# binds tasks, so that the workers' automatic choices (threads per kernel, the
# overlap thread, input prefetch) follow the cores they would have; 0 (default): not
# pinned, every worker sees all of this machine's cores.
#
# Worker i runs on host i / W (ranks of a host are contiguous). Addresses are
# 10.214.<pid % 250>.<host + 1>, ports 2222 + local index.
set -euo pipefail
hosts=2; per_host=2; timeout_s=300; mtu=1500; rate=""; cores_per_host=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --hosts=*) hosts=${1#*=};;
    --workers_per_host=*) per_host=${1#*=};;
    --timeout_s=*) timeout_s=${1#*=};;
    --mtu=*) mtu=${1#*=};;
    --rate=*) rate=${1#*=};;
    --cores_per_host=*) cores_per_host=${1#*=};;
    --) shift; break;;
    *) echo "emulated_hosts.sh: unknown argument $1 (the command follows --)" >&2; exit 2;;
  esac
  shift
done
if [[ $# -eq 0 ]]; then echo "emulated_hosts.sh: no command after --" >&2; exit 2; fi
if ! [[ $cores_per_host =~ ^[0-9]+$ ]]; then
  echo "emulated_hosts.sh: --cores_per_host=$cores_per_host: expected a number of cores" >&2; exit 2
fi
cores_per_host=$((10#$cores_per_host))
# The cores this script may use ("0-3,8" in /proc: expanded), for --cores_per_host.
allowed=()
IFS=, read -ra ranges <<< "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
for r in "${ranges[@]}"; do
  for ((c = ${r%-*}; c <= ${r#*-}; ++c)); do allowed+=("$c"); done
done
if ((cores_per_host > ${#allowed[@]})); then
  echo "emulated_hosts.sh: --cores_per_host=$cores_per_host: this machine lets it use ${#allowed[@]} cores" >&2
  exit 2
fi
# Worker `l` of host `h`: its share of the host's cores ("2,3"), as a scheduler would
# bind it; empty when not pinned.
worker_cores() {
  local h=$1 l=$2 share list="" c
  ((cores_per_host > 0)) || return 0
  share=$((cores_per_host / per_host > 0 ? cores_per_host / per_host : 1))
  for ((c = 0; c < share; ++c)); do
    list+="${list:+,}${allowed[(h * cores_per_host + (l * share + c) % cores_per_host) % ${#allowed[@]}]}"
  done
  echo "$list"
}
if [[ $(id -u) != 0 ]]; then echo "emulated_hosts.sh: needs root (network namespaces)" >&2; exit 2; fi
ip=/bin/ip
prefix="rwe$$-"
subnet="10.214.$(( $$ % 250 ))"
work=$(mktemp -d)
namespaces=()
cleanup() {
  # Every process still in a namespace (workers of a failed or interrupted run) is
  # stopped before the namespace goes.
  for n in "${namespaces[@]}"; do
    "$ip" netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
  done
  for n in "${namespaces[@]}"; do "$ip" netns del "$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Namespaces of runs that were killed before their cleanup (rwe<pid>-*, that
# script gone).
for n in $("$ip" netns list | sed -n 's/^\(rwe[0-9]*-[h0-9]*\).*/\1/p'); do
  owner=${n#rwe}; owner=${owner%%-*}
  if ! kill -0 "$owner" 2>/dev/null; then
    "$ip" netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    "$ip" netns del "$n" 2>/dev/null || true
  fi
done

"$ip" netns add "${prefix}h"; namespaces+=("${prefix}h")
"$ip" -n "${prefix}h" link add br0 type bridge
"$ip" -n "${prefix}h" link set br0 up
for ((h = 0; h < hosts; ++h)); do
  "$ip" netns add "${prefix}$h"; namespaces+=("${prefix}$h")
  "$ip" link add "v$h" netns "${prefix}h" type veth peer name eth0 netns "${prefix}$h"
  "$ip" -n "${prefix}h" link set "v$h" mtu "$mtu" master br0 up
  "$ip" -n "${prefix}$h" addr add "$subnet.$((h + 1))/24" dev eth0
  "$ip" -n "${prefix}$h" link set eth0 mtu "$mtu" up
  if [[ -n $rate ]]; then
    "$ip" netns exec "${prefix}$h" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 10ms
  fi
  "$ip" -n "${prefix}$h" link set lo up
done
"$ip" -n "${prefix}h" link set br0 mtu "$mtu"

workers=""
for ((i = 0; i < hosts * per_host; ++i)); do
  workers+="${workers:+,}\"$subnet.$((i / per_host + 1)):$((2222 + i % per_host))\""
done
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/token")

# One script per host: mounts the host's /dev/shm, starts its workers, waits.
for ((h = 0; h < hosts; ++h)); do
  script="$work/host$h.sh"
  {
    echo 'mount -t tmpfs tmpfs /dev/shm || exit 1'
    for ((l = 0; l < per_host; ++l)); do
      i=$((h * per_host + l))
      tf="{\"cluster\":{\"worker\":[$workers]},\"task\":{\"type\":\"worker\",\"index\":$i}}"
      pin=""
      cores=$(worker_cores "$h" "$l")
      if [[ -n $cores ]]; then pin="taskset -c $cores "; fi
      # Each worker records its exit code and when it exited.
      printf '(TF_CONFIG=%q RINGWORK_CLUSTER_TOKEN_FILE=%q %s"$@" > %q 2>&1; echo "$? $(date +%%s%%N)" > %q) &\n' \
        "$tf" "$work/token" "$pin" "$work/worker$i.log" "$work/worker$i.code"
    done
    echo 'wait'
  } > "$script"
done
host_pids=()
for ((h = 0; h < hosts; ++h)); do
  timeout -s KILL "$timeout_s" "$ip" netns exec "${prefix}$h" unshare -m \
    bash "$work/host$h.sh" "$@" &
  host_pids+=($!)
done
for pid in "${host_pids[@]}"; do { wait "$pid"; } 2>/dev/null || true; done

# The first worker to fail (in time) gives the exit code; one killed at the
# timeout (no code recorded) counts as 137, after every recorded failure.
first_failure=0 first_time=""
for ((i = 0; i < hosts * per_host; ++i)); do
  sed "s/^/[worker:$i] /" "$work/worker$i.log" 2>/dev/null || true
  read -r code when 2>/dev/null < "$work/worker$i.code" || { code=137; when=99999999999999999999; }
  if [[ $code != 0 ]] && { [[ -z $first_time ]] || [[ $when < $first_time ]]; }; then
    first_failure=$code first_time=$when
  fi
done
exit "$first_failure"
