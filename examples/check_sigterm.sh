#!/usr/bin/env bash
# ctest driver: SIGTERM stops train_digits cleanly (contract D12, C97).
# Usage: check_sigterm.sh <train_digits> <work dir>
#
# The trainer is started with a step budget it cannot finish, and signalled
# once its first checkpoint exists (so training is under way). It must stop
# after the current step, write the final checkpoint, print its result line
# and exit 0; the final checkpoint holds the step the result line reports.
# No timing is asserted: the waits below only bound a hung run.
set -u
exe=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
fail() {
  echo "check_sigterm: $*" >&2
  echo "--- stdout:" >&2; cat "$work/out" >&2 2>/dev/null
  echo "--- stderr:" >&2; cat "$work/err" >&2 2>/dev/null
  exit 1
}

for mode in sync async; do
  dir=$work/ckpt-$mode
  extra=()
  [ "$mode" = async ] && extra=(--async)
  "$exe" --steps 100000000 --log-every 0 --checkpoint-dir "$dir" --save-steps 5000 "${extra[@]}" \
    >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 1 600); do
    [ -f "$dir/checkpoint" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -f "$dir/checkpoint" ] || { kill -KILL "$pid" 2>/dev/null; fail "$mode: no checkpoint appeared"; }
  sleep 0.3 # let some steps run after the creation-time save
  kill -TERM "$pid"
  status=0
  for _ in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    fail "$mode: still running 60 s after SIGTERM"
  fi
  wait "$pid" || status=$?
  [ "$status" -eq 0 ] || fail "$mode: exit status $status after SIGTERM, expected 0"
  line=$(cat "$work/out")
  [[ "$line" =~ ^result:\ step=([0-9]+)\ loss=[0-9.]+\ test_accuracy=[0-9.]+$ ]] ||
    fail "$mode: no result line"
  step=${BASH_REMATCH[1]}
  [ "$step" -gt 0 ] || fail "$mode: stopped at step 0"
  [ "$step" -lt 100000000 ] || fail "$mode: ran to the end instead of stopping"
  grep -q "stopped by a signal" "$work/err" || fail "$mode: no 'stopped by a signal' line"
  [ -f "$dir/model.ckpt-$step.safetensors" ] || fail "$mode: no final checkpoint model.ckpt-$step"
  grep -q "^model_checkpoint_path: \"model.ckpt-$step\"$" "$dir/checkpoint" ||
    fail "$mode: the state file does not name model.ckpt-$step"
  # No temporary file is left behind.
  if ls "$dir" | grep -q '\.tmp-'; then fail "$mode: temporary files left: $(ls "$dir")"; fi
  echo "check_sigterm: $mode: stopped at step $step with a final checkpoint"
done
