#!/usr/bin/env bash
# ctest driver: --metrics-log across a SIGKILL and a resume.
# Usage: check_metrics_log.sh <train_digits or digits_own_loop> <work dir> <csv|jsonl>
#
# A run with --metrics-log (a row every 10 steps) and checkpoints every 200
# steps is SIGKILLed mid-run, once its state file names a checkpoint past
# step 0 and its log has a row past that checkpoint (it usually still has
# at the kill, which the rerun's INFO line "dropped N row(s)" shows), then
# rerun to step N: it resumes from that checkpoint, and the log then holds
# the rows of steps 10, 20, ..., N, each exactly once and in order, every
# line complete, a CSV header once. The rerun's rows match the columns the
# program documents, and --metrics-format overrides the suffix.
#
# Nothing is timed: the waits poll and are bounded only to fail a hung run.
set -u
exe=$1
work=$2
format=$3
rm -rf "$work"
mkdir -p "$work"
prog=$(basename "$exe")

fail() {
  echo "check_metrics_log ($prog, $format): $*" >&2
  for f in "$work"/*.out "$work"/*.err "$work"/metrics.*; do
    [ -f "$f" ] && { echo "--- $f:" >&2; tail -n 20 "$f" >&2; }
  done
  exit 1
}

# The step of the newest checkpoint the state file of $1 names, in STEP
# (empty when there is none); the state file's first line is hooked's
# checksum line, the pending-deletion lines, then model_checkpoint_path.
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

# wait_rows_past <pid> <dir> <log>: until the log has a row past the
# newest checkpoint of <dir> (rows a restart from it must drop), or the
# process is gone (at most 120 s). Returns 0 if it does.
wait_rows_past() {
  local pid=$1 dir=$2 log=$3 i last
  for ((i = 0; i < 12000; i++)); do
    state_step "$dir"
    last=$(tail -n 2 "$log" 2>/dev/null | sed -n 's/^\([0-9][0-9]*\),.*/\1/p; s/^{"step":\([0-9][0-9]*\),.*/\1/p' | tail -n 1)
    [ -n "$STEP" ] && [ -n "$last" ] && [ "$last" -gt "$STEP" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.01
  done
  return 1
}

# The steps of the log's rows, one a line, on stdout; fails on a line that
# is no row (a CSV header is checked and skipped).
log_steps() {
  local log=$1 header=$2
  if [ "$format" = csv ]; then
    [ "$(head -n 1 "$log")" = "$header" ] || fail "the CSV header is '$(head -n 1 "$log")', expected '$header'"
    [ "$(grep -c '^step,' "$log")" = 1 ] || fail "the CSV header appears more than once"
    tail -n +2 "$log" | awk -F, '$1 !~ /^[0-9]+$/ { exit 1 } { print $1 }' || fail "a CSV line is no row"
  else
    sed -n 's/^{"step":\([0-9][0-9]*\),"wall_time":[-0-9.e+]*,.*}$/\1/p' "$log"
    [ "$(sed -n '/^{"step":[0-9][0-9]*,"wall_time":[-0-9.e+]*,.*}$/p' "$log" | wc -l)" = "$(wc -l <"$log")" ] ||
      fail "a JSON line is no row"
  fi
}

N=1000
log=$work/metrics.$format
own=()
flags=(--log-every 0 --save-steps 200 --metrics-log "$log" --metrics-every 10)
if [ "$prog" = train_digits ]; then
  own=(--no-progress)
  header=step,wall_time,loss,test_loss,test_accuracy
  keys='"loss":[-0-9.e+]*,"test_loss":[-0-9.e+]*,"test_accuracy":[-0-9.e+]*'
else
  header=step,wall_time,loss,test_accuracy
  keys='"loss":[-0-9.e+]*,"test_accuracy":[-0-9.e+]*'
fi

# The run to kill has a step budget it cannot finish, so the kill lands
# mid-run however fast the machine; retried in the unlikely case that the
# poll fell asleep until the newest checkpoint was past N.
killed_at=
for attempt in 1 2 3; do
  rm -rf "$work/ck" "$log"
  "$exe" --steps 100000000 "${flags[@]}" "${own[@]}" --checkpoint-dir "$work/ck" >"$work/killed.out" 2>"$work/killed.err" &
  pid=$!
  if ! wait_ckpt "$pid" "$work/ck" || ! wait_rows_past "$pid" "$work/ck" "$log"; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    fail "no checkpoint past step 0, or no row past the newest one, appeared"
  fi
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  state_step "$work/ck"
  if [ "$STEP" -lt "$N" ]; then
    killed_at=$STEP
    break
  fi
done
[ -n "$killed_at" ] || fail "three times, the newest checkpoint at the kill was past step $N"
[ -s "$log" ] || fail "the killed run wrote no metrics log"
left=$(log_steps "$log" "$header" | tail -n 1)

"$exe" --steps "$N" "${flags[@]}" "${own[@]}" --checkpoint-dir "$work/ck" >"$work/resumed.out" 2>"$work/resumed.err" ||
  fail "the resumed run failed"
log_steps "$log" "$header" >"$work/steps.txt"
seq 10 10 "$N" >"$work/expected.txt"
cmp -s "$work/steps.txt" "$work/expected.txt" ||
  fail "the log's steps are not 10, 20, ..., $N once each: $(tr '\n' ' ' <"$work/steps.txt")"
[ "$(tail -c 1 "$log" | od -An -c | tr -d ' ')" = '\n' ] || fail "the log's last line is not complete"
if [ "$format" = jsonl ]; then
  grep -q "^{\"step\":$N,\"wall_time\":[0-9.e+]*,$keys}\$" "$log" || fail "the row of step $N has other columns"
fi
if ls "$work" | grep -q '\.tmp'; then fail "temporary files left: $(ls "$work")"; fi
dropped=$(sed -n 's/.*MetricsLogHook: .* resumed at step [0-9]*: \(.*\)$/\1/p' "$work/resumed.err")
echo "check_metrics_log: $prog ($format): SIGKILL after checkpoint $killed_at with rows to step $left;" \
  "resumed (${dropped:-nothing dropped}), the log has each of the $((N / 10)) steps once"

# --metrics-format overrides the suffix.
"$exe" --steps 20 --log-every 0 --metrics-log "$work/other.log" --metrics-format "$format" --metrics-every 10 \
  "${own[@]}" >"$work/format.out" 2>"$work/format.err" ||
  fail "--metrics-format $format failed"
if [ "$format" = csv ]; then
  [ "$(head -n 1 "$work/other.log")" = "$header" ] || fail "--metrics-format csv wrote no CSV header"
else
  head -n 1 "$work/other.log" | grep -q '^{"step":10,' || fail "--metrics-format jsonl wrote no JSON line"
fi
