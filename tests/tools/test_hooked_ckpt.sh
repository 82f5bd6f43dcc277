#!/usr/bin/env bash
# Tests of the hooked-ckpt tool: every command's output and exit status on
# checkpoints written by make_checkpoint (tests/python/make_checkpoint.c, whose
# values are known), on corrupted, truncated and missing files, on a directory
# with a malformed or stale state file, and on bad usage.
#
#   test_hooked_ckpt.sh HOOKED_CKPT MAKE_CHECKPOINT WORKDIR
#
# Exit status 0 when every check passes.
set -u

if [ $# -ne 3 ]; then
  echo "usage: $0 HOOKED_CKPT MAKE_CHECKPOINT WORKDIR" >&2
  exit 2
fi
TOOL=$1
MAKE=$2
W=$3

rm -rf "$W"
mkdir -p "$W"

PASSED=0
FAILED=0
OUT=""
ERR=""
RC=0
LAST=""

# run ARGS...: run the tool, keeping stdout, stderr and the exit status.
run() {
  LAST="hooked-ckpt $*"
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
# expect_out/expect_err TEXT: TEXT occurs literally.
expect_out() { if grep -qF -- "$1" "$W/out"; then pass; else fail "stdout lacks '$1'"; fi; }
expect_err() { if grep -qF -- "$1" "$W/err"; then pass; else fail "stderr lacks '$1'"; fi; }
expect_no_out() { if grep -qF -- "$1" "$W/out"; then fail "stdout has '$1'"; else pass; fi; }
expect_out_is() { if [ "$OUT" = "$1" ]; then pass; else fail "stdout is not:
$1"; fi; }
expect_err_empty() { if [ -z "$ERR" ]; then pass; else fail "stderr is not empty"; fi; }
# Every stderr line of a failure starts with "hooked-ckpt: ".
expect_err_lines_prefixed() {
  if [ -n "$ERR" ] && ! grep -qv '^hooked-ckpt: ' "$W/err"; then pass; else fail "stderr lines not all 'hooked-ckpt: ...'"; fi
}

# flip_byte FILE OFFSET: invert one byte in place.
flip_byte() {
  local byte
  byte=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((byte ^ 0xff)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# data_start FILE: offset of the tensor data, 8 + N (checkpoint-format.md).
data_start() {
  local n
  n=$(od -An -tu8 -N8 "$1" | tr -d ' ')
  echo $((8 + n))
}

# ---- fixtures -------------------------------------------------------------------

CK=$W/ck
mkdir -p "$CK"
if ! "$MAKE" "$CK" 5 10 20 >"$W/prefixes"; then
  echo "make_checkpoint failed" >&2
  exit 1
fi
P5=$CK/model.ckpt-5
P10=$CK/model.ckpt-10
P20=$CK/model.ckpt-20
NOSTATE=$W/nostate
mkdir -p "$NOSTATE"
"$MAKE" --no-state "$NOSTATE" 3 30 >/dev/null || exit 1
EMPTY=$W/empty
mkdir -p "$EMPTY"

# ---- usage ----------------------------------------------------------------------

run --help
expect_rc 0
expect_out "usage: hooked-ckpt COMMAND"
expect_out "verify FILE|DIR"
run verify -h
expect_rc 0
expect_out "usage: hooked-ckpt"
run --version
expect_rc 0
expect_out "hooked-ckpt (hooked "
run
expect_rc 2
expect_err "usage: hooked-ckpt"
run frobnicate "$CK"
expect_rc 2
expect_err "hooked-ckpt: unknown command 'frobnicate'"
expect_err "Try 'hooked-ckpt --help'."
run ls
expect_rc 2
expect_err "'ls' needs exactly one path"
run verify "$P5" "$P10"
expect_rc 2
run latest
expect_rc 2
run dump "$P20"
expect_rc 2
expect_err "'dump' needs FILE and NAME"
run dump --limit x "$P20" lr
expect_rc 2
expect_err "invalid --limit 'x'"
run dump "$P20" lr --limit
expect_rc 2
expect_err "option '--limit' needs a value"
run ls --bogus "$CK"
expect_rc 2
expect_err "unknown option '--bogus'"
run ls --limit 3 "$CK"
expect_rc 2

# ---- ls -------------------------------------------------------------------------

run ls "$P20"
expect_rc 0
expect_err_empty
expect_out "$P20.safetensors: global step 20, 18 tensors, 1095 bytes"
expect_out "  name           dtype  shape      bytes"
expect_out "  Z_upper        U8     [2, 2, 2]  8"
expect_out "  dense/kernel   F32    [3, 4]     48"
expect_out "  empty          F32    [0, 3]     0"
expect_out "  global_step    I64    []         8"
expect_out "  half           F16    [6]        12"
expect_out "  bhalf          BF16   [3]        6"
expect_out "  mask           BOOL   [7]        7"
expect_out "  wide           F32    [3, 70]    840"
# Bytewise name order: "Z_upper" (0x5A) before "bhalf".
if [ "$(sed -n 3p "$W/out")" = "  Z_upper        U8     [2, 2, 2]  8" ]; then pass; else fail "Z_upper is not listed first"; fi
run ls "$P20.safetensors"
expect_rc 0
expect_out "$P20.safetensors: global step 20, 18 tensors"

run ls "$CK"
expect_rc 0
expect_out "$CK: the state file lists 3 checkpoints"
expect_out "$P5.safetensors: global step 5, 18 tensors, 1095 bytes, saved "
expect_out "$P10.safetensors: global step 10"
expect_out " UTC (latest)"
if grep -F "$P20.safetensors:" "$W/out" | grep -qF "(latest)"; then pass; else fail "step 20 is not marked latest"; fi
if grep -F "$P10.safetensors:" "$W/out" | grep -qF "(latest)"; then fail "step 10 is marked latest"; else pass; fi
run ls "$CK/"
expect_rc 0
expect_out "$CK: the state file lists 3 checkpoints" # "dir/" read as "dir"...
expect_out "$P5.safetensors: global step 5"          # ...its checkpoints without "//"
if [ "$(grep -c 'global step' "$W/out")" -eq 3 ]; then pass; else fail "'$CK/' listed a checkpoint twice"; fi

run ls "$NOSTATE"
expect_rc 0
expect_out "$NOSTATE: no state file; 2 checkpoints found"
expect_out "$NOSTATE/model.ckpt-3.safetensors: global step 3"
expect_out "$NOSTATE/model.ckpt-30.safetensors: global step 30"
# Unlisted checkpoints sort by step, not by name: 3 before 30.
if [ "$(grep -n 'global step 3,' "$W/out" | cut -d: -f1)" -lt "$(grep -n 'global step 30,' "$W/out" | cut -d: -f1)" ]; then
  pass
else
  fail "step 30 listed before step 3"
fi

run ls "$W/nope"
expect_rc 1
expect_err "hooked-ckpt: $W/nope: "
expect_err_lines_prefixed
run ls "$EMPTY"
expect_rc 1
expect_err "hooked-ckpt: $EMPTY: no checkpoint found"

# ---- verify ---------------------------------------------------------------------

run verify "$P10"
expect_rc 0
expect_out "OK      $P10.safetensors (global step 10, 18 tensors, 1095 bytes)"
run verify "$CK"
expect_rc 0
expect_out "OK      $P5.safetensors"
expect_out "OK      $P20.safetensors"
expect_out "3 checkpoints: 3 OK, 0 FAILED"
run verify "$NOSTATE"
expect_rc 0
expect_out "2 checkpoints: 2 OK, 0 FAILED"
run verify "$EMPTY"
expect_rc 1
expect_err "hooked-ckpt: $EMPTY: no checkpoint found"
run verify "$W/nope"
expect_rc 1
expect_out "FAILED  $W/nope"
expect_err "hooked-ckpt: $W/nope: "

# ---- latest ---------------------------------------------------------------------

run latest "$CK"
expect_rc 0
expect_out_is "$P20"
# No state file but checkpoints (D5.2): a warning naming the directory and
# the missing state file, then the directory scan's newest.
run latest "$NOSTATE"
expect_rc 0
expect_out_is "$NOSTATE/model.ckpt-30"
expect_err "hooked-ckpt: warning: "
expect_err "$NOSTATE/checkpoint is missing; scanning $NOSTATE"
run latest "$EMPTY"
expect_rc 1
expect_err "hooked-ckpt: $EMPTY: "
run latest "$W/nope"
expect_rc 1
expect_err "hooked-ckpt: $W/nope: "

# ---- dump -----------------------------------------------------------------------

run dump "$P20" dense/kernel
expect_rc 0
expect_err_empty
expect_out_is "[[-1.25 -1.   -0.75 -0.5 ]
 [-0.25  0.    0.25  0.5 ]
 [ 0.75  1.    1.25  1.5 ]]"
run dump "$P20.safetensors" dense/bias
expect_rc 0
expect_out_is "[-0.25  -0.125  0.     0.125]"
run dump "$P20" counts
expect_rc 0
expect_out_is "[-20000 -12081  -4162   3757  11676]"
run dump "$P20" embedding/ids
expect_rc 0
expect_out_is "[[-11999999980  -7999999980  -3999999980]
 [          20   4000000020   8000000020]]"
run dump "$P20" Z_upper
expect_rc 0
expect_out_is "[[[ 11  48]
  [ 85 122]]

 [[159 196]
  [233  14]]]"
run dump "$P20" mask
expect_rc 0
expect_out_is "[ True False False  True False False  True]"
run dump "$P20" half
expect_rc 0
expect_out_is "[ 1.000e+00 -2.000e+00  3.333e-01  6.550e+04  5.960e-08 -0.000e+00]"
run dump "$P20" bhalf
expect_rc 0
expect_out_is "[ 1.   -3.    3.14]" # the shortest text that reads back as the bf16
run dump "$P20" lr
expect_rc 0
expect_out_is "0.125"
run dump "$P20" global_step
expect_rc 0
expect_out_is "20"
run dump "$P20" ints/i8
expect_rc 0
expect_out_is "[-128   -1    0  127]"
run dump "$P20" ints/i16
expect_rc 0
expect_out_is "[-32768  12345  32767]"
run dump "$P20" ints/u16
expect_rc 0
expect_out_is "[    0 65535]"
run dump "$P20" ints/u32
expect_rc 0
expect_out_is "[         0 4294967295]"
run dump "$P20" ints/u64
expect_rc 0
expect_out_is "[                   0 18446744073709551615]"
run dump "$P20" scaled
expect_rc 0
expect_out_is "[20.5 40.5 60.5]"
run dump "$P20" empty
expect_rc 0
expect_out_is "[]"
run dump "$P20" wide --limit 5
expect_rc 0
expect_out_is "[[0.  0.5 1.  1.5 2.  ...]]"
expect_err "hooked-ckpt: $P20.safetensors: tensor wide: showed 5 of 210 elements (--limit 0 shows all)"
run dump --limit=0 "$P20" wide
expect_rc 0
expect_err_empty
expect_out " 104.5]]"
if [ "$(tr -cd '.' <"$W/out" | wc -c)" -eq 210 ]; then pass; else fail "--limit 0 did not print 210 elements"; fi
if ! awk 'length($0) > 75 { exit 1 }' "$W/out"; then fail "a line is longer than 75 columns"; else pass; fi
run dump "$P20" wide # 210 elements: under the default limit of 1000
expect_rc 0
expect_err_empty
run dump "$P20" no/such
expect_rc 1
expect_err "hooked-ckpt: $P20.safetensors: "
expect_err "no/such"
run dump "$W/nope" lr
expect_rc 1
expect_err "hooked-ckpt: $W/nope: "
run dump "$CK" lr
expect_rc 1
expect_err "hooked-ckpt: $CK: is a directory"

# ---- a corrupted tensor (a flipped byte in its data) ----------------------------

BAD=$W/bad
cp -r "$CK" "$BAD"
B20=$BAD/model.ckpt-20
# Tensors lie in bytewise name order: the data of Z_upper comes first.
flip_byte "$B20.safetensors" "$(data_start "$B20.safetensors")"
run verify "$B20"
expect_rc 1
expect_out "FAILED  $B20.safetensors: "
expect_out "Z_upper"
expect_err "hooked-ckpt: $B20"
run verify "$BAD"
expect_rc 1
expect_out "OK      $BAD/model.ckpt-5.safetensors"
expect_out "FAILED  $B20.safetensors: "
expect_out "3 checkpoints: 2 OK, 1 FAILED"
expect_err "hooked-ckpt: $BAD: 1 of 3 checkpoints FAILED verification"
run dump "$B20" Z_upper
expect_rc 1
expect_err "Z_upper"
expect_err_lines_prefixed
run dump "$B20" lr # other tensors still read
expect_rc 0
expect_out_is "0.125"
run ls "$B20" # ls reads headers only
expect_rc 0
# latest falls back past the corrupt newest checkpoint (D5.1).
run latest "$BAD"
expect_rc 0
expect_out_is "$BAD/model.ckpt-10"
expect_err "model.ckpt-20"

# A flipped byte in the header: refused when opened.
HDR=$W/hdr.safetensors
cp "$P5.safetensors" "$HDR"
flip_byte "$HDR" 20
run verify "$HDR"
expect_rc 1
expect_out "FAILED  $HDR"
run ls "$HDR"
expect_rc 1
expect_err "hooked-ckpt: $HDR: "

# ---- truncated files ------------------------------------------------------------

TRUNC=$W/trunc.safetensors
cp "$P5.safetensors" "$TRUNC"
truncate -s $(($(stat -c %s "$P5.safetensors") - 1)) "$TRUNC"
run verify "$TRUNC"
expect_rc 1
expect_out "FAILED  $TRUNC"
run ls "$TRUNC"
expect_rc 1
expect_err "hooked-ckpt: $TRUNC: "
TINY=$W/tiny.safetensors
head -c 4 "$P5.safetensors" >"$TINY"
run verify "$TINY"
expect_rc 1
expect_out "FAILED  $TINY"
run dump "$TINY" lr
expect_rc 1
expect_err "hooked-ckpt: $TINY: "

# ---- stale and malformed state files --------------------------------------------

STALE=$W/stale
cp -r "$CK" "$STALE"
rm "$STALE/model.ckpt-10.safetensors"
run verify "$STALE"
expect_rc 1
expect_out "FAILED  $STALE/model.ckpt-10"
expect_out "3 checkpoints: 2 OK, 1 FAILED"
run ls "$STALE"
expect_rc 1
expect_err "hooked-ckpt: $STALE/model.ckpt-10"

# A checkpoint the state file does not list is shown and verified too.
EXTRA=$W/extra
cp -r "$CK" "$EXTRA"
"$MAKE" --no-state "$EXTRA" 7 >/dev/null || exit 1
run ls "$EXTRA"
expect_rc 0
expect_out "$EXTRA: the state file lists 3 checkpoints; 1 more not in it"
expect_out "$EXTRA/model.ckpt-7.safetensors: global step 7, 18 tensors, 1095 bytes (not in the state file)"
run verify "$EXTRA"
expect_rc 0
expect_out "4 checkpoints: 4 OK, 0 FAILED"
run latest "$EXTRA" # the state file decides, not the scan
expect_rc 0
expect_out_is "$EXTRA/model.ckpt-20"

MALFORMED=$W/malformed
cp -r "$NOSTATE" "$MALFORMED"
printf 'this is not a state file\n' >"$MALFORMED/checkpoint"
run verify "$MALFORMED"
expect_rc 1
expect_err "hooked-ckpt: $MALFORMED: "
expect_out "2 checkpoints: 2 OK, 0 FAILED"
run latest "$MALFORMED" # a malformed state file: the directory scan (D5.2)
expect_rc 0
expect_out_is "$MALFORMED/model.ckpt-30"
expect_err "hooked-ckpt: warning: "
run ls "$MALFORMED"
expect_rc 1
expect_out "model.ckpt-30.safetensors: global step 30"

printf 'hooked-ckpt tool test: %d checks passed, %d failed\n' "$PASSED" "$FAILED"
[ "$FAILED" -eq 0 ]
