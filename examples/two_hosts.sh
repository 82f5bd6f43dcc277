#!/usr/bin/env bash
# two_hosts.sh — two "hosts" on one Linux machine for MPI jobs over TCP: two
# network namespaces joined by a veth pair with private addresses, and the
# launcher agent and hostfile that let mpirun, started in the first, place
# ranks in both (docs/distributed.md, "Two hosts on one machine").
#
#   two_hosts.sh [--dir DIR] up                   make them (needs root: CAP_NET_ADMIN)
#   two_hosts.sh [--dir DIR] run -- MPIRUN-ARGS   mpirun in host a over them
#   two_hosts.sh [--dir DIR] down                 remove what `up` made
#   two_hosts.sh [--dir DIR] show                 what `up` made
#
# `up` names everything after its own pid: namespaces hooked-<pid>-a and
# hooked-<pid>-b, veth ends hk<pid>a (in a) and hk<pid>b (in b), addresses
# 10.231.0.1/24 (a) and 10.231.0.2/24 (b), lo up in each; it records each
# object in DIR/state the moment it exists, and `down` removes exactly what
# DIR/state lists (nothing else, whatever its name), then DIR. DIR (default
# ${TMPDIR:-/tmp}/hooked-two-hosts) also holds the hostfile (2 slots per
# host) and the agent: mpirun reaches host b through it
# (`--mca plm_rsh_agent`), which runs `ip netns exec hooked-<pid>-b` for b's
# address and refuses any other host. `run` adds to the arguments:
#   --hostfile DIR/hosts --mca plm_rsh_agent DIR/agent --mca btl tcp,self
#   --mca btl_tcp_if_include 10.231.0.0/24 --mca oob_tcp_if_include 10.231.0.0/24
# so every message between ranks, even two on one host, crosses TCP on the
# veth pair; and, when the machine has fewer cores than the 4 slots,
# --mca mpi_yield_when_idle 1: the two hosts share its cores, which Open MPI
# cannot see (it trusts the hostfile's slots), and a rank that spins while
# it waits takes the core from the rank it waits for (a 4-rank train_digits
# job on 2 cores: 0.84 ms a step with it, 17.6 ms without). By slot, ranks
# 0 and 1 run in a, 2 and 3 in b. MPIEXEC names the mpirun (default:
# mpirun). `run` execs it: its pid is mpirun's.
#
# Exit status: 0; 77 when namespaces cannot be made here (not root, no `ip`,
# no CAP_NET_ADMIN: the message says which); 2 for a usage error; 1 else.
# A failed `up` removes what it made. Namespaces outlive a process killed
# with SIGKILL: `ip netns list | grep hooked-` shows them, and `down` on the
# same DIR removes them.
set -u

NET=10.231.0
dir=${TMPDIR:-/tmp}/hooked-two-hosts

usage() {
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() {
  echo "two_hosts.sh: $*" >&2
  exit 1
}
skip() {
  echo "two_hosts.sh: cannot make network namespaces here: $*" >&2
  exit 77
}

# Why this machine cannot run `up`, or nothing.
cannot() {
  [ "$(id -u)" -eq 0 ] || { echo "not root (network namespaces need CAP_NET_ADMIN)"; return; }
  command -v ip >/dev/null 2>&1 || { echo "no 'ip' command (Debian: apt-get install iproute2)"; return; }
  ip netns help 2>&1 | grep -q 'ip netns add' || { echo "this 'ip' has no 'netns' (iproute2 too old)"; return; }
}

# record KIND NAME: one line of DIR/state, written before the next object.
record() { echo "$1 $2" >>"$dir/state"; }

down() {
  local kind name
  [ -f "$dir/state" ] || { rm -rf "$dir"; return 0; }
  # Links first (deleting one end of a veth pair deletes both), then the
  # namespaces, each only as recorded; a missing one is gone already.
  while read -r kind name; do
    case $kind in
      veth) ip link del "$name" 2>/dev/null ;;
      veth-in) ip -n "${name%%/*}" link del "${name#*/}" 2>/dev/null ;;
    esac
  done <"$dir/state"
  while read -r kind name; do
    [ "$kind" = netns ] || continue
    ip netns del "$name" 2>/dev/null
    ! ip netns list | awk '{ print $1 }' | grep -qx "$name" || die "could not remove namespace $name (a process still in it?)"
  done <"$dir/state"
  rm -rf "$dir"
}

