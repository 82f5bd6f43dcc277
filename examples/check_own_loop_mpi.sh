#!/usr/bin/env bash
# ctest driver: digits_own_loop --distributed sync under mpirun (issue 16).
# Usage: check_own_loop_mpi.sh <mpiexec> <digits_own_loop> <hooked-ckpt> <work dir> <mode>
#
# accuracy: 1, 2 and 4 ranks reach the single process's test accuracy
#   within TOLERANCE (each rank trains on its block of rows of every global
#   batch of 32, the gradients averaged); 3 ranks take the default batch of
#   32 (11, 11, 10 rows); every line of the 4-rank job names its rank.
# zero1: at 2 and 4 ranks, Adam with --zero1 (each rank keeps m and v of its
#   block of the parameters only, and says so) ends with the same parameters
#   and moments as Adam without it, bit for bit: hooked-ckpt diff finds the
#   final checkpoints identical, and the result lines are the same.
# kill: a 2-rank --zero1 job, one rank SIGKILLed mid-run: the job exits
#   non-zero, no rank is left; relaunched, it resumes from the newest
#   checkpoint and every file of its final checkpoint (each shard, the
#   index) is byte-identical to an uninterrupted 2-rank job's; SIGTERM to
#   one rank of a job stops every rank after the same step, exit 0, with a
#   final checkpoint of that step.
# reshard: a --zero1 job of 4 ranks resumed by 2, then by 3: each restores
#   the global model (parameters and the moments, re-cut into its rank
#   count's blocks) and trains on. Each hop is also checked exactly: the
#   checkpoint is imported into a fresh directory under another name (a
#   state file naming it), the new rank count restores it and saves it at
#   once, as its own step's checkpoint in its own layout, and hooked-ckpt
#   diff finds it identical to the one saved.
# async: a 2-rank --zero1 job with --async (each rank's background writer
#   saves its shard, on a second MPI context) saves at the same steps as
#   without it and ends with byte-identical shards; one rank SIGKILLed
#   mid-run, the relaunch (--async too) resumes from the newest complete
#   checkpoint and ends byte-identical to the uninterrupted run.
# No timing is asserted: the waits below only bound a hung run.
set -u
mpiexec=$1
exe=$2
ckpt=$3
work=$4
mode=$5
TOLERANCE=0.01
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
rm -rf "$work"
mkdir -p "$work"
# rank_pid, bounded_wait, wait_for_file, kill_rank, kill_job: this script's
# own job's processes, found below its mpirun, never by name.
. "$(dirname "$0")/mpi_job.sh"
trap kill_job EXIT # a job still running when the script fails
fail() {
  echo "check_own_loop_mpi ($mode): $*" >&2
  for f in "$work"/*.out "$work"/*.err; do [ -s "$f" ] && { echo "--- $f:" >&2; tail -20 "$f" >&2; }; done
  exit 1
}
run() { # run NAME NP ARGS...: mpirun in the background, pid in $job
  local name=$1 np=$2
  shift 2
  "$mpiexec" --oversubscribe -np "$np" "$exe" --distributed sync --log-every 0 "$@" >"$work/$name.out" \
    2>"$work/$name.err" &
  # shellcheck disable=SC2034 # job: read by mpi_job.sh
  job=$!
}
accuracy() { sed -n 's/^result: .*test_accuracy=\([0-9.]*\) stop=.*$/\1/p' "$work/$1.out"; }
# within NAME REFERENCE: NAME's accuracy is within TOLERANCE of REFERENCE.
within() {
  local a
  a=$(accuracy "$1")
  [ -n "$a" ] || fail "$1: no result line"
  awk -v a="$a" -v r="$2" -v t="$TOLERANCE" 'BEGIN { d = a - r; if (d < 0) d = -d; exit !(d <= t) }' ||
    fail "$1: test accuracy $a is not within $TOLERANCE of $2"
  echo "$1: test_accuracy $a (single process: $2, tolerance $TOLERANCE)"
}
# diff_ckpt A B WHAT: hooked-ckpt diff finds checkpoints A and B identical.
diff_ckpt() {
  "$ckpt" diff "$1" "$2" >"$work/diff.txt" 2>&1 || { cat "$work/diff.txt" >&2; fail "$3: $1 and $2 differ"; }
}
# import SRC_PREFIX DIR: the checkpoint SRC_PREFIX (sharded) as DIR/imported,
# named by DIR's state file; restoring it and saving at its step writes
# DIR/model.ckpt-<step> afresh.
import() {
  local f
  mkdir -p "$2"
  for f in "$1".shard-*-of-*.safetensors "$1.shards"; do cp "$f" "$2/imported${f#"$1"}"; done
  printf 'model_checkpoint_path: "imported"\nall_model_checkpoint_paths: "imported"\n' >"$2/checkpoint"
}

case $mode in
accuracy)
  "$exe" --log-every 0 >"$work/single.out" 2>"$work/single.err" || fail "the single process exited $?"
  ref=$(accuracy single)
  [ -n "$ref" ] || fail "single: no result line"
  echo "single process: test_accuracy $ref"
  for np in 1 2 4 3; do # --batch 32: 32, 16, 8 and 11/11/10 rows per rank
    run sync$np "$np"
    bounded_wait 300 || fail "sync with $np ranks exited $?"
    grep -q "^result: step=3000 " "$work/sync$np.out" || fail "sync$np: no result line of step 3000"
    within sync$np "$ref"
  done
  bad=$(grep -v '^\(digits_own_loop: \)\?rank [0-3]/4: \|^[0-9-]* [0-9:.]*: [IWED] hooked\] rank [0-3]/4: ' \
    "$work/sync4.err" | head -3)
  [ -z "$bad" ] || fail "sync4: lines without the rank: $bad"
  ;;

zero1)
  for np in 2 4; do
    common=(--optimizer adam --steps 2000 --save-steps 1000)
    run adam$np "$np" "${common[@]}" --checkpoint-dir "$work/adam$np"
    bounded_wait 300 || fail "adam with $np ranks exited $?"
    run zero$np "$np" "${common[@]}" --zero1 --checkpoint-dir "$work/zero$np"
    bounded_wait 300 || fail "adam --zero1 with $np ranks exited $?"
    [ "$(cat "$work/zero$np.out")" = "$(cat "$work/adam$np.out")" ] ||
      fail "$np ranks: --zero1 says '$(cat "$work/zero$np.out")', without: '$(cat "$work/adam$np.out")'"
    grep -q "rank 1/$np: adam: m and v of [0-9]* of the 2410 parameters on this rank: [0-9]* bytes (--zero1: its block)" \
      "$work/zero$np.err" || fail "zero$np: rank 1 did not say what its block of m and v weighs"
    diff_ckpt "$work/adam$np/model.ckpt-2000" "$work/zero$np/model.ckpt-2000" "$np ranks: --zero1 vs not"
    echo "$np ranks: adam --zero1 = adam, bit for bit: $(sed -n "s/^.*rank 0\/$np: adam: //p" "$work/zero$np.err");" \
      "test_accuracy $(accuracy zero$np)"
  done
  ;;

kill)
  steps=40000
  common=(--optimizer adam --zero1 --steps "$steps" --save-steps 1000)
  run ref 2 "${common[@]}" --checkpoint-dir "$work/ref"
  bounded_wait 600 || fail "the uninterrupted 2-rank run exited $?"
  run kill 2 "${common[@]}" --checkpoint-dir "$work/kill"
  wait_for_file "$work/kill/model.ckpt-1000.shards" 300 || fail "the job to kill wrote no checkpoint of step 1000"
  kill_rank 1 "$work/kill" "$steps" 60
  # shellcheck disable=SC2154 # code, newest: set by kill_rank
  echo "killed rank 1 (pid $victim): the job exited $code; newest checkpoint step $newest"
  run resume 2 "${common[@]}" --checkpoint-dir "$work/kill"
  bounded_wait 600 || fail "the relaunched job exited $?"
  grep -q "rank 0/2: resumed at step $newest$" "$work/resume.err" || fail "the relaunch did not resume at step $newest"
  [ "$(cat "$work/resume.out")" = "$(cat "$work/ref.out")" ] || fail "the result lines differ"
  for f in "$work/ref/model.ckpt-$steps".shard-0000{0,1}-of-00002.safetensors "$work/ref/model.ckpt-$steps.shards"; do
    cmp "$f" "$work/kill/${f##*/}" || fail "the resumed run's final checkpoint differs: ${f##*/}"
  done
  echo "resumed from step $newest: every file of model.ckpt-$steps is byte-identical to the uninterrupted run's"

  # SIGTERM to one rank only: every rank stops after the same step, exit 0,
  # the final checkpoint is of that step.
  run term 2 --optimizer adam --zero1 --steps 100000000 --save-steps 1000 --checkpoint-dir "$work/term"
  wait_for_file "$work/term/model.ckpt-1000.shards" 300 || fail "the job to signal wrote no checkpoint of step 1000"
  victim=$(rank_pid 1)
  [ -n "$victim" ] || fail "cannot find rank 1's process"
  kill -TERM "$victim"
  bounded_wait 120 || fail "after SIGTERM to rank 1 the job exited $?"
  step=$(sed -n 's/^result: step=\([0-9]*\) .* stop=signal:SIGTERM$/\1/p' "$work/term.out")
  [ -n "$step" ] || fail "the chief's result line does not say stop=signal:SIGTERM"
  grep -q "rank 1/2: step=$step " "$work/term.err" || fail "rank 1 did not stop at the chief's step $step"
  [ -f "$work/term/model.ckpt-$step.shards" ] || fail "no final checkpoint of step $step"
  echo "SIGTERM to rank 1 (pid $victim): every rank stopped after step $step, exit 0, final checkpoint of it"
  ;;

