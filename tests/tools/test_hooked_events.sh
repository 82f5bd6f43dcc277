#!/usr/bin/env bash
# Tests of the hooked-events tool on event files written from scratch by
# test_hooked_events.py (TFRecord framing, hand-encoded Event protos): the
# exact CSV of every way a scalar can be stored, values that are not scalars
# skipped, RFC 4180 quoting, the sort order, a resumed run writing a step
# twice; the HTML's structure (one <svg> per tag, nothing fetched, the
# extremes present, NaN/Inf marked, runs overlaid with a legend, thousands of
# points reduced); a torn last record (warning, exit 0), damaged records and
# files that are not event files (exit 1 naming file and offset); bad usage
# (exit 2). With WRITER (test_hooked_events.c), also files that hooked's own
# summary writer wrote: the tool reads them back value for value.
#
#   test_hooked_events.sh HOOKED_EVENTS PYTHON3 WORKDIR [WRITER]
#
# Exit status 0 when every check passes.
set -u

if [ $# -ne 3 ] && [ $# -ne 4 ]; then
  echo "usage: $0 HOOKED_EVENTS PYTHON3 WORKDIR [WRITER]" >&2
  exit 2
fi
TOOL=$1
PY=$2
W=$3
WRITER=${4:-}
FIX="$(cd "$(dirname "$0")" && pwd)/test_hooked_events.py"

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
  LAST="hooked-events $*"
  "$TOOL" "$@" >"$W/out" 2>"$W/err"
  RC=$?
  OUT=$(cat "$W/out")
  ERR=$(cat "$W/err")
}

pass() { PASSED=$((PASSED + 1)); }
fail() {
  FAILED=$((FAILED + 1))
  printf 'FAILED: %s: %s\n--- stdout:\n%s\n--- stderr:\n%s\n---\n' "$LAST" "$1" "$(head -c 3000 "$W/out")" "$ERR"
}

