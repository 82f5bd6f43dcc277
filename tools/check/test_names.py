#!/usr/bin/env python3
"""Check that no test or test-helper name under tests/ carries a clause ID.

docs/contract.md numbers its clauses (C94, H12, D3.5, ...). A test proves a
clause and may cite it in a comment above the test, but its name says the
behaviour in words, so that a maintainer reading cmocka's output, a failing
ctest or a stack trace understands it without the contract open:
test_session__a_stop_requested_in_after_create_session_stops_before_the_first_run,
not test_session__h12_stop_from_after_create.

The check reads every file under tests/ and fails, naming the file, the line,
the name and the clause ID in it, on:

  - a C or C++ function defined or declared at the start of a line (test
    functions, their helpers and fixtures: every name a cmocka run or a
    stack trace shows);
  - a Python function (def) or a shell function;
  - a ctest test added with add_test(NAME ...).

A name carries a clause ID when one of its underscore-separated parts is a
clause series letter (C, H or D, either case) followed by digits: h12, C94,
d3 (and d3_5 for D3.5). Dtypes such as f32, u64 or bf16 are no clause IDs.

  tools/check/test_names.py [--root DIR]    check the tree at DIR (default:
                                            this script's checkout); exit 1
                                            on a finding
  tools/check/test_names.py --self-test     check that names with clause IDs
                                            added to a copy of tests/ are
                                            caught, each named, and that
                                            dtype-like names are not
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

C_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cc")
# A function defined or declared at the start of a line: its return type
# (or nothing, for a K&R-style or macro-made one) then the name and "(".
C_FUNCTION_RE = re.compile(r"^(?!#|\s|/|\*|\{|\}|return\b|typedef\b)(?:[A-Za-z_][\w\s\*]*?[\s\*])?([A-Za-z_]\w*)\s*\(")
PY_FUNCTION_RE = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")
SH_FUNCTION_RE = re.compile(r"^\s*(?:function\s+([A-Za-z_][\w-]*)|([A-Za-z_][\w-]*)\s*\(\s*\)\s*\{?)")
CMAKE_TEST_RE = re.compile(r"\badd_test\s*\(\s*NAME\s+([^\s)]+)", re.I)
CLAUSE_PART_RE = re.compile(r"^([CHDchd])(\d+)$")
# Words at the start of a C line that look like a call, not a definition.
C_KEYWORDS = {"if", "for", "while", "switch", "do", "else", "sizeof", "return", "case", "defined"}


def clause_ids(name):
    """The clause IDs in a name, as the contract writes them ('H12', 'D3.5')."""
    parts = re.split(r"[_\-]", name)
    found = []
    for i, part in enumerate(parts):
        m = CLAUSE_PART_RE.match(part)
        if not m:
            continue
        cid = m.group(1).upper() + m.group(2)
        if cid[0] == "D" and i + 1 < len(parts) and re.fullmatch(r"\d", parts[i + 1]):
            cid += "." + parts[i + 1]
        found.append(cid)
    return found


def names_in(path):
    """(line number, name, what) for every name the check applies to in a file."""
    base = os.path.basename(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
    except OSError:
        return []
    out = []
    if base.endswith(C_SUFFIXES):
        for number, line in enumerate(lines, 1):
            m = C_FUNCTION_RE.match(line)
            if m and m.group(1) not in C_KEYWORDS:
                out.append((number, m.group(1), "function"))
    elif base.endswith(".py"):
        for number, line in enumerate(lines, 1):
            m = PY_FUNCTION_RE.match(line)
            if m:
                out.append((number, m.group(1), "function"))
    elif base.endswith(".sh"):
        for number, line in enumerate(lines, 1):
            m = SH_FUNCTION_RE.match(line)
            if m and (m.group(1) or m.group(2)):
                out.append((number, m.group(1) or m.group(2), "function"))
    if base == "CMakeLists.txt" or base.endswith(".cmake"):
        for number, line in enumerate(lines, 1):
            for m in CMAKE_TEST_RE.finditer(line):
                out.append((number, m.group(1), "ctest test"))
    return out


def check(root):
    """(exit status, findings)."""
    tests = os.path.join(root, "tests")
    if not os.path.isdir(tests):
        return 2, ["tests/: no such directory under %s" % root]
    findings = []
    for dirpath, dirnames, filenames in os.walk(tests):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            for number, ident, what in names_in(path):
                ids = clause_ids(ident)
                if ids:
                    findings.append("%s:%d: %s name %s carries the clause ID %s: name it after the behaviour it "
                                    "checks and cite the clause in a comment above it" %
                                    (rel, number, what, ident, ", ".join(ids)))
    return (1 if findings else 0), findings


def self_test(root):
    """Copy tests/, add names with clause IDs one kind at a time, and check
    that each is caught and named; add dtype-like names and check that they
    are not."""
    cases = [
        ("tests/unit/planted.c", "static void test_planted__h12_stop_from_after_create(void **state) { (void)state; }\n",
         "test_planted__h12_stop_from_after_create carries the clause ID H12"),
        ("tests/unit/planted.c", "static void c85_case(int value);\n", "c85_case carries the clause ID C85"),
        ("tests/unit/planted.cpp", "void test_planted__first_save_D4_4() {}\n",
         "test_planted__first_save_D4_4 carries the clause ID D4.4"),
        ("tests/python/planted.py", "def test_c94_saves_at_creation():\n    pass\n",
         "test_c94_saves_at_creation carries the clause ID C94"),
        ("tests/tools/planted.sh", "check_d3_snapshot() {\n  true\n}\n", "check_d3_snapshot carries the clause ID D3"),
        ("tests/tools/CMakeLists.txt", "add_test(NAME planted_h7_allocates_nothing COMMAND true)\n",
         "ctest test name planted_h7_allocates_nothing carries the clause ID H7"),
    ]
    innocent = ("tests/unit/planted.c",
                "static void test_planted__sums_f32_f64_u64_and_bf16(void **state) { (void)state; }\n"
                "static int hash_of(const char *c1_name);\n")
    status, findings = check(root)
    if status != 0:
        print("test_names --self-test: the tree itself fails the check:", file=sys.stderr)
        for f in findings:
            print("  " + f, file=sys.stderr)
        return 1
    failed = 0
    for victim, text, expected in cases:
        with tempfile.TemporaryDirectory(prefix="hooked-test-names-") as tmp:
            shutil.copytree(os.path.join(root, "tests"), os.path.join(tmp, "tests"))
            with open(os.path.join(tmp, victim), "a", encoding="utf-8") as f:
                f.write(text)
            status, findings = check(tmp)
            named = [f for f in findings if f.startswith(victim + ":") and expected in f]
            if status != 1 or not named:
                failed += 1
                print("test_names --self-test: %s with %r was not caught as '%s' (exit %d):" %
                      (victim, text.strip(), expected, status), file=sys.stderr)
                for f in findings:
                    print("  " + f, file=sys.stderr)
            else:
                print("caught: " + named[0])
    with tempfile.TemporaryDirectory(prefix="hooked-test-names-") as tmp:
        shutil.copytree(os.path.join(root, "tests"), os.path.join(tmp, "tests"))
        with open(os.path.join(tmp, innocent[0]), "a", encoding="utf-8") as f:
            f.write(innocent[1])
        status, findings = check(tmp)
        if status != 0:
            failed += 1
            print("test_names --self-test: dtype-like names were taken for clause IDs:", file=sys.stderr)
            for f in findings:
                print("  " + f, file=sys.stderr)
        else:
            print("not caught, as it should be: test_planted__sums_f32_f64_u64_and_bf16")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description="Check that no test or test-helper name under tests/ carries a "
                                     "clause ID.")
    parser.add_argument("--root", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..")),
                        help="the top of the tree to check (default: this script's checkout)")
    parser.add_argument("--self-test", action="store_true",
                        help="check that names with clause IDs added to a copy of tests/ are caught")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.root)
    status, findings = check(args.root)
    for f in findings:
        print(f, file=sys.stderr)
    if status == 0:
        print("test_names: no test or helper name under tests/ carries a clause ID")
    return status


if __name__ == "__main__":
    sys.exit(main())
