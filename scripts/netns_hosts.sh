# Emulated hosts for the suite's scripts (sourced, not run): network namespaces
# on a bridge, each with its own address, as separate machines on one network.
# A host's own /dev/shm is the caller's part: a process started in the host with
# `unshare -m` and a tmpfs on /dev/shm (see elastic_hosts.sh, ssh_hosts.sh).
#
#   source scripts/netns_hosts.sh
#   netns_hosts_init rws$tag 10.219.$tag 3   # names and addresses; nothing made yet
#   trap 'netns_hosts_down' EXIT             # removes whatever was made
#   netns_hosts_up                           # the bridge (NET.1) and hosts 1..3 (NET.2..)
#   ip netns exec "$(netns_host 2)" ...      # runs in host 2; $(netns_address 2): NET.3
#
# Names stay short (interfaces: 15 characters): the bridge PREFIXb, host i's
# namespace PREFIX-hI and its link PREFIXvI.

netns_hosts_init() {  # PREFIX NET COUNT
  netns_prefix=$1 netns_net=$2 netns_count=$3
}
netns_host() { echo "$netns_prefix-h$1"; }
netns_address() { echo "$netns_net.$(($1 + 1))"; }

netns_hosts_up() {
  local i
  ip link add "${netns_prefix}b" type bridge
  ip addr add "$netns_net.1/24" dev "${netns_prefix}b"
  ip link set "${netns_prefix}b" up
  for ((i = 1; i <= netns_count; ++i)); do
    ip netns add "$(netns_host $i)"
    ip link add "${netns_prefix}v$i" type veth peer name eth0 netns "$(netns_host $i)"
    ip link set "${netns_prefix}v$i" master "${netns_prefix}b" up
    ip -n "$(netns_host $i)" addr add "$(netns_address $i)/24" dev eth0
    ip -n "$(netns_host $i)" link set eth0 up
    ip -n "$(netns_host $i)" link set lo up
  done
}

# Kills every process in the hosts, deletes them, their links and the bridge;
# quiet about what was never made.
netns_hosts_down() {
  local i
  for ((i = 1; i <= netns_count; ++i)); do
    ip netns pids "$(netns_host $i)" 2> /dev/null | xargs -r kill -KILL 2> /dev/null || true
    ip link del "${netns_prefix}v$i" 2> /dev/null || true
    ip netns del "$(netns_host $i)" 2> /dev/null || true
  done
  ip link del "${netns_prefix}b" 2> /dev/null || true
}