reshard)
  common=(--optimizer adam --zero1 --save-steps 500)
  hop() { # hop NP STEP: NP ranks resume the job's directory and train on to STEP
    run "hop$1" "$1" "${common[@]}" --steps "$2" --checkpoint-dir "$work/job"
    bounded_wait 300 || fail "$1 ranks resuming exited $?"
    grep -q "^result: step=$2 " "$work/hop$1.out" || fail "$1 ranks did not reach step $2"
    [ -f "$work/job/model.ckpt-$2.shard-0000$(($1 - 1))-of-0000$1.safetensors" ] ||
      fail "$1 ranks wrote no $1-shard checkpoint of step $2"
  }
  exact() { # exact NP STEP: NP ranks restore the checkpoint of STEP and save it again, identical
    import "$work/job/model.ckpt-$2" "$work/import$1"
    run "import$1" "$1" "${common[@]}" --steps "$2" --checkpoint-dir "$work/import$1"
    bounded_wait 300 || fail "$1 ranks restoring the imported checkpoint exited $?"
    [ -f "$work/import$1/model.ckpt-$2.shard-0000$(($1 - 1))-of-0000$1.safetensors" ] ||
      fail "$1 ranks did not save the imported checkpoint of step $2 again"
    diff_ckpt "$work/job/model.ckpt-$2" "$work/import$1/model.ckpt-$2" "restored by $1 ranks"
  }
  hop 4 1000
  exact 2 1000
  hop 2 2000
  exact 3 2000
  hop 3 3000
  ref=$("$exe" --optimizer adam --log-every 0 2>/dev/null | sed -n 's/^result: .*test_accuracy=\([0-9.]*\) stop=.*$/\1/p')
  within hop3 "$ref"
  echo "4 ranks -> 2 -> 3 with --zero1: each restored the global model exactly (hooked-ckpt diff) and trained on"
  ;;

