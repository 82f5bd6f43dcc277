#!/usr/bin/env bash
# hooked-ckpt on sharded checkpoints (contract H96): make_sharded writes a
# 3-rank checkpoint at steps 10 and 20; ls lists the variables whole and each
# shard; verify checks the index and every shard (a flipped byte, a missing
# shard, a shard of another save are FAILED naming the shard); latest falls
# back past a broken one; dump prints a variable assembled from its slices
# (a partitioned one whole, the ranks' blocks in order); diff compares two
# sharded checkpoints. With a numpy interpreter given, every
# shard is also opened and checked by read_shards.py.
#
#   test_hooked_ckpt_sharded.sh HOOKED_CKPT MAKE_SHARDED WORKDIR [PYTHON READ_SHARDS]
set -u

if [ $# -ne 3 ] && [ $# -ne 5 ]; then
  echo "usage: $0 HOOKED_CKPT MAKE_SHARDED WORKDIR [PYTHON READ_SHARDS]" >&2
  exit 2
fi
TOOL=$1
MAKE=$2
W=$3
PY=${4:-}
READ=${5:-}
rm -rf "$W"
mkdir -p "$W/ck"
D=$W/ck
PASSED=0
FAILED=0
RC=0
LAST=""

run() {
  LAST="hooked-ckpt $*"
  "$TOOL" "$@" >"$W/out" 2>"$W/err"
  RC=$?
}
pass() { PASSED=$((PASSED + 1)); }
fail() {
  FAILED=$((FAILED + 1))
  printf 'FAILED: %s: %s\n--- stdout:\n%s\n--- stderr:\n%s\n---\n' "$LAST" "$1" "$(cat "$W/out")" "$(cat "$W/err")"
}
expect_rc() { if [ "$RC" -eq "$1" ]; then pass; else fail "exit status $RC, expected $1"; fi; }
expect_out() { if grep -qF -- "$1" "$W/out"; then pass; else fail "stdout lacks '$1'"; fi; }
expect_err() { if grep -qF -- "$1" "$W/err"; then pass; else fail "stderr lacks '$1'"; fi; }

if ! "$MAKE" "$D" 3 10 20; then
  echo "make_sharded failed" >&2
  exit 1
fi

if [ -n "$PY" ]; then
  LAST="read_shards.py"
  if "$PY" "$READ" "$D/model.ckpt-20" 3 20 >"$W/out" 2>"$W/err"; then pass; else fail "numpy could not read the shards"; fi
fi

run ls "$D/model.ckpt-20"
expect_rc 0
expect_out "$D/model.ckpt-20.shards: global step 20, 4 tensors"
expect_out "F32    [4, 5]  80"
expect_out "p            F32    [7]     28"
expect_out "$D/model.ckpt-20.shard-00001-of-00003.safetensors: global step 20"
expect_out "(shard 2 of 3)"
expect_out "local/rng"

run ls "$D"
expect_rc 0
expect_out "the state file lists 2 checkpoints"
expect_out "$D/model.ckpt-10.shards"

run verify "$D"
expect_rc 0
expect_out "OK      $D/model.ckpt-20.shards (global step 20, 4 tensors"
expect_out "2 checkpoints: 2 OK, 0 FAILED"

run dump "$D/model.ckpt-20" w
expect_rc 0
expect_out "20.25"
expect_out "24.75"

run dump "$D/model.ckpt-20" p
expect_rc 0
expect_out "[2000. 2001. 2002. 2003. 2004. 2005. 2006.]"

run diff "$D/model.ckpt-10" "$D/model.ckpt-20"
expect_rc 1
expect_out "w"
expect_out "p            differs    F32 [7]: 7 of 7 elements differ"

run diff "$D/model.ckpt-20" "$D/model.ckpt-20"
expect_rc 0

# A flipped byte in a shard: verify names it; latest falls back.
cp "$D/model.ckpt-20.shard-00001-of-00003.safetensors" "$W/keep"
SIZE=$(stat -c %s "$W/keep")
printf '\x7f' | dd of="$D/model.ckpt-20.shard-00001-of-00003.safetensors" bs=1 seek=$((SIZE - 1)) conv=notrunc status=none
run verify "$D/model.ckpt-20"
expect_rc 1
expect_out "FAILED  "
expect_out "shard-00001-of-00003"
run latest "$D"
expect_rc 0
expect_out "$D/model.ckpt-10"
expect_err "model.ckpt-20"

# A missing shard, then one of another save.
rm "$D/model.ckpt-20.shard-00001-of-00003.safetensors"
run verify "$D/model.ckpt-20"
expect_rc 1
expect_out "shard 1 of 3"
expect_out "is missing"
cp "$D/model.ckpt-10.shard-00001-of-00003.safetensors" "$D/model.ckpt-20.shard-00001-of-00003.safetensors"
run verify "$D/model.ckpt-20"
expect_rc 1
expect_out "is not the one its index records"
cp "$W/keep" "$D/model.ckpt-20.shard-00001-of-00003.safetensors"
run verify "$D/model.ckpt-20"
expect_rc 0

echo "test_hooked_ckpt_sharded: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
