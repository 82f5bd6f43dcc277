#!/usr/bin/env bash
# ctest driver: train_digits --distributed sync across two hosts — two
# network namespaces joined by a veth pair (two_hosts.sh), 2 ranks in each,
# every message over Open MPI's TCP transport.
# Usage: check_two_hosts.sh <mpiexec> <train_digits> <work dir>
#
#  1. a 4-rank job across the two hosts ends as the same job on one host
#     (shared memory): the same result line (loss and test accuracy
#     >= 0.95) and a byte-identical final checkpoint — the averaging's
#     order does not depend on the transport;
#  2. SIGKILL to rank 2 (host b) mid-run: the job exits non-zero and no
#     process of it is left, on either host; relaunched across the two
#     hosts, it resumes from the chief's newest checkpoint and its final
#     checkpoint is byte-identical to the uninterrupted run's.
# Exit 77 (ctest: skipped) with the reason where namespaces cannot be made
# (not root, no `ip`, no CAP_NET_ADMIN). Whatever happens — failure,
# SIGINT, SIGTERM — the trap kills the job still running and removes the
# namespaces and the veth pair this script made, and nothing else.
# No timing is asserted: the waits below only bound a hung run.
set -u
mpiexec=$1
exe=$2
work=$3
here=$(dirname "$0")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export MPIEXEC=$mpiexec
rm -rf "$work"
mkdir -p "$work"
hosts=$work/hosts # two_hosts.sh's state: what `down` removes
# rank_pid, bounded_wait, wait_for_file, kill_rank, kill_job: this script's
# own job's processes, found below its mpirun, never by name.
. "$here/mpi_job.sh"
cleanup() {
  kill_job
  [ -n "${job:-}" ] && wait "$job" 2>/dev/null
  job=
  bash "$here/two_hosts.sh" --dir "$hosts" down
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
fail() {
  echo "check_two_hosts: $*" >&2
  for f in "$work"/*.out "$work"/*.err; do [ -s "$f" ] && { echo "--- $f:" >&2; tail -20 "$f" >&2; }; done
  exit 1
}

bash "$here/two_hosts.sh" --dir "$hosts" up
rc=$?
[ "$rc" -eq 77 ] && { trap - EXIT; echo "check_two_hosts: SKIPPED (see above)"; exit 77; }
[ "$rc" -eq 0 ] || fail "two_hosts.sh up failed ($rc)"

steps=20000
common=(--no-progress --log-every 0 --distributed sync --batch 32 --steps "$steps" --save-steps 1000)
run2() { # run2 NAME ARGS...: the job across the two hosts, in the background, mpirun's pid in $job
  local name=$1
  shift
  bash "$here/two_hosts.sh" --dir "$hosts" run -- -np 4 "$exe" "$@" >"$work/$name.out" 2>"$work/$name.err" &
  job=$!
}
run1() { # run1 NAME ARGS...: the job on this host
  local name=$1
  shift
  "$mpiexec" --oversubscribe -np 4 "$exe" "$@" >"$work/$name.out" 2>"$work/$name.err" &
  job=$!
}
result() { grep '^result: ' "$work/$1.out"; }

# 1. the same job on one host and across two
run1 one "${common[@]}" --checkpoint-dir "$work/one"
bounded_wait 600 || fail "the 4-rank job on one host exited $?"
run2 ref "${common[@]}" --checkpoint-dir "$work/ref"
bounded_wait 900 || fail "the 4-rank job across two hosts exited $?"
for r in 2 3; do
  grep -q "rank $r/4: step=$steps " "$work/ref.err" || fail "rank $r did not finish step $steps"
done
a=$(sed -n 's/^result: .*test_accuracy=\([0-9.]*\) stop=.*$/\1/p' "$work/ref.out")
[ -n "$a" ] || fail "two hosts: no result line"
awk -v a="$a" 'BEGIN { exit !(a >= 0.95) }' || fail "two hosts: test accuracy $a < 0.95"
[ "$(result ref)" = "$(result one)" ] || fail "two hosts: '$(result ref)', one host: '$(result one)'"
# Sharded checkpoints: every rank's shard, and the index.
for f in "$work/one/model.ckpt-$steps".shard-*.safetensors "$work/one/model.ckpt-$steps.shards"; do
  cmp "$f" "$work/ref/${f##*/}" || fail "the final checkpoints of the one-host and the two-host jobs differ: ${f##*/}"
done
echo "two hosts: $(result ref); the same line and final checkpoint as on one host"

# 2. SIGKILL to rank 2 (host b), relaunch, compare with the uninterrupted run
run2 kill "${common[@]}" --checkpoint-dir "$work/kill"
wait_for_file "$work/kill/model.ckpt-2000.*" 600 || fail "the job to kill wrote no checkpoint of step 2000"
kill_rank 2 "$work/kill" "$steps" 120
# shellcheck disable=SC2154 # victim, code, killed_after, newest: set by kill_rank
echo "killed rank 2 (pid $victim, host b): the job exited $code after $killed_after s; newest checkpoint step $newest"
run2 resume "${common[@]}" --checkpoint-dir "$work/kill"
bounded_wait 900 || fail "the relaunched job exited $?"
grep -q "^result: step=$steps " "$work/resume.out" || fail "the relaunched job did not reach step $steps"
for f in "$work/ref/model.ckpt-$steps".shard-*.safetensors "$work/ref/model.ckpt-$steps.shards"; do
  cmp "$f" "$work/kill/${f##*/}" || fail "the resumed run's final checkpoint differs from the uninterrupted run's: ${f##*/}"
done
echo "resumed from step $newest: every shard of model.ckpt-$steps is byte-identical to the uninterrupted run's"