up() {
  local why a b va vb err
  why=$(cannot)
  [ -z "$why" ] || skip "$why"
  [ ! -e "$dir/state" ] || die "$dir/state exists: '$0 --dir $dir down' first"
  mkdir -p "$dir" || die "cannot create $dir"
  : >"$dir/state"
  a=hooked-$$-a b=hooked-$$-b va=hk$$a vb=hk$$b
  # From here on a failure removes what was made.
  if ! err=$(ip netns add "$a" 2>&1); then
    rm -rf "$dir"
    case $err in
      *"Operation not permitted"* | *"Permission denied"*) skip "'ip netns add' was refused: $err (no CAP_NET_ADMIN?)" ;;
      *) die "'ip netns add $a' failed: $err" ;;
    esac
  fi
  record netns "$a"
  step() { # step COMMAND...: run it, or undo everything and fail
    local out
    out=$("$@" 2>&1) && return 0
    down
    case $out in
      *"Operation not permitted"*) skip "'$*' was refused: $out (no CAP_NET_ADMIN?)" ;;
    esac
    die "'$*' failed: $out"
  }
  step ip netns add "$b"
  record netns "$b"
  step ip link add "$va" type veth peer name "$vb"
  record veth "$va"
  step ip link set "$va" netns "$a"
  sed -i "/^veth $va\$/d" "$dir/state"
  record veth-in "$a/$va"
  step ip link set "$vb" netns "$b"
  step ip -n "$a" addr add "$NET.1/24" dev "$va"
  step ip -n "$b" addr add "$NET.2/24" dev "$vb"
  for ns in "$a" "$b"; do step ip -n "$ns" link set lo up; done
  step ip -n "$a" link set "$va" up
  step ip -n "$b" link set "$vb" up
  printf '%s slots=2\n%s slots=2\n' "$NET.1" "$NET.2" >"$dir/hosts"
  # mpirun calls the agent as it would ssh: AGENT HOST COMMAND-WORDS...,
  # the words one command line for the remote shell.
  cat >"$dir/agent" <<EOF
#!/bin/sh
# two_hosts.sh's launcher agent: host $NET.2 is namespace $b.
host=\$1
shift
[ "\$host" = "$NET.2" ] || { echo "two_hosts agent: unknown host '\$host' (only $NET.2)" >&2; exit 255; }
exec ip netns exec "$b" /bin/sh -c "\$*"
EOF
  chmod +x "$dir/agent" || { down; die "cannot write $dir/agent"; }
  echo "$a" >"$dir/host-a"
  echo "two_hosts.sh: up: $a ($NET.1, $va) and $b ($NET.2, $vb); state in $dir"
}

run() {
  [ -f "$dir/host-a" ] || die "not up: no $dir/host-a ('$0 --dir $dir up' first)"
  local a yield=()
  a=$(cat "$dir/host-a")
  [ "$(nproc 2>/dev/null || echo 1)" -ge 4 ] || yield=(--mca mpi_yield_when_idle 1)
  exec ip netns exec "$a" "${MPIEXEC:-mpirun}" --hostfile "$dir/hosts" --mca plm_rsh_agent "$dir/agent" \
    --mca btl tcp,self --mca btl_tcp_if_include "$NET.0/24" --mca oob_tcp_if_include "$NET.0/24" "${yield[@]}" "$@"
}

while [ $# -gt 0 ]; do
  case $1 in
    --dir)
      [ $# -ge 2 ] || usage
      dir=$2
      shift 2
      ;;
    up | down | show)
      [ $# -eq 1 ] || usage
      case $1 in
        up) up ;;
        down) down ;;
        show) cat "$dir/state" 2>/dev/null || die "not up: no $dir/state" ;;
      esac
      exit 0
      ;;
    run)
      [ $# -ge 2 ] && [ "$2" = -- ] || usage
      shift 2
      run "$@"
      ;;
    *) usage ;;
  esac
done
usage
