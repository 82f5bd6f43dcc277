#!/usr/bin/env bash
# Tests of the hooked-ckpt tool: every command's output and exit status on
# checkpoints written by make_checkpoint (tests/python/make_checkpoint.c, whose
# values are known), on corrupted, truncated and missing files, on a directory
# with a malformed or stale state file, and on bad usage. diff also runs on
# small checkpoints written here byte by byte (write_st), whose tensors only
# one file has, or differ in dtype, shape, NaNs, signed zeros or extremes.
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

# crc32c HEX: the CRC-32C (checkpoint-format.md) of the bytes HEX spells, as
# 8 lowercase hex digits; bitwise, for the few bytes of the fixtures below.
crc32c() {
  local hex=$1 crc=$((0xffffffff)) k b
  for ((k = 0; k < ${#hex}; k += 2)); do
    crc=$((crc ^ 16#${hex:k:2}))
    for ((b = 0; b < 8; b++)); do
      crc=$(((crc >> 1) ^ (0x82f63b78 & -(crc & 1))))
    done
  done
  printf '%08x' $((crc ^ 0xffffffff))
}

# write_st FILE STEP [NAME DTYPE SHAPE HEX]...: a hooked checkpoint data file
# written without the library: one tensor per quadruple, SHAPE as JSON
# ("[2, 3]"), HEX its little-endian bytes (spaces allowed), with its CRC.
write_st() {
  local file=$1 step=$2 tensors="" meta="" data="" esc="" off=0 hex n k oct header len
  shift 2
  while [ $# -ge 4 ]; do
    hex=${4// /}
    n=$((${#hex} / 2))
    tensors+="\"$1\":{\"dtype\":\"$2\",\"shape\":$3,\"data_offsets\":[$off,$((off + n))]},"
    meta+=",\"crc32c:$1\":\"$(crc32c "$hex")\""
    data+=$hex
    off=$((off + n))
    shift 4
  done
  header="{$tensors\"__metadata__\":{\"format\":\"hooked/1\",\"global_step\":\"$step\"$meta}}"
  len=${#header}
  for ((k = 0; k < 8; k++)); do
    printf -v oct '\\%03o' $(((len >> (8 * k)) & 0xff))
    esc+=$oct
  done
  for ((k = 0; k < ${#data}; k += 2)); do
    printf -v oct '\\%03o' $((16#${data:k:2}))
    esc+=$oct
  done
  # The 8-byte length, the header, the data.
  {
    printf "${esc:0:32}"
    printf '%s' "$header"
    printf "${esc:32}"
  } >"$file"
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
expect_out "verify [--finite] FILE|DIR"
expect_out "--finite that line says FAILED"
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
run --help
expect_out "diff A B"
run diff
expect_rc 2
expect_err "'diff' needs two checkpoints, A and B"
run diff "$P5"
expect_rc 2
expect_err "'diff' needs two checkpoints, A and B"
expect_err "Try 'hooked-ckpt --help'."
run diff "$P5" "$P10" "$P20"
expect_rc 2
expect_err "'diff' needs two checkpoints, A and B"
run diff --limit 3 "$P5" "$P10"
expect_rc 2
expect_err "unknown option '--limit'"

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
# A name <basename>-<step> must say the global step the file holds.
RENAMED=$W/renamed
mkdir -p "$RENAMED"
cp "$P5.safetensors" "$RENAMED/model.ckpt-300.safetensors"
run verify "$RENAMED/model.ckpt-300"
expect_rc 1
expect_out "FAILED  $RENAMED/model.ckpt-300.safetensors: its name says step 300 but it holds global step 5"
expect_err "hooked-ckpt: $RENAMED/model.ckpt-300: verification FAILED"
run verify "$RENAMED"
expect_rc 1
expect_out "1 checkpoint: 0 OK, 1 FAILED"
cp "$P5.safetensors" "$RENAMED/model.ckpt-00000005.safetensors" # pad_step_number's name
cp "$P5.safetensors" "$RENAMED/best.safetensors"                # saved without a step: no name to hold it to
run verify "$RENAMED/model.ckpt-00000005"
expect_rc 0
run verify "$RENAMED/best"
expect_rc 0
expect_out "OK      $RENAMED/best.safetensors (global step 5"
# The header's step is covered: by its own CRC-32C, and by the global-step tensor.
STEPPED=$RENAMED/stepped.safetensors
cp "$P5.safetensors" "$STEPPED"
sed -i 's/"global_step":"5"/"global_step":"6"/' "$STEPPED"
run verify "$STEPPED"
expect_rc 1
expect_out "FAILED  $STEPPED: Checkpoint $STEPPED is corrupt: its global_step \"6\" does not match its CRC-32C"

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

# ---- diff ---------------------------------------------------------------------

# make_checkpoint's files are byte-identical for the same step (checkpoint-format.md:
# no timestamps inside), wherever they are written.
TWIN=$W/twin
mkdir -p "$TWIN"
"$MAKE" --no-state "$TWIN" 20 >/dev/null || exit 1
run diff "$P20" "$TWIN/model.ckpt-20"
expect_rc 0
expect_err_empty
expect_out "A: $P20.safetensors: global step 20, 18 tensors, 1095 bytes"
expect_out "B: $TWIN/model.ckpt-20.safetensors: global step 20, 18 tensors, 1095 bytes"
expect_out "  Z_upper        equal"
expect_out "  wide           equal"
expect_no_out "differs"
expect_no_out "global step differs"
if [ "$(tail -n 1 "$W/out")" = "identical: 18 tensors" ]; then pass; else fail "the last line is not the summary"; fi
if [ "$(grep -c ' equal$' "$W/out")" -eq 18 ]; then pass; else fail "not 18 tensors listed equal"; fi
# A directory stands for its latest checkpoint; "dir/" is "dir".
run diff "$CK/" "$TWIN/model.ckpt-20.safetensors"
expect_rc 0
expect_out "A: $P20.safetensors: global step 20, 18 tensors, 1095 bytes (latest in $CK)"
expect_out "identical: 18 tensors"
# ... the latest that verifies: BAD's newest is corrupt, so its step 10.
run diff "$BAD" "$P10"
expect_rc 0
expect_out "(latest in $BAD)"
expect_out "identical: 18 tensors"
expect_err "model.ckpt-20"

# Steps 5 and 10: embedding/ids, scaled and global_step change with the step.
run diff "$P5" "$P10"
expect_rc 1
expect_err_empty
expect_out "global step differs: 5 in A, 10 in B"
expect_out "  embedding/ids  differs    I64 [2, 3]: 6 of 6 elements differ; first at [0, 0] (flat 0): -11999999995 vs -11999999990; max abs diff 5"
expect_out "  scaled         differs    F64 [3]: 3 of 3 elements differ; first at [0] (flat 0): 5.5 vs 10.5; max abs diff 15"
expect_out "  global_step    differs    I64 []: 1 of 1 element differs; first at [] (flat 0): 5 vs 10; max abs diff 5"
expect_out "  dense/kernel   equal"
if [ "$(grep -c ' equal$' "$W/out")" -eq 15 ]; then pass; else fail "not 15 tensors listed equal"; fi
if [ "$(tail -n 1 "$W/out")" = "differ: 3 of 18 tensors differ, 0 only in A, 0 only in B; global step differs (5 vs 10)" ]; then
  pass
else
  fail "the summary is not the last line"
fi
# The tensor lines come in bytewise name order: Z_upper (0x5A) first.
if [ "$(sed -n 4p "$W/out")" = "  Z_upper        equal" ]; then pass; else fail "Z_upper is not listed first"; fi

# Files written here: every dtype family, NaN, -0, extremes, a tensor only in
# A, one only in B, one whose dtype and one whose shape differ (bytes LE).
DA=$W/diff_a.safetensors
DB=$W/diff_b.safetensors
write_st "$DA" 7 \
  a/f16 F16 "[2, 3]" "003c 0040 00c0 0038 0000 ff7b" \
  b/bf16 BF16 "[3]" "803f 4940 40c0" \
  c/f32 F32 "[2, 2]" "0000803f 0000c07f 00000040 00004040" \
  d/nan F32 "[2]" "0000c07f 0000803f" \
  e/i64 I64 "[1]" "0000000000000080" \
  e/i8 I8 "[2]" "807f" \
  e/mask BOOL "[4]" "01000100" \
  e/u64 U64 "[2]" "0500000000000000 0000000000000000" \
  e/u8 U8 "[3]" "00ff10" \
  f/dtype I32 "[2]" "01000000 02000000" \
  f/shape F32 "[4]" "0000803f 00000040 00004040 00008040" \
  g/only_a F32 "[]" "0000803f" \
  h/same F64 "[2]" "000000000000f03f 0000000000000040" \
  z/neg0 F32 "[1]" "00000000"
write_st "$DB" 7 \
  a/f16 F16 "[2, 3]" "003c 0040 00c0 0038 0034 fffb" \
  b/bf16 BF16 "[3]" "803f 4a40 40c0" \
  c/f32 F32 "[2, 2]" "0000803f 0000803f 00000040 00006040" \
  d/nan F32 "[2]" "0000c07f 0000803f" \
  e/i64 I64 "[1]" "ffffffffffffff7f" \
  e/i8 I8 "[2]" "7f80" \
  e/mask BOOL "[4]" "01010100" \
  e/u64 U64 "[2]" "0500000000000000 ffffffffffffffff" \
  e/u8 U8 "[3]" "ff0010" \
  f/dtype U32 "[2]" "01000000 02000000" \
  f/shape F32 "[2, 2]" "0000803f 00000040 00004040 00008040" \
  g/only_b I64 "[1]" "0100000000000000" \
  h/same F64 "[2]" "000000000000f03f 0000000000000040" \
  z/neg0 F32 "[1]" "00000080"
run verify "$DA" # the fixture writer itself
expect_rc 0
run verify "$DB"
expect_rc 0
run diff "$DA" "$DB"
expect_rc 1
expect_err_empty
expect_no_out "global step differs"
# F16 and BF16 converted exactly: 65504 - (-65504), 3.15625 - 3.140625.
expect_out "  a/f16     differs    F16 [2, 3]: 2 of 6 elements differ; first at [1, 1] (flat 4): 0 vs 0.25; max abs diff 131008"
expect_out "  b/bf16    differs    BF16 [3]: 1 of 3 elements differs; first at [1] (flat 1): 3.14 vs 3.16; max abs diff 0.015625"
expect_out "  c/f32     differs    F32 [2, 2]: 2 of 4 elements differ; first at [0, 1] (flat 1): nan vs 1; max abs diff nan"
expect_out "  d/nan     equal" # the same NaN bits: equal bytewise
expect_out "  e/i64     differs    I64 [1]: 1 of 1 element differs; first at [0] (flat 0): -9223372036854775808 vs 9223372036854775807; max abs diff 18446744073709551615"
expect_out "  e/i8      differs    I8 [2]: 2 of 2 elements differ; first at [0] (flat 0): -128 vs 127; max abs diff 255"
expect_out "  e/mask    differs    BOOL [4]: 1 of 4 elements differs; first at [1] (flat 1): False vs True; max abs diff 1"
expect_out "  e/u64     differs    U64 [2]: 1 of 2 elements differs; first at [1] (flat 1): 0 vs 18446744073709551615; max abs diff 18446744073709551615"
expect_out "  e/u8      differs    U8 [3]: 2 of 3 elements differ; first at [0] (flat 0): 0 vs 255; max abs diff 255"
expect_out "  f/dtype   mismatch   I32 [2] in A, U32 [2] in B"
expect_out "  f/shape   mismatch   F32 [4] in A, F32 [2, 2] in B"
expect_out "  g/only_a  only in A  F32 []"
expect_out "  g/only_b  only in B  I64 [1]"
expect_out "  h/same    equal"
expect_out "  z/neg0    differs    F32 [1]: 1 of 1 element differs; first at [0] (flat 0): 0 vs -0; max abs diff 0"
if [ "$(tail -n 1 "$W/out")" = "differ: 11 of 15 tensors differ, 1 only in A, 1 only in B" ]; then
  pass
else
  fail "the summary is not the last line"
fi
if [ "$(sed -n '3,17p' "$W/out" | cut -c3-10 | tr -d ' ' | tr '\n' ' ')" = "a/f16 b/bf16 c/f32 d/nan e/i64 e/i8 e/mask e/u64 e/u8 f/dtype f/shape g/only_a g/only_b h/same z/neg0 " ]; then
  pass
else
  fail "the tensors are not listed once each in bytewise name order"
fi
run diff "$DB" "$DA" # the other way round
expect_rc 1
expect_out "  a/f16     differs    F16 [2, 3]: 2 of 6 elements differ; first at [1, 1] (flat 4): 0.25 vs 0; max abs diff 131008"
expect_out "  g/only_a  only in B  F32 []"
expect_out "differ: 11 of 15 tensors differ, 1 only in A, 1 only in B"
run diff "$DA" "$DA"
expect_rc 0
expect_out "identical: 14 tensors"

# Only the global step differs: different all the same.
S7=$W/step7.safetensors
S8=$W/step8.safetensors
write_st "$S7" 7 w F32 "[2]" "0000803f 00000040"
write_st "$S8" 8 w F32 "[2]" "0000803f 00000040"
run diff "$S7" "$S8"
expect_rc 1
expect_out_is "A: $S7: global step 7, 1 tensor, 8 bytes
B: $S8: global step 8, 1 tensor, 8 bytes
global step differs: 7 in A, 8 in B
  w     equal
differ: 0 of 1 tensor differ, 0 only in A, 0 only in B; global step differs (7 vs 8)"

# Unreadable: exit status 2 (1 means "different"), the file named.
run diff "$P20" "$B20" # a corrupt tensor (Z_upper)
expect_rc 2
expect_err "hooked-ckpt: $B20.safetensors: "
expect_err "Z_upper"
expect_err_lines_prefixed
expect_no_out "identical"
expect_no_out "differ:"
run diff "$B20" "$P20"
expect_rc 2
expect_err "hooked-ckpt: $B20.safetensors: "
run diff "$HDR" "$P5" # a corrupt header
expect_rc 2
expect_err "hooked-ckpt: $HDR: "
expect_out_is ""
run diff "$P5" "$TRUNC"
expect_rc 2
expect_err "hooked-ckpt: $TRUNC: "
run diff "$P5" "$W/nope"
expect_rc 2
expect_err "hooked-ckpt: $W/nope: "
run diff "$EMPTY" "$P5" # a directory without a checkpoint
expect_rc 2
expect_err "hooked-ckpt: $EMPTY: "
# A corrupt tensor only one file has is found too: every tensor is read.
C1=$W/only_corrupt.safetensors
C2=$W/only_ok.safetensors
write_st "$C1" 1 a U8 "[1]" "01" zz U8 "[2]" "0203"
write_st "$C2" 1 a U8 "[1]" "01"
flip_byte "$C1" $(($(stat -c %s "$C1") - 1))
run diff "$C1" "$C2"
expect_rc 2
expect_err "hooked-ckpt: $C1: "
expect_err "zz"
expect_no_out "differ:"

# ---- non-finite values (verify warns; --finite fails) -------------------------------
# Floating tensors holding NaN or Inf: a WARNING line naming the file, the
# tensor and the counts, exit status 0; with --finite a FAILED line instead,
# exit status 1. Integer tensors are never counted.
NF=$W/nonfinite
mkdir -p "$NF"
write_st "$NF/model.ckpt-3.safetensors" 3 \
  a/f16 F16 "[3]" "007c 00fc 017e" \
  b/bf16 BF16 "[2]" "807f 0000" \
  c/f32 F32 "[4]" "0000803f 0000c07f 0000807f 000080ff" \
  d/f64 F64 "[1]" "000000000000f87f" \
  e/ok F32 "[1]" "0000803f" \
  g/int I32 "[1]" "ffffffff"
write_st "$NF/model.ckpt-4.safetensors" 4 w F32 "[2]" "0000803f 00000040"
run verify "$NF/model.ckpt-3"
expect_rc 0
expect_err_empty
expect_out "WARNING $NF/model.ckpt-3.safetensors: tensor 'a/f16' holds 3 non-finite values of 3 (1 NaN, 1 +Inf, 1 -Inf)"
expect_out "WARNING $NF/model.ckpt-3.safetensors: tensor 'b/bf16' holds 1 non-finite value of 2 (0 NaN, 1 +Inf, 0 -Inf)"
expect_out "WARNING $NF/model.ckpt-3.safetensors: tensor 'c/f32' holds 3 non-finite values of 4 (1 NaN, 1 +Inf, 1 -Inf)"
expect_out "WARNING $NF/model.ckpt-3.safetensors: tensor 'd/f64' holds 1 non-finite value of 1 (1 NaN, 0 +Inf, 0 -Inf)"
expect_no_out "'e/ok'"
expect_no_out "'g/int'"
expect_out "OK      $NF/model.ckpt-3.safetensors (global step 3, 6 tensors"
run verify --finite "$NF/model.ckpt-3"
expect_rc 1
expect_out "FAILED  $NF/model.ckpt-3.safetensors: tensor 'c/f32' holds 3 non-finite values of 4 (1 NaN, 1 +Inf, 1 -Inf)"
expect_no_out "WARNING"
expect_no_out "OK      $NF/model.ckpt-3"
expect_err "hooked-ckpt: $NF/model.ckpt-3: verification FAILED"
run verify "$NF/model.ckpt-4" --finite # after the path too; a finite checkpoint passes
expect_rc 0
expect_out "OK      $NF/model.ckpt-4.safetensors"
run verify "$NF"
expect_rc 0
expect_out "2 checkpoints: 2 OK, 0 FAILED (1 with non-finite values; --finite fails them)"
run verify --finite "$NF"
expect_rc 1
expect_out "2 checkpoints: 1 OK, 1 FAILED"
expect_out "OK      $NF/model.ckpt-4.safetensors"
expect_err "hooked-ckpt: $NF: 1 of 2 checkpoints FAILED verification"
run ls --finite "$NF" # verify's option only
expect_rc 2
expect_err "unknown option '--finite'"

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