async)
  steps=40000
  common=(--optimizer adam --zero1 --steps "$steps" --save-steps 1000 --keep 0)
  run sync 2 "${common[@]}" --checkpoint-dir "$work/sync"
  bounded_wait 600 || fail "the 2-rank job without --async exited $?"
  run async 2 "${common[@]}" --async --checkpoint-dir "$work/async"
  bounded_wait 600 || fail "the 2-rank job with --async exited $?"
  [ "$(cat "$work/async.out")" = "$(cat "$work/sync.out")" ] || fail "the result lines differ"
  indexes() { # indexes DIR: the checkpoints' index files in DIR, one per line
    local f
    for f in "$1"/*.shards; do [ -e "$f" ] && echo "${f##*/}"; done
  }
  [ "$(indexes "$work/async")" = "$(indexes "$work/sync")" ] ||
    fail "--async saved other steps: $(indexes "$work/async" | wc -l) checkpoints against $(indexes "$work/sync" | wc -l)"
  final=("model.ckpt-$steps".shard-0000{0,1}-of-00002.safetensors "model.ckpt-$steps.shards")
  for f in "${final[@]}"; do
    cmp "$work/sync/$f" "$work/async/$f" || fail "--async wrote another $f"
  done
  echo "--async: the same $(indexes "$work/async" | wc -l) checkpoints as without it; the final one byte-identical"

  run kill 2 "${common[@]}" --async --checkpoint-dir "$work/kill"
  wait_for_file "$work/kill/model.ckpt-1000.shards" 300 || fail "the job to kill wrote no checkpoint of step 1000"
  kill_rank 1 "$work/kill" "$steps" 60
  "$ckpt" verify "$work/kill/model.ckpt-$newest" >/dev/null || fail "the newest checkpoint left by the kill does not verify"
  run resume 2 "${common[@]}" --async --checkpoint-dir "$work/kill"
  bounded_wait 600 || fail "the relaunched job exited $?"
  grep -q "rank 0/2: resumed at step $newest$" "$work/resume.err" || fail "the relaunch did not resume at step $newest"
  [ "$(cat "$work/resume.out")" = "$(cat "$work/sync.out")" ] || fail "the resumed job's result line differs"
  for f in "${final[@]}"; do
    cmp "$work/sync/$f" "$work/kill/$f" || fail "the resumed --async run's $f differs"
  done
  echo "--async, rank 1 killed (exit $code), resumed from step $newest: the final checkpoint is byte-identical"
  ;;

*)
  fail "unknown mode '$mode' (accuracy, zero1, kill, reshard or async)"
  ;;
esac
