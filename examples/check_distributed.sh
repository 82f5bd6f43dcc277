#!/usr/bin/env bash
# ctest driver: train_digits --distributed under mpirun (issue 10, contract
# group S). Usage: check_distributed.sh <mpiexec> <train_digits> <work dir>
#
#  1. sync with 1, 2 and 4 ranks, and ps with a chief and 3 workers, each
#     reach test accuracy >= 0.95; a waiting ps worker says when it starts
#     training; the ps chief's result line has a real loss (the final
#     model's over the training set: the same after a relaunch on its final
#     checkpoint); every line of the 4-rank jobs names its rank;
#  2. SIGKILL to one rank of a 3-rank sync job mid-run, one that writes its
#     checkpoints with --async (each rank's background writer saves its
#     shard): the job exits non-zero and no rank is left running;
#     relaunched, it resumes from the newest checkpoint and every shard of
#     its final checkpoint (each rank writes its own: sharded checkpoints)
#     is byte-identical to an uninterrupted 3-rank run's that saved
#     synchronously (deterministic averaging, the same steps saved);
#  3. SIGTERM to one rank only: every rank stops after the same step, the
#     job exits 0, and the final checkpoint is of that step;
#  4. SIGUSR1 to one rank of a job given --stop-signals INT,TERM,USR1: the
#     same, and the chief's result line says stop=signal:SIGUSR1;
#  5. the 3 ranks' checkpoint resumed by 2 ranks, then by 4 (a global batch
#     of 33 split 9, 8, 8, 8): each restores the whole model, trains on and
#     writes a checkpoint of its own rank count that verifies.
# No timing is asserted: the waits below only bound a hung run.
set -u
mpiexec=$1
exe=$2
work=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$work"
mkdir -p "$work"
# rank_pid, bounded_wait, wait_for_file, kill_rank, kill_job: this script's
# own job's processes, found below its mpirun, never by name.
. "$(dirname "$0")/mpi_job.sh"
trap kill_job EXIT # a job still running when the script fails
fail() {
  echo "check_distributed: $*" >&2
  for f in "$work"/*.out "$work"/*.err; do [ -s "$f" ] && { echo "--- $f:" >&2; tail -20 "$f" >&2; }; done
  exit 1
}
run() { # run NAME NP ARGS...: mpirun in the background, pid in $job
  local name=$1 np=$2
  shift 2
  "$mpiexec" --oversubscribe -np "$np" "$exe" --no-progress --log-every 0 "$@" >"$work/$name.out" 2>"$work/$name.err" &
  # shellcheck disable=SC2034 # job: read by mpi_job.sh
  job=$!
}
accuracy() { sed -n 's/^result: .*test_accuracy=\([0-9.]*\) stop=.*$/\1/p' "$work/$1.out"; }
check_accuracy() {
  local a
  a=$(accuracy "$1")
  [ -n "$a" ] || fail "$1: no result line"
  awk -v a="$a" 'BEGIN { exit !(a >= 0.95) }' || fail "$1: test accuracy $a < 0.95"
  echo "$1: test_accuracy $a"
}

# 1. accuracy
for np in 1 2 4; do # --batch 32: 32, 16 and 8 rows per rank
  run sync$np "$np" --distributed sync
  bounded_wait 300 || fail "sync with $np ranks exited $?"
  check_accuracy sync$np
done
run ps4 4 --distributed ps --ps-wait-k 100 --checkpoint-dir "$work/ps4"
bounded_wait 300 || fail "ps with 4 ranks exited $?"
check_accuracy ps4
grep -q "rank 2/4: Waiting for global step 69 before starting training" "$work/ps4.err" ||
  fail "ps4: worker task 1 (rank 2) did not wait for step int(100 log 2) = 69"
grep -q "rank 2/4: Global step 69 reached (current step [0-9]*) after waiting .* secs; starting training." \
  "$work/ps4.err" || fail "ps4: worker task 1 (rank 2) did not say when it started training"
# The chief trains on no batch: its loss is the final model's over the
# training set — a number, and the same when the job is relaunched on its
# final checkpoint (the chief restores it and stops at once).
loss=$(sed -n 's/^result: .* loss=\([^ ]*\) .*$/\1/p' "$work/ps4.out")
awk -v l="$loss" 'BEGIN { exit !(l + 0 == l && l > 0 && l < 1) }' || fail "ps4: the chief's loss is '$loss'"
run ps4again 4 --distributed ps --ps-wait-k 100 --checkpoint-dir "$work/ps4"
bounded_wait 300 || fail "ps relaunched on its final checkpoint exited $?"
[ "$(cat "$work/ps4again.out")" = "$(cat "$work/ps4.out")" ] ||
  fail "ps4: relaunched on the final checkpoint, the chief says '$(cat "$work/ps4again.out")', not '$(cat "$work/ps4.out")'"
echo "ps4: the chief's loss $loss, the final model's, again after a relaunch"
# Every line a rank logs names it.
for f in sync4 ps4; do
  bad=$(grep -v '^\(train_digits: \)\?rank [0-3]/4: \|^[0-9-]* [0-9:.]*: [IWED] hooked\] rank [0-3]/4: ' "$work/$f.err" | head -3)
  [ -z "$bad" ] || fail "$f: lines without the rank: $bad"
done

# 2. SIGKILL one rank, relaunch, compare with an uninterrupted run
steps=20000
common=(--distributed sync --batch 33 --steps "$steps" --save-steps 500)
run ref 3 "${common[@]}" --checkpoint-dir "$work/ref"
bounded_wait 600 || fail "the uninterrupted 3-rank run exited $?"
run kill 3 "${common[@]}" --async --checkpoint-dir "$work/kill"
wait_for_file "$work/kill/model.ckpt-2000.*" 300 || fail "the job to kill wrote no checkpoint of step 2000"
kill_rank 1 "$work/kill" "$steps" 60
# shellcheck disable=SC2154 # code, newest: set by kill_rank
echo "killed rank 1 (pid $victim): the job exited $code; newest checkpoint step $newest"
run resume 3 "${common[@]}" --async --checkpoint-dir "$work/kill"
bounded_wait 600 || fail "the relaunched job exited $?"
grep -q "result: step=$steps " "$work/resume.out" || fail "the relaunched job did not reach step $steps"
for f in "$work/ref/model.ckpt-$steps".shard-*-of-00003.safetensors "$work/ref/model.ckpt-$steps.shards"; do
  cmp "$f" "$work/kill/${f##*/}" || fail "the resumed run's final checkpoint differs from the uninterrupted run's: ${f##*/}"
done
echo "resumed from step $newest (--async): every shard of model.ckpt-$steps is byte-identical to the uninterrupted run's"

# 3. SIGTERM to one rank only
run term 3 --distributed sync --batch 33 --steps 1000000 --save-steps 5000 --checkpoint-dir "$work/term"
wait_for_file "$work/term/model.ckpt-5000.*" 300 || fail "the job to signal wrote no checkpoint of step 5000"
victim=$(rank_pid 2)
[ -n "$victim" ] || fail "cannot find rank 2's process"
kill -TERM "$victim"
bounded_wait 120 || fail "after SIGTERM to rank 2 the job exited $?"
step=$(sed -n 's/^result: step=\([0-9]*\) .*/\1/p' "$work/term.out")
[ -n "$step" ] || fail "the chief printed no result after the SIGTERM"
for r in 1 2; do
  grep -q "rank $r/3: step=$step " "$work/term.err" || fail "rank $r did not stop at the chief's step $step"
done
[ -f "$work/term/model.ckpt-$step.shards" ] || fail "no final checkpoint of step $step"
newest=$(ls "$work/term" | sed -n 's/^model\.ckpt-\([0-9]*\)\.shards$/\1/p' | sort -n | tail -1)
[ "$newest" = "$step" ] || fail "the newest checkpoint is of step $newest, not the final step $step"
echo "SIGTERM to rank 2 (pid $victim): every rank stopped after step $step, exit 0, final checkpoint of it"

# 4. SIGUSR1 (Slurm's warning before the time limit, --signal=USR1@60) to
#    one rank of a job given --stop-signals INT,TERM,USR1: every rank stops
#    after the same step, exit 0, the chief's result says why
run usr1 3 --distributed sync --batch 33 --steps 1000000 --save-steps 500 --stop-signals INT,TERM,USR1 \
  --checkpoint-dir "$work/usr1"
wait_for_file "$work/usr1/model.ckpt-500.*" 300 || fail "the job to signal wrote no checkpoint of step 500"
victim=$(rank_pid 1)
[ -n "$victim" ] || fail "cannot find rank 1's process"
kill -USR1 "$victim"
bounded_wait 120 || fail "after SIGUSR1 to rank 1 the job exited $?"
step=$(sed -n 's/^result: step=\([0-9]*\) .* stop=signal:SIGUSR1$/\1/p' "$work/usr1.out")
[ -n "$step" ] || fail "the chief's result line does not say stop=signal:SIGUSR1"
for r in 1 2; do
  grep -q "rank $r/3: step=$step " "$work/usr1.err" || fail "rank $r did not stop at the chief's step $step"
done
[ -f "$work/usr1/model.ckpt-$step.shards" ] || fail "no final checkpoint of step $step"
echo "SIGUSR1 to rank 1 (pid $victim): every rank stopped after step $step, exit 0, stop=signal:SIGUSR1"

# 5. another rank count: the uninterrupted run's checkpoint resumed by 2 ranks, then by 4
cp -r "$work/ref" "$work/reshard"
run reshard2 2 --distributed sync --batch 33 --steps $((steps + 500)) --save-steps 500 --checkpoint-dir "$work/reshard"
bounded_wait 300 || fail "2 ranks resuming 3 ranks' checkpoint exited $?"
grep -q "Restoring parameters from $work/reshard/model.ckpt-$steps (3 shards" "$work/reshard2.err" ||
  fail "reshard2 did not restore the 3 ranks' checkpoint of step $steps"
grep -q "result: step=$((steps + 500)) " "$work/reshard2.out" || fail "reshard2 did not reach step $((steps + 500))"
check_accuracy reshard2
[ -f "$work/reshard/model.ckpt-$((steps + 500)).shard-00001-of-00002.safetensors" ] || fail "reshard2 wrote no 2-shard checkpoint"
run reshard4 4 --distributed sync --batch 33 --steps $((steps + 1000)) --save-steps 500 --checkpoint-dir "$work/reshard"
bounded_wait 300 || fail "4 ranks resuming 2 ranks' checkpoint exited $?"
grep -q "result: step=$((steps + 1000)) " "$work/reshard4.out" || fail "reshard4 did not reach step $((steps + 1000))"
check_accuracy reshard4
[ -f "$work/reshard/model.ckpt-$((steps + 1000)).shard-00003-of-00004.safetensors" ] || fail "reshard4 wrote no 4-shard checkpoint"
echo "3 ranks' checkpoint resumed by 2 ranks, then by 4 (a batch of 33): every checkpoint of its own rank count"