expect_rc() { if [ "$RC" -eq "$1" ]; then pass; else fail "exit status $RC, expected $1"; fi; }
expect_out() { if grep -qF -- "$1" "$W/out"; then pass; else fail "stdout lacks '$1'"; fi; }
expect_err() { if grep -qF -- "$1" "$W/err"; then pass; else fail "stderr lacks '$1'"; fi; }
expect_out_is() { if [ "$OUT" = "$1" ]; then pass; else fail "stdout is not:
$1"; fi; }
expect_out_empty() { if [ -z "$OUT" ]; then pass; else fail "stdout is not empty"; fi; }
expect_err_empty() { if [ -z "$ERR" ]; then pass; else fail "stderr is not empty"; fi; }
expect_err_lines_prefixed() {
  if [ -n "$ERR" ] && ! grep -qv '^hooked-events: ' "$W/err"; then pass; else fail "stderr lines not all 'hooked-events: ...'"; fi
}
# html_has FILE TEXT / html_lacks FILE TEXT / html_count FILE TEXT N
html_has() { if grep -qF -- "$2" "$1"; then pass; else fail "$1 lacks '$2'"; fi; }
html_lacks() { if grep -qiF -- "$2" "$1"; then fail "$1 has '$2'"; else pass; fi; }
html_count() {
  local n
  n=$(grep -oF -- "$2" "$1" | wc -l)
  if [ "$n" -eq "$3" ]; then pass; else fail "$1 has '$2' $n times, expected $3"; fi
}
# A page stands alone: no script, no fetched resource, no link outside it.
self_contained() {
  html_lacks "$1" "<script"
  html_lacks "$1" "src="
  html_lacks "$1" "href=\"http"
  html_lacks "$1" "href='http"
  html_lacks "$1" "url("
  html_lacks "$1" "@import"
  html_lacks "$1" "<link"
  html_lacks "$1" "<iframe"
  html_lacks "$1" "<img"
}

fixture() { "$PY" "$FIX" "$@" || { echo "fixture $* failed" >&2; exit 1; }; }

# ---- csv: every scalar encoding, exact output -------------------------------
fixture basic "$W/basic"
run csv "$W/basic"
expect_rc 0
expect_err_empty
# Sorted by tag (bytes: '"' < 'a'... as strcmp), step, wall_time, write order;
# the resumed step 3 of loss twice; histograms, text, another plugin's
# tensors and a two-element tensor are skipped; floats in their fewest
# round-tripping digits, doubles as doubles.
expect_out_is 'tag,step,wall_time,value
"a,b",2,1700000001,-3
acc,1,1700000000.25,0.5
acc,2,1700000001,0.75
acc,5,1700000011,0.875
bf,4,1700000003,1.5
count,4,1700000003,7
loss,1,1700000000.25,2.5
loss,2,1700000001,1.25
loss,3,1700000002,nan
loss,3,1700000010.5,0.5
loss,4,1700000003,inf
loss,5,1700000011,-inf
lr,2,1700000001,0.1
lr,3,1700000010.5,0.01
"say ""hi""",2,1700000001,1'

# One event file as PATH: the same values of that file only.
run csv "$(ls "$W"/basic/events.out.tfevents.1700000010.*)"
expect_rc 0
expect_out_is 'tag,step,wall_time,value
acc,5,1700000011,0.875
loss,3,1700000010.5,0.5
loss,5,1700000011,-inf
lr,3,1700000010.5,0.01'

# csv reads the directory's own files, not its subdirectories.
fixture runs "$W/runs"
run csv "$W/runs"
expect_rc 0
expect_out_is 'tag,step,wall_time,value
loss,1,1700000001,1
loss,2,1700000002,0.5
loss,3,1700000003,0.33333334
loss,4,1700000004,0.25
loss,5,1700000005,0.2'
run csv "$W/runs/eval/deep"
expect_rc 0
expect_out_is 'tag,step,wall_time,value
acc,2,1700000002,0.1
acc,4,1700000004,0.2'
# A directory with runs only below it: csv says where they are.
mkdir -p "$W/parent"
cp -r "$W/runs/train" "$W/parent/"
run csv "$W/parent"
expect_rc 1
expect_err "hooked-events: $W/parent: no event files"
expect_err "csv does not read subdirectories (train)"
expect_out_empty

# Only the file_version record: a header line and nothing else.
fixture empty "$W/empty"
run csv "$W/empty"
expect_rc 0
expect_out_is 'tag,step,wall_time,value'
expect_err_empty

# ---- robustness --------------------------------------------------------------
fixture torn "$W/torn"
TORN=$(ls "$W"/torn/events.out.tfevents.*)
run csv "$W/torn"
expect_rc 0
expect_out_is 'tag,step,wall_time,value
loss,1,1700000001,1
loss,2,1700000002,2
loss,3,1700000003,3'
expect_err "hooked-events: warning: $TORN: offset 166: the file ends inside its last record (35 of 42 bytes)"
# A header cut short is torn too.
head -c 170 "$TORN" >"$W/torn/events.out.tfevents.1700000000.host.short"
rm "$TORN"
run csv "$W/torn"
expect_rc 0
expect_err "offset 166: the file ends inside its last record (4 of 12 bytes)"

fixture badlen "$W/badlen"
run csv "$W/badlen"
expect_rc 1
expect_err "$W/badlen/events.out.tfevents.1700000000.host: offset 82: bad record header: the CRC-32C of the length does not match"
expect_err_lines_prefixed
expect_out_empty
run plot "$W/badlen" -o "$W/badlen.html"
expect_rc 1
expect_err "offset 82"
if [ -e "$W/badlen.html" ]; then fail "plot wrote $W/badlen.html after an error"; else pass; fi

fixture baddata "$W/baddata"
run csv "$W/baddata"
expect_rc 1
expect_err "$W/baddata/events.out.tfevents.1700000000.host: offset 40: record of 26 bytes: the CRC-32C of its data does not match"
expect_out_empty

fixture garbage "$W/garbage"
run csv "$W/garbage"
expect_rc 1
expect_err "$W/garbage/events.out.tfevents.1700000000.host: offset 0: bad record header"
expect_err "not a TFRecord event file"

fixture badproto "$W/badproto"
run csv "$W/badproto"
expect_rc 1
expect_err "offset 40: record of 16 bytes is not an Event protocol buffer: a length-delimited field runs past its message"

mkdir -p "$W/nothing"
run csv "$W/nothing"
expect_rc 1
expect_err "hooked-events: $W/nothing: no event files"
run plot "$W/nothing" -o "$W/nothing.html"
expect_rc 1
expect_err "no event files"
run csv "$W/missing"
expect_rc 1
expect_err "hooked-events: $W/missing: No such file or directory"

# ---- plot ----------------------------------------------------------------------
run plot "$W/basic" -o "$W/basic.html"
expect_rc 0
expect_err_empty
H="$W/basic.html"
html_has "$H" "<!DOCTYPE html>"
html_count "$H" "<svg " 7 # a,b acc bf count loss lr say "hi"
html_count "$H" "</svg>" 7
html_count "$H" "<section class=\"chart\"" 7
self_contained "$H"
html_has "$H" "<h2>a,b</h2>"
html_has "$H" "<h2>say &quot;hi&quot;</h2>"
html_lacks "$H" "<h2>weights</h2>"
html_lacks "$H" "<h2>notes</h2>"
html_lacks "$H" "<h2>pr/thresh</h2>"
html_lacks "$H" "<h2>vec</h2>"
# loss: extremes 0.5 and 2.5 (the resumed step 3 replaced the NaN), last -inf,
# +Inf and -Inf marked above the plot and listed.
html_has "$H" "<td>-inf</td><td title=\"step 3\">0.5</td><td title=\"step 1\">2.5</td>"
html_has "$H" "step 4: +Inf</title>"
html_has "$H" "step 5: -Inf</title>"
html_has "$H" "+Inf at step 4"
html_has "$H" "&minus;Inf at step 5"
html_has "$H" "NaN/Inf</text>"
html_has "$H" "<text class=\"label\""
html_has "$H" ">step</text>"
html_has "$H" ">value</text>"
# Only one run: no legend line.
html_lacks "$H" "<div class=\"legend\">"

# Runs overlaid: the root's files and two subdirectories, a legend.
run plot "$W/runs" -o "$W/runs.html"
expect_rc 0
H="$W/runs.html"
html_count "$H" "<svg " 2 # acc, loss
self_contained "$H"
html_has "$H" "<div class=\"legend\">"
html_has "$H" "</span>$W/runs</span>"
html_has "$H" "</span>train</span>"
html_has "$H" "</span>eval/deep</span>"
html_count "$H" "<path class=\"line\"" 4 # loss: root, train; acc: eval/deep, train
html_has "$H" "<td title=\"step 1\">0.1</td><td title=\"step 5\">0.5</td>" # train's acc
html_has "$H" "<td title=\"step 5\">0.4</td><td title=\"step 1\">2</td>"   # train's loss

# Thousands of points: drawn as reduced paths, extremes kept, log scale for
# a loss falling four decades; NaN and infinities marked.
fixture big "$W/big" 20000
run plot "$W/big" -o "$W/big.html"
expect_rc 0
H="$W/big.html"
html_count "$H" "<svg " 2
self_contained "$H"
html_has "$H" "value (log scale)"
html_has "$H" ">10</td>"      # loss/total max, as "10", not "1e+01"
html_has "$H" ">0.0005</td>"  # its min
html_has "$H" "NaN at step 6666"
html_has "$H" "+Inf at step 10000"
html_has "$H" "&minus;Inf at step 13333"
SIZE=$(wc -c <"$H")
if [ "$SIZE" -lt 200000 ]; then pass; else fail "big.html is $SIZE bytes: 40000 values not reduced"; fi
# At most four points per pixel column and run: a path has well under 20000 points.
NPTS=$(grep -o '<path class="line"[^>]*>' "$H" | head -1 | grep -o ' [LM]' | wc -l)
if [ "$NPTS" -gt 100 ] && [ "$NPTS" -lt 2500 ]; then pass; else fail "the first path has $NPTS points"; fi

# No scalars at all: a page that says so, a warning, exit 0.
run plot "$W/empty" -o "$W/empty.html"
expect_rc 0
expect_err "hooked-events: warning: $W/empty: no scalar values"
html_has "$W/empty.html" "No scalar values"
html_count "$W/empty.html" "<svg " 0

# To standard output.
run plot "$W/runs" -o -
expect_rc 0
expect_out "<!DOCTYPE html>"
run plot "$W/runs" --output="$W/runs2.html"
expect_rc 0
if cmp -s "$W/runs.html" "$W/runs2.html"; then pass; else fail "--output= wrote another page than -o"; fi
run plot "$W/runs" -o "$W/no/such/dir/x.html"
expect_rc 1
expect_err "hooked-events: $W/no/such/dir/x.html: cannot create"

# ---- what hooked's summary writer wrote -----------------------------------------
if [ -n "$WRITER" ]; then
  "$WRITER" "$W/written" || { echo "$WRITER failed" >&2; exit 1; }
  run csv "$W/written"
  expect_rc 0
  expect_err_empty
  # Wall times come from the writer's clock: checked for order, not value.
  if [ "$(cut -d, -f1,2,4 "$W/out")" = 'tag,step,value
loss,1,1
loss,2,0.5
loss,3,0.33333334
loss,4,0.25
loss,5,0.2
loss,6,nan
lr,1,0.1
lr,2,0.1
lr,3,0.1
lr,4,0.1
lr,5,0.1' ]; then pass; else fail "the summary writer's scalars do not read back"; fi
  if tail -n +2 "$W/out" | grep '^loss,' | cut -d, -f3 | sort -c -g; then pass; else fail "wall times out of order"; fi
  run csv "$W/written/eval"
  expect_rc 0
  if [ "$(cut -d, -f1,2,4 "$W/out")" = 'tag,step,value
accuracy,2,0.2
accuracy,4,0.4' ]; then pass; else fail "eval's scalars do not read back"; fi
  run plot "$W/written" -o "$W/written.html"
  expect_rc 0
  expect_err_empty
  html_count "$W/written.html" "<svg " 3 # accuracy, loss, lr: not the histogram nor the text
  html_lacks "$W/written.html" "<h2>weights</h2>"
  html_lacks "$W/written.html" "<h2>notes</h2>"
  html_has "$W/written.html" "</span>eval</span>"
  html_has "$W/written.html" "NaN at step 6"
  self_contained "$W/written.html"
fi

# ---- usage ----------------------------------------------------------------------
run
expect_rc 2
expect_err "usage: hooked-events COMMAND"
run --help
expect_rc 0
expect_out "csv PATH"
expect_out "plot PATH -o FILE"
run --version
expect_rc 0
expect_out "hooked-events (hooked "
run frobnicate "$W/basic"
expect_rc 2
expect_err "hooked-events: unknown command 'frobnicate'"
run plot "$W/basic"
expect_rc 2
expect_err "'plot' needs -o FILE"
run plot -o "$W/x.html"
expect_rc 2
expect_err "'plot' needs a PATH"
run csv "$W/basic" -o x.html
expect_rc 2
expect_err "option '-o' is for plot only"
run csv "$W/basic" "$W/runs"
expect_rc 2
expect_err "too many arguments"
run csv --frob "$W/basic"
expect_rc 2
expect_err "unknown option '--frob'"
run plot "$W/basic" -o
expect_rc 2
expect_err "option '-o' needs a file name"

printf 'hooked-events tool test: %d checks passed, %d failed\n' "$PASSED" "$FAILED"
[ "$FAILED" -eq 0 ]
