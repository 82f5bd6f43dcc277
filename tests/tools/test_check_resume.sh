#!/usr/bin/env bash
# Tests of `hooked-ckpt check-resume` on resume_trainer (a host-loop trainer,
# tests/tools/resume_trainer.c) that registers everything, or leaves out its
# RNG or its momentum, pads its RNG's struct, or seeds it from the clock; on
# programs that fail, never stop, or start over; and on bad usage. (The
# example trainers are checked in examples/CMakeLists.txt.)
#
#   test_check_resume.sh HOOKED_CKPT RESUME_TRAINER WORKDIR
#
# Exit status 0 when every check passes.
set -u

if [ $# -ne 3 ]; then
  echo "usage: $0 HOOKED_CKPT RESUME_TRAINER WORKDIR" >&2
  exit 2
fi
TOOL=$1
TRAINER=$2
W=$3

rm -rf "$W"
mkdir -p "$W/tmp"
# The work directories the tool makes go under $W/tmp: each test can see
# whether its one was removed (success) or kept (failure).
export TMPDIR=$W/tmp

PASSED=0
FAILED=0
OUT=""
ERR=""
RC=0
LAST=""

# run ARGS...: run the tool, keeping stdout, stderr and the exit status.
run() {
  LAST="hooked-ckpt $*"
  rm -rf "$W/tmp"/*
  "$TOOL" "$@" >"$W/out" 2>"$W/err"
  RC=$?
  OUT=$(cat "$W/out")
  ERR=$(cat "$W/err")
}

pass() { PASSED=$((PASSED + 1)); }
fail() {
  FAILED=$((FAILED + 1))
  printf 'FAILED: %s: %s\n--- stdout:\n%s\n--- stderr:\n%s\n---\n' "$LAST" "$1" "$OUT" "$ERR"
}

expect_rc() { if [ "$RC" -eq "$1" ]; then pass; else fail "exit status $RC, expected $1"; fi; }
expect_out() { if grep -qF -- "$1" "$W/out"; then pass; else fail "stdout lacks '$1'"; fi; }
expect_err() { if grep -qF -- "$1" "$W/err"; then pass; else fail "stderr lacks '$1'"; fi; }
# expect_text TEXT: TEXT occurs in stdout read as one paragraph (the report
# wraps its paragraphs: line breaks and indentation count as one space).
expect_text() {
  if tr '\n' ' ' <"$W/out" | tr -s ' ' | grep -qF -- "$1"; then pass; else fail "stdout lacks '$1'"; fi
}
expect_no_out() { if grep -qF -- "$1" "$W/out"; then fail "stdout has '$1'"; else pass; fi; }
expect_out_lines() {
  local n
  n=$(wc -l <"$W/out")
  if [ "$n" -eq "$1" ]; then pass; else fail "stdout has $n lines, expected $1"; fi
}
# The work directory under $TMPDIR: removed (0) or kept (1).
expect_work_dirs() {
  local n
  n=$(find "$W/tmp" -mindepth 1 -maxdepth 1 -name 'hooked-check-resume.*' | wc -l)
  if [ "$n" -eq "$1" ]; then pass; else fail "$n work directories left under \$TMPDIR, expected $1"; fi
}

TRAIN=("$TRAINER" --steps 200 --checkpoint-dir '{dir}' --save-steps 20)

# ---- a program that registers everything resumes exactly: exit 0, one line -------

run check-resume -- "${TRAIN[@]}"
expect_rc 0
expect_out_lines 1
expect_out "hooked-ckpt check-resume: exact: stopped at step 100 and resumed to step 200"
expect_out "11 shared checkpoints (steps 0 to 200"
expect_work_dirs 0
expect_err "run 3: resumed from step 100 to its end"

# --stop-at K is respected; {dir} inside an argument is replaced too.
run check-resume --stop-at 60 -- sh -c 'exec "$0" --steps 200 --checkpoint-dir "$1" --save-steps 20' "$TRAINER" '{dir}/ckpt'
expect_rc 0
expect_out "stopped at step 60 and resumed to step 200"
run check-resume --stop-at=140 --twice -- "${TRAIN[@]}"
expect_rc 0
expect_out "stopped at step 140 and resumed to step 200"
expect_out "as were two uninterrupted runs"
# A stop step off the checkpoint cadence: fewer checkpoints are shared.
run check-resume --stop-at 65 -- "${TRAIN[@]}"
expect_rc 0
expect_out "stopped at step 65"
expect_out "5 shared checkpoints"

# ---- the RNG left out: the weights differ from the first checkpoint after the restart -

run check-resume -- "${TRAIN[@]}" --forget-rng
expect_rc 1
expect_out "the resumed run differs from the uninterrupted one"
expect_out "identical through step 100, the checkpoint the resumed run restored"
expect_out "first difference at step 120 (model.ckpt-120), the first checkpoint after the restart:"
for t in w1 b1 w2 b2; do
  if grep -qE "^    $t +F32 +\[[0-9]+\] +[0-9]+ of [0-9]+ elements? differs?, by up to " "$W/out"; then pass; else fail "no line naming $t as different"; fi
done
expect_out "still equal there: global_step"
expect_text "The checkpoint holds no opaque state at all"
expect_out "an RNG that is not registered"
expect_out "every later checkpoint differs too"
expect_work_dirs 1
expect_out "hooked-ckpt diff $W/tmp/hooked-check-resume."

# ---- the momentum left out -------------------------------------------------------------

run check-resume -- "${TRAIN[@]}" --forget-accumulator
expect_rc 1
expect_out "first difference at step 120"
for t in w1 b1 w2 b2; do
  if grep -qE "^    $t +F32 .* differs?, by up to " "$W/out"; then pass; else fail "no line naming $t as different"; fi
done
expect_no_out "momentum/"
expect_text "The state rng still agrees at step 120, restored and advanced alike"
expect_out "optimizer accumulators"

# ---- uninitialized padding in the RNG's struct ---------------------------------------------

run check-resume -- "${TRAIN[@]}" --padding
expect_rc 1
expect_text "state 'rng' (16 bytes) gave different bytes in two reads of the same state, in the reference, stopped and resumed runs: bytes 1-7 differ. Uninitialized padding"
expect_out "a registered state is not reproducible (uninitialized padding)"

# ---- seeded from the clock: not deterministic even without a restart ------------------------

run check-resume --twice -- "${TRAIN[@]}" --time-seed
expect_rc 1
expect_out "not deterministic even without a restart: the first uninterrupted run and the second one differ"
expect_out "first difference at step 0 (model.ckpt-0)"
expect_text "only the state rng differs and every array is equal: it starts from something that is not the same in another process"
expect_no_out "the resumed run differs"
expect_err "run 2: the uninterrupted run again (--twice)"
if grep -qF "run 3" "$W/err"; then fail "a stopped run was made after two runs that differ"; else pass; fi
# Without --twice the stopped run, before its restart, shows the same.
run check-resume -- "${TRAIN[@]}" --time-seed
expect_rc 1
expect_out "not deterministic even without a restart: the uninterrupted run and the stopped run (not restarted yet)"
expect_no_out "the resumed run differs"

# ---- usage, and programs that fail, never stop, or start over ---------------------------------

run check-resume -- "$TRAINER" --steps 200
expect_rc 2
expect_err "the command has no {dir}"
run check-resume
expect_rc 2
expect_err "no command"
run check-resume --stop-at -3 -- "${TRAIN[@]}"
expect_rc 2
expect_err "invalid --stop-at '-3'"
run check-resume --frobnicate -- "${TRAIN[@]}"
expect_rc 2
expect_err "unknown option '--frobnicate'"
run check-resume --stop-at 200 -- "${TRAIN[@]}"
expect_rc 2
expect_err "the uninterrupted run ends at step 200"
run check-resume --help
expect_rc 0
expect_out "usage: hooked-ckpt check-resume [OPTIONS] -- COMMAND [ARGS...]"
# The program's own --help is its own.
run check-resume -- "$TRAINER" --help '{dir}'
expect_rc 2
expect_err "resume_trainer: unknown or incomplete argument"

run check-resume -- sh -c 'echo "loading data"; echo "error: cannot open data.csv" >&2; exit 3' sh '{dir}'
expect_rc 2
expect_err "the reference run failed with exit status 3"
expect_err "error: cannot open data.csv"
expect_err "loading data"
expect_work_dirs 1
run check-resume -- sh -c 'kill -KILL $$' sh '{dir}'
expect_rc 2
expect_err "the reference run was killed by signal 9"
run check-resume -- sh -c 'true' sh '{dir}'
expect_rc 2
expect_err "the reference run wrote no checkpoint into"

# A program that does not stop when asked (here: it copies checkpoints made beforehand).
HOOKED_CHECK_RESUME= "$TRAINER" --steps 100 --checkpoint-dir "$W/made" --save-steps 10 >/dev/null 2>&1
run check-resume -- sh -c 'cp "$0"/* "$1"/' "$W/made" '{dir}'
expect_rc 2
expect_err "the stopped run did not stop at step"
# A program that fails when stopped early (here: when asked to stop).
run check-resume -- sh -c 'case "$HOOKED_CHECK_RESUME" in *stop_at*) echo "Run called even after should_stop requested." >&2; exit 1 ;; esac; exec "$0" --steps 100 --checkpoint-dir "$1"' "$TRAINER" '{dir}'
expect_rc 2
expect_err "the stopped run failed with exit status 1"
expect_err "Run called even after should_stop requested."
expect_err "this one was asked to stop after step 50"
# A program that starts over instead of resuming (here: it empties {dir} first).
run check-resume -- sh -c 'rm -rf "$1"/*; exec "$0" --steps 100 --checkpoint-dir "$1"' "$TRAINER" '{dir}'
expect_rc 2
expect_err "did not resume from step 50 but started over"

echo "check-resume: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
