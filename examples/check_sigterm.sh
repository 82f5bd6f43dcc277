#!/usr/bin/env bash
# ctest driver: SIGTERM stops train_digits cleanly: the step in progress
# ends and the final checkpoint is written.
# Usage: check_sigterm.sh <train_digits> <work dir>
#
# The trainer is started with a step budget it cannot finish, and signalled
# once its first checkpoint exists and it has logged a step (so training is
# under way: the stop comes after steps, whatever the machine's load). It must stop
# after the current step, write the final checkpoint, print its result line
# and exit 0; the final checkpoint holds the step the result line reports.
#
# Then an early SIGTERM: sent while the trainer is still loading its data,
# which it reads from a FIFO this script writes, so the trainer is blocked
# reading it for as long as the script wants. Opening the FIFO's writing end
# returns only once the trainer has opened it for reading, after installing
# its signal handling; the signal goes then, the data after it. The trainer
# must exit 0 and leave the checkpoint directory of an earlier run as it was.
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
  "$exe" --steps 100000000 --log-every 100 --checkpoint-dir "$dir" --save-steps 5000 "${extra[@]}" \
    >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 1 600); do
    [ -f "$dir/checkpoint" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -f "$dir/checkpoint" ] || { kill -KILL "$pid" 2>/dev/null; fail "$mode: no checkpoint appeared"; }
  for _ in $(seq 1 1200); do # step 100 logged: steps ran after the creation-time save
    grep -q '^step [0-9]*: loss' "$work/err" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^step [0-9]*: loss' "$work/err" || { kill -KILL "$pid" 2>/dev/null; fail "$mode: no step was logged"; }
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
  [[ "$line" =~ ^result:\ step=([0-9]+)\ loss=[0-9.]+\ test_accuracy=[0-9.]+\ stop=signal:SIGTERM$ ]] ||
    fail "$mode: no result line"
  step=${BASH_REMATCH[1]}
  [ "$step" -gt 0 ] || fail "$mode: stopped at step 0"
  [ "$step" -lt 100000000 ] || fail "$mode: ran to the end instead of stopping"
  grep -q "stopped at step $step: signal (SIGTERM)" "$work/err" || fail "$mode: no 'stopped at step $step: signal (SIGTERM)' line"
  [ -f "$dir/model.ckpt-$step.safetensors" ] || fail "$mode: no final checkpoint model.ckpt-$step"
  grep -q "^model_checkpoint_path: \"model.ckpt-$step\"$" "$dir/checkpoint" ||
    fail "$mode: the state file does not name model.ckpt-$step"
  # No temporary file is left behind.
  if ls "$dir" | grep -q '\.tmp-'; then fail "$mode: temporary files left: $(ls "$dir")"; fi
  echo "check_sigterm: $mode: stopped at step $step with a final checkpoint"
done

# ---- an early SIGTERM, while the data loads ---------------------------------------
data=$(cd "$(dirname "$0")" && pwd)/data/digits.csv.gz
[ -f "$data" ] || fail "early: no data file $data"
dir=$work/ckpt-early
"$exe" --steps 20 --log-every 0 --checkpoint-dir "$dir" --save-steps 10 >"$work/out" 2>"$work/err" ||
  fail "early: the run that makes the checkpoints failed"
listing() { (cd "$dir" && for f in *; do printf '%s %s\n' "$f" "$(cksum <"$f")"; done); }
before=$(listing)
fifo=$work/data.fifo
rm -f "$fifo"
mkfifo "$fifo" || fail "early: mkfifo failed"
"$exe" --data "$fifo" --steps 100000000 --log-every 0 --checkpoint-dir "$dir" --save-steps 5000 \
  >"$work/out" 2>"$work/err" &
pid=$!
# The writer: its open returns once the trainer opened the FIFO (handler installed); a trainer that never
# opens it is caught by the timeout. cat may be cut short when the trainer stops reading: that is fine.
timeout 120 bash -c 'exec 3>"$1"; kill -TERM "$2"; cat "$3" >&3 2>/dev/null; exit 0' _ "$fifo" "$pid" "$data" ||
  { st=$?; kill -KILL "$pid" 2>/dev/null; fail "early: the trainer never opened its data (writer status $st)"; }
status=0
for _ in $(seq 1 600); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  kill -KILL "$pid"
  fail "early: still running 60 s after SIGTERM"
fi
wait "$pid" || status=$?
[ "$status" -eq 0 ] || fail "early: exit status $status after an early SIGTERM, expected 0"
grep -q "stopped by a signal while loading the data" "$work/err" || fail "early: no 'stopped by a signal' line"
after=$(listing)
[ "$before" = "$after" ] || fail "early: the checkpoint directory changed:
before:
$before
after:
$after"
echo "check_sigterm: early: stopped while loading, the checkpoint directory untouched"
