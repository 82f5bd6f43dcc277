#!/usr/bin/env bash
# ctest driver: train_digits --distributed never hangs (contract H82, H83).
# Usage: check_nohang.sh <mpiexec> <train_digits> <work dir>
#
#  1. a stalled rank: SIGSTOP to rank 2 of a 3-rank sync job mid-run
#     (--collective-timeout 3): the job ends non-zero, and a rank's stderr
#     says DEADLINE_EXCEEDED, that rank 2 did not arrive, and which
#     collective;
#  2. a synchronous job whose ranks were given different --batch values:
#     every rank exits 2 and the chief says why (before: the chief left and
#     the workers waited in the broadcast for ever);
#  3. the issue's parameter server with the chief at --batch 32 and the
#     workers at --batch 33 (a batch is each worker's own) trains and ends
#     with status 0;
#  4. SIGTERM during start-up: rank 2 reads a data file 150 times the
#     size of the others', so while the chief and rank 1 have loaded theirs
#     and wait in the broadcast of the session's creation, rank 2 is still
#     loading; every rank gets SIGTERM then: every rank stops before the
#     first step and the job exits 0 with a result line at step 0 (before:
#     the job died with 143).
# No timing is asserted: the waits below only bound a hung run.
set -u
mpiexec=$1
exe=$2
work=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$work"
mkdir -p "$work"
# job_procs, rank_pid and kill_job: this script's own job's processes,
# found below its mpirun, never by name.
. "$(dirname "$0")/mpi_job.sh"
trap kill_job EXIT # a job still running when the script fails
fail() {
  echo "check_nohang: $*" >&2
  for f in "$work"/*.out "$work"/*.err; do [ -s "$f" ] && { echo "--- $f:" >&2; tail -20 "$f" >&2; }; done
  exit 1
}
run() { # run NAME ARGS...: mpirun in the background, pid in $job
  local name=$1
  shift
  "$mpiexec" --oversubscribe "$@" >"$work/$name.out" 2>"$work/$name.err" &
  job=$!
}
wait_for() { # wait_for FILE PATTERN SECS: until FILE has a line matching PATTERN
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
common=(--no-progress --log-every 0)

# 1. a stalled rank
run stall -np 3 "$exe" "${common[@]}" --distributed sync --batch 33 --steps 100000000 --collective-timeout 3 \
  --checkpoint-dir "$work/stall" --save-steps 100
wait_for "$work/stall.err" "training rows" 120 || fail "stall: the job did not start"
for ((i = 0; i < 1200; i++)); do compgen -G "$work/stall/*.index" >/dev/null || compgen -G "$work/stall/*.safetensors" >/dev/null && break; sleep 0.1; done
p2=$(rank_pid 2)
[ -n "$p2" ] || fail "stall: no rank 2"
kill -STOP "$p2"
bounded_wait 120
rc=$?
[ "$rc" -ne 0 ] || fail "stall: the job exited 0 with rank 2 stopped"
grep -q "DEADLINE_EXCEEDED" "$work/stall.err" || fail "stall: no DEADLINE_EXCEEDED on stderr"
grep -q "rank(s) 2 did not arrive" "$work/stall.err" || fail "stall: the message does not name rank 2"
grep -q "collective #[0-9]* (" "$work/stall.err" || fail "stall: the message does not name the collective"
echo "stall: exit $rc, $(grep -m1 -o 'collective #[0-9]* ([^)]*)[^:]*' "$work/stall.err")"

# 2. sync ranks with different batches
run batch -np 1 "$exe" "${common[@]}" --distributed sync --batch 32 : -np 2 "$exe" "${common[@]}" --distributed sync --batch 33
bounded_wait 120
rc=$?
[ "$rc" -eq 2 ] || fail "batch: exit $rc, not 2"
grep -q "batch differs between ranks: rank 0 has 32, rank 1 has 33" "$work/batch.err" || fail "batch: no reason given"
echo "batch: exit 2"

# 3. the issue's parameter server
run ps -np 1 "$exe" "${common[@]}" --distributed ps --batch 32 --steps 300 --collective-timeout 30 : \
  -np 2 "$exe" "${common[@]}" --distributed ps --batch 33 --steps 300 --collective-timeout 30
bounded_wait 300 || fail "ps: exit $?"
grep -q "^result: step=300 " "$work/ps.out" || fail "ps: no result line at step 300"
echo "ps: exit 0"

# 4. SIGTERM during start-up
data=$(dirname "$0")/data/digits.csv.gz
for ((i = 0; i < 150; i++)); do zcat "$data"; done >"$work/big.csv" || fail "term: cannot write the big data file"
# Ranks 0 and 1 loaded their data (their MPI_Init is done, so rank 2 is
# past its start too, its signal handler installed) while rank 2 still
# loads: on a loaded machine rank 2 may finish first, and then the job is
# killed and started again, at most 5 times.
for ((attempt = 1; ; attempt++)); do
  run term -np 2 "$exe" "${common[@]}" --distributed sync --batch 33 --steps 100000000 --collective-timeout 600 : \
    -np 1 "$exe" "${common[@]}" --distributed sync --batch 33 --steps 100000000 --collective-timeout 600 \
    --data "$work/big.csv"
  # The ranks' pids first (each is looked for among the job's processes),
  # so that nothing slows the signals once rank 2 is seen still loading.
  for ((i = 0; i < 1200; i++)); do
    p0=$(rank_pid 0) p1=$(rank_pid 1) p2=$(rank_pid 2)
    [ -n "$p0" ] && [ -n "$p1" ] && [ -n "$p2" ] && break
    sleep 0.05
  done
  [ -n "$p0" ] && [ -n "$p1" ] && [ -n "$p2" ] || fail "term: a rank is missing"
  for ((i = 0; i < 1200; i++)); do
    [ "$(grep -c "digits.csv.gz: .* training rows" "$work/term.err" 2>/dev/null)" -ge 2 ] && break
    sleep 0.05
  done
  grep -q "big.csv: .* training rows" "$work/term.err" || break
  [ "$attempt" -lt 5 ] || fail "term: rank 2 loaded its big file before the others loaded theirs, 5 times"
  echo "term: rank 2 loaded its big file before the others loaded theirs; again"
  kill_job
  wait "$job"
  job=
done
kill -TERM "$p0" "$p1" "$p2"
bounded_wait 300
rc=$?
[ "$rc" -eq 0 ] || fail "term: exit $rc, not 0"
grep -q "^result: step=0 " "$work/term.out" || fail "term: no result line at step 0"
grep -q "big.csv: .* training rows" "$work/term.err" || fail "term: rank 2 did not finish its start-up"
rm -f "$work/big.csv"
echo "term: exit 0, $(cat "$work/term.out")"
