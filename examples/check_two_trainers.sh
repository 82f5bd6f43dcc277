#!/usr/bin/env bash
# ctest driver: two trainers started on one checkpoint directory: the
# second is refused, since one trainer owns a directory.
# Usage: check_two_trainers.sh <trainer> <hooked-ckpt> <work dir>
# <trainer> is train_digits or digits_own_loop (same flags).
#
# The first trainer gets a step budget it cannot finish, sync and then async
# checkpoints. Once it holds the directory — its lock file is there and not
# empty: the holder's line is written only after the lock is taken — a
# second trainer is started on the same directory. It must exit non-zero with
# the message naming the directory, the first one's pid and host, and the
# lock file; the first must still be running. SIGTERM then stops the first
# cleanly: exit 0, its final checkpoint, every checkpoint of the
# directory verifies (hooked-ckpt verify), the lock file is gone, and the
# directory holds one event file (the second trainer created none).
#
# Nothing is timed: the waits poll and are bounded only to fail a hung run.
set -u
exe=$1
ckpt_tool=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
name=$(basename "$exe")

fail() {
  echo "check_two_trainers ($name): $*" >&2
  for f in "$work"/*.out "$work"/*.err; do
    [ -f "$f" ] && { echo "--- $f:" >&2; cat "$f" >&2; }
  done
  exit 1
}

# wait_exit <pid> <what>: its exit status in STATUS; SIGKILL and fail after 120 s.
wait_exit() {
  local pid=$1 i
  for ((i = 0; i < 1200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    fail "$2 still running after 120 s"
  fi
  STATUS=0
  wait "$pid" || STATUS=$?
}

host=$(hostname)
for flavor in sync async; do
  dir=$work/ckpt-$flavor
  extra=()
  [ "$flavor" = async ] && extra=(--async)
  "$exe" --steps 100000000 --log-every 0 --checkpoint-dir "$dir" --save-steps 500 --keep 3 "${extra[@]}" \
    >"$work/first.out" 2>"$work/first.err" &
  first=$!
  for ((i = 0; i < 1200; i++)); do
    [ -s "$dir/hooked.lock" ] && break
    kill -0 "$first" 2>/dev/null || break
    sleep 0.1
  done
  [ -s "$dir/hooked.lock" ] || { kill -KILL "$first" 2>/dev/null; fail "$flavor: the first trainer never locked $dir"; }

  status=0
  timeout 120 "$exe" --steps 50 --log-every 0 --checkpoint-dir "$dir" --save-steps 10 "${extra[@]}" \
    >"$work/second.out" 2>"$work/second.err" || status=$?
  if [ "$status" -eq 0 ] || [ "$status" -eq 124 ]; then
    kill -KILL "$first" 2>/dev/null
    fail "$flavor: the second trainer exited with status $status, expected a refusal"
  fi
  want="Checkpoint directory $dir is in use by another trainer (pid $first on host $host since "
  grep -qF "$want" "$work/second.err" || { kill -KILL "$first" 2>/dev/null; fail "$flavor: no '$want' message"; }
  grep -qF "; lock file $dir/hooked.lock). Two trainers writing one directory delete each other's checkpoints" \
    "$work/second.err" || { kill -KILL "$first" 2>/dev/null; fail "$flavor: the message does not name the lock file"; }
  kill -0 "$first" 2>/dev/null || fail "$flavor: the first trainer died when the second one started"

  kill -TERM "$first"
  wait_exit "$first" "$flavor: the first trainer"
  [ "$STATUS" -eq 0 ] || fail "$flavor: the first trainer exited with status $STATUS after SIGTERM, expected 0"
  line=$(cat "$work/first.out")
  [[ "$line" =~ ^result:\ step=([0-9]+)\  ]] || fail "$flavor: the first trainer printed no result line"
  step=${BASH_REMATCH[1]}
  [ -f "$dir/model.ckpt-$step.safetensors" ] || fail "$flavor: no final checkpoint model.ckpt-$step"
  "$ckpt_tool" verify "$dir" >"$work/verify.out" 2>&1 ||
    fail "$flavor: hooked-ckpt verify $dir failed: $(cat "$work/verify.out")"
  [ -e "$dir/hooked.lock" ] && fail "$flavor: the lock file is still there after a clean end"
  events=$(ls "$dir" | grep -c tfevents)
  [ "$events" -eq 1 ] || fail "$flavor: $events event files in $dir, expected the first trainer's one"
  echo "check_two_trainers ($name): $flavor: the second trainer was refused; the first ended at step $step, verified"
done
