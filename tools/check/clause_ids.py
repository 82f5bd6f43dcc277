#!/usr/bin/env python3
"""Check that include/ and src/ say behaviour in words, not clause numbers.

docs/contract.md numbers its clauses (C1-C145, H1-H61, D1-D14, sub-clauses
such as D3.7) so that tests can cite the clause they prove. The headers and
the library's code do not: a reader of loop.h or saver.c should not need the
contract open to follow a comment, so a comment says what the code does and
why. This script reads every text file under include/ and src/ and fails,
naming the file, the line and the ID, on any word that looks like a clause
ID: a C, H or D followed by one to three digits and an optional ".N"
(the pattern `\\b[CHD][0-9]{1,3}(\\.[0-9]+)?\\b`). The names of the C
standards (C89, C90, C99, C11, C17, C18, C23) are not clause IDs and are
allowed wherever they appear.

  tools/check/clause_ids.py [--root DIR]  check the tree at DIR (default:
                                          this script's checkout); exit 1
                                          on a finding
  tools/check/clause_ids.py --self-test   check that a copy of the tree
                                          with clause IDs added to a source
                                          file and a header fails, each
                                          named, and that a C standard's
                                          name does not
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

FOLDERS = ("include", "src")
CLAUSE_RE = re.compile(r"\b[CHD][0-9]{1,3}(?:\.[0-9]+)?\b")
C_STANDARDS = frozenset(("C89", "C90", "C99", "C11", "C17", "C18", "C23"))
TEXT_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".md", ".txt", ".cmake", ".in", ".py", ".sh")


def findings_in(root):
    findings = []
    for folder in FOLDERS:
        top = os.path.join(root, folder)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(TEXT_SUFFIXES):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        ids = [m.group(0) for m in CLAUSE_RE.finditer(line) if m.group(0) not in C_STANDARDS]
                        if ids:
                            findings.append("%s:%d: clause ID %s; say the behaviour in words: %s" %
                                            (rel, number, ", ".join(ids), line.strip()))
    return findings


def self_test(root):
    """Copy include/ and src/, append a line with a clause ID to a file, one
    at a time, and check that the line is caught and named; then that a line
    naming a C standard is not. The copy's other lines do not matter here:
    the check of the tree itself is the other mode."""
    cases = [
        ("src/core/timer.c", "/* A stop takes effect after the step (C19). */\n", "C19", True),
        ("src/ckpt/saver.c", "/* D3.7: copy-before-write. */\n", "D3.7", True),
        ("include/hooked/common.h", "/* Every function returns a status (H1). */\n", "H1", True),
        ("src/util/common.c", "/* Lock-free atomics are allowed in handlers (C11). */\n", "C11", False),
    ]
    failed = 0
    for victim, line, clause, caught in cases:
        with tempfile.TemporaryDirectory(prefix="hooked-clause-ids-") as tmp:
            for sub in FOLDERS:
                shutil.copytree(os.path.join(root, sub), os.path.join(tmp, sub))
            path = os.path.join(tmp, victim)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if not text.endswith("\n"):
                text += "\n"
            number = text.count("\n") + 1
            with open(path, "w", encoding="utf-8") as f:
                f.write(text + line)
            where = "%s:%d: " % (victim, number)
            named = [f for f in findings_in(tmp) if f.startswith(where)]
            if caught and not (named and ("clause ID " + clause + ";") in named[0]):
                failed += 1
                print("clause_ids --self-test: %s with %s was not caught" % (victim, line.strip()), file=sys.stderr)
            elif not caught and named:
                failed += 1
                print("clause_ids --self-test: %s was taken for a clause ID: %s" % (clause, named[0]), file=sys.stderr)
            elif caught:
                print("caught: " + named[0])
            else:
                print("allowed: %s in %s" % (clause, victim))
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description="Check that include/ and src/ hold no contract clause ID.")
    parser.add_argument("--root", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..")),
                        help="the top of the tree to check (default: this script's checkout)")
    parser.add_argument("--self-test", action="store_true",
                        help="check that clause IDs added to a copy of the tree are caught")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.root)
    findings = findings_in(args.root)
    for f in findings:
        print(f, file=sys.stderr)
    if findings:
        print("clause_ids: %d lines of include/ and src/ cite contract clauses" % len(findings), file=sys.stderr)
        return 1
    print("clause_ids: include/ and src/ cite no contract clause")
    return 0


if __name__ == "__main__":
    sys.exit(main())
