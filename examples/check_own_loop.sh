#!/usr/bin/env bash
# ctest driver: digits_own_loop under SIGKILL and SIGTERM.
# Usage: check_own_loop.sh <digits_own_loop> <work dir> <kill|sigterm>
#
# kill: a run SIGKILLed mid-run (once its state file names a checkpoint
#   past step 0), then rerun with the flags of an uninterrupted run to step
#   N, resumes from that checkpoint and ends with a final checkpoint
#   byte-identical to the uninterrupted run's, and the same result line.
#   The checkpoints hold the data iterator's position (hk_loop_add_state);
#   without it the resumed run would feed other batches and the files would
#   differ. Sync and async checkpoints.
# sigterm: SIGTERM stops training after the current step, the final
#   checkpoint is written, the result line printed, the exit status is 0;
#   a rerun resumes from that checkpoint.
#
# Nothing is timed: the waits poll and are bounded only to fail a hung run.
set -u
exe=$1
work=$2
mode=$3
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "check_own_loop ($mode): $*" >&2
  for f in "$work"/*.out "$work"/*.err; do
    [ -f "$f" ] && { echo "--- $f:" >&2; cat "$f" >&2; }
  done
  exit 1
}

# The step of the newest checkpoint the state file of $1 names, in STEP
# (empty when there is none). The state file is the commit point of a save:
# a data file it does not name yet is not restored. Its first line is
# hooked's checksum line, the pending-deletion lines, then
# model_checkpoint_path. Bash builtins only, so polling starts no process.
state_step() {
  local line=
  STEP=
  if [ -f "$1/checkpoint" ]; then
    {
      read -r line
      [[ $line == "# hooked-crc32c: "* ]] && read -r line
      while [[ $line == "# hooked-pending-deletion: "* ]]; do read -r line; done
    } <"$1/checkpoint"
  fi
  [[ $line =~ ^model_checkpoint_path:\ \"model\.ckpt-([0-9]+)\"$ ]] && STEP=${BASH_REMATCH[1]}
  return 0
}

# wait_ckpt <pid> <dir>: until the state file of <dir> names a checkpoint
# past step 0, or the process is gone (at most 120 s). Returns 0 if it does.
wait_ckpt() {
  local pid=$1 dir=$2 i
  for ((i = 0; i < 12000; i++)); do
    state_step "$dir"
    [ -n "$STEP" ] && [ "$STEP" -gt 0 ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

# wait_exit <pid>: its exit status in STATUS; SIGKILL and fail after 120 s.
wait_exit() {
  local pid=$1 i
  for ((i = 0; i < 1200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    fail "still running 120 s after the signal"
  fi
  STATUS=0
  wait "$pid" || STATUS=$?
}

result_re='^result: step=([0-9]+) loss=[0-9.]+ test_accuracy=[0-9.]+ stop=[a-z_:A-Z0-9]+$'

case $mode in
kill)
  N=2000
  for flavor in sync async; do
    extra=()
    [ "$flavor" = async ] && extra=(--async)
    flags=(--log-every 0 --save-steps 100 "${extra[@]}")
    whole=$work/$flavor-whole
    parts=$work/$flavor-parts

    "$exe" --steps "$N" "${flags[@]}" --checkpoint-dir "$whole" >"$work/whole.out" 2>"$work/whole.err" ||
      fail "$flavor: the uninterrupted run failed"
    expected=$(cat "$work/whole.out")
    [[ $expected =~ $result_re ]] && [ "${BASH_REMATCH[1]}" = "$N" ] || fail "$flavor: no result line at step $N"
    [ -f "$whole/model.ckpt-$N.safetensors" ] || fail "$flavor: no final checkpoint model.ckpt-$N"

    # The run to kill has a step budget it cannot finish (--steps is only the
    # stop condition; it is not in the checkpoints), so the kill lands
    # mid-run however fast the machine. It is retried in the unlikely case
    # that this poll fell asleep until the newest checkpoint was past N.
    killed_at=
    for attempt in 1 2 3; do
      rm -rf "$parts"
      "$exe" --steps 100000000 "${flags[@]}" --checkpoint-dir "$parts" >"$work/killed.out" 2>"$work/killed.err" &
      pid=$!
      if ! wait_ckpt "$pid" "$parts"; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        fail "$flavor: no checkpoint past step 0 appeared"
      fi
      kill -KILL "$pid"
      wait "$pid" 2>/dev/null
      status=$?
      [ "$status" -eq 137 ] || fail "$flavor: exit status $status after SIGKILL, expected 137"
      state_step "$parts"
      if [ "$STEP" -lt "$N" ]; then
        killed_at=$STEP
        break
      fi
    done
    [ -n "$killed_at" ] || fail "$flavor: three times, the newest checkpoint at the kill was past step $N"

    # The rerun, with the uninterrupted run's flags, resumes from there.
    "$exe" --steps "$N" "${flags[@]}" --checkpoint-dir "$parts" >"$work/resumed.out" 2>"$work/resumed.err" ||
      fail "$flavor: the resumed run failed"
    grep -Eq "^digits_own_loop: resumed at step [1-9][0-9]*$" "$work/resumed.err" ||
      fail "$flavor: the rerun did not resume from a checkpoint past step 0"
    resumed_at=$(sed -n 's/^digits_own_loop: resumed at step \([0-9]*\)$/\1/p' "$work/resumed.err")
    [ "$resumed_at" = "$killed_at" ] ||
      fail "$flavor: resumed at step $resumed_at, not from model.ckpt-$killed_at, the newest committed checkpoint"
    [ "$(cat "$work/resumed.out")" = "$expected" ] ||
      fail "$flavor: the resumed run's result differs: '$(cat "$work/resumed.out")', expected '$expected'"
    cmp "$whole/model.ckpt-$N.safetensors" "$parts/model.ckpt-$N.safetensors" ||
      fail "$flavor: the final checkpoints of the resumed and the uninterrupted run differ"
    if ls "$parts" | grep -q '\.tmp'; then fail "$flavor: temporary files left: $(ls "$parts")"; fi
    echo "check_own_loop: $flavor: SIGKILL after checkpoint $killed_at, resumed at step $resumed_at (attempt $attempt):" \
      "final checkpoint identical to the uninterrupted run's"
  done
  ;;

sigterm)
  for flavor in sync async; do
    dir=$work/ckpt-$flavor
    extra=()
    [ "$flavor" = async ] && extra=(--async)
    "$exe" --steps 100000000 --log-every 0 --checkpoint-dir "$dir" --save-steps 1000 "${extra[@]}" \
      >"$work/run.out" 2>"$work/run.err" &
    pid=$!
    if ! wait_ckpt "$pid" "$dir"; then
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      fail "$flavor: no checkpoint past step 0 appeared"
    fi
    kill -TERM "$pid"
    wait_exit "$pid"
    [ "$STATUS" -eq 0 ] || fail "$flavor: exit status $STATUS after SIGTERM, expected 0"
    line=$(cat "$work/run.out")
    [[ $line =~ $result_re ]] || fail "$flavor: no result line"
    step=${BASH_REMATCH[1]}
    [ "$step" -ge 1000 ] && [ "$step" -lt 100000000 ] || fail "$flavor: stopped at step $step"
    grep -q "^digits_own_loop: stopped at step $step: signal (SIGTERM)$" "$work/run.err" ||
      fail "$flavor: no 'stopped at step $step: signal (SIGTERM)' line"
    [[ $line == *" stop=signal:SIGTERM" ]] || fail "$flavor: the result line does not say stop=signal:SIGTERM"
    [ -f "$dir/model.ckpt-$step.safetensors" ] || fail "$flavor: no final checkpoint model.ckpt-$step"
    grep -q "^model_checkpoint_path: \"model.ckpt-$step\"$" "$dir/checkpoint" ||
      fail "$flavor: the state file does not name model.ckpt-$step"
    if ls "$dir" | grep -q '\.tmp'; then fail "$flavor: temporary files left: $(ls "$dir")"; fi

    # The final checkpoint resumes: --steps at the stop trains nothing more.
    "$exe" --steps "$step" --log-every 0 --checkpoint-dir "$dir" --save-steps 1000 "${extra[@]}" \
      >"$work/rerun.out" 2>"$work/rerun.err" || fail "$flavor: the rerun failed"
    grep -q "^digits_own_loop: resumed at step $step$" "$work/rerun.err" || fail "$flavor: the rerun did not resume"
    grep -q "training time: [0-9.]* s for 0 steps" "$work/rerun.err" || fail "$flavor: the rerun trained"
    [[ $(cat "$work/rerun.out") =~ ^result:\ step=$step\  ]] || fail "$flavor: the rerun's result line"
    echo "check_own_loop: $flavor: SIGTERM stopped at step $step with a final checkpoint; the rerun resumed there"
  done
  ;;

*)
  fail "unknown mode '$mode' (kill or sigterm)"
  ;;
esac
