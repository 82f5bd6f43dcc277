#!/usr/bin/env python3
"""Check that every C and C++ file is formatted as .clang-format says.

The tree was formatted as a whole with clang-format 14 (Debian 12's); this
check keeps it so. It runs `clang-format --dry-run --Werror` over every
tracked *.c, *.h, *.cpp and *.hpp file and fails, naming each file that
differs and the first lines clang-format would change. Fix with:

    git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | xargs clang-format -i

  tools/check/format.py [--root DIR] [--clang-format PATH]
                                  check the tree at DIR (default: this
                                  script's checkout); exit 1 on a file that
                                  differs, 2 when clang-format is missing
  tools/check/format.py --self-test
                                  check that a badly formatted file added to
                                  a copy of the tree is caught
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SUFFIXES = (".c", ".h", ".cpp", ".hpp")


def source_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        files = [f for f in out.decode("utf-8").split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:
        for base, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".git") and not d.startswith("build")]
            files += [os.path.relpath(os.path.join(base, n), root) for n in names]
    return sorted(f for f in files if f.endswith(SUFFIXES))


def check(root, clang_format):
    files = source_files(root)
    bad = []
    for start in range(0, len(files), 50):
        chunk = files[start:start + 50]
        r = subprocess.run([clang_format, "--dry-run", "--Werror", "--style=file"] + chunk, cwd=root,
                           capture_output=True, text=True)
        if r.returncode != 0:
            for line in r.stderr.splitlines():
                if ": error:" in line:
                    name = line.split(":", 1)[0]
                    if name not in [b[0] for b in bad]:
                        bad.append((name, line))
            if not bad:
                print("format: clang-format failed: %s" % r.stderr.strip(), file=sys.stderr)
                return 2
    for name, first in bad:
        print("format: %s is not formatted as .clang-format says (first: %s)" % (name, first.split(": error: ")[0]),
              file=sys.stderr)
    if bad:
        print("format: %d file(s) differ; run: git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | xargs clang-format -i"
              % len(bad), file=sys.stderr)
        return 1
    print("format: %d files follow .clang-format" % len(files))
    return 0


def self_test(root, clang_format):
    if check(root, clang_format) != 0:
        print("format --self-test: the tree itself fails the check", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="hooked-format-") as tmp:
        copy = os.path.join(tmp, "tree")
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".git", "build*"))
        with open(os.path.join(copy, "src", "util", "zz_misformatted.c"), "w", encoding="utf-8") as f:
            f.write("int   zz_misformatted( int x ){return x+1;}\n")
        if check(copy, clang_format) != 1:
            print("format --self-test: a misformatted file was not caught", file=sys.stderr)
            return 1
    print("format --self-test: a misformatted file is caught")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--clang-format", default="clang-format")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if shutil.which(args.clang_format) is None:
        print("format: %s not found (apt-get install -y clang-format)" % args.clang_format, file=sys.stderr)
        return 2
    if args.self_test:
        return self_test(args.root, args.clang_format)
    return check(args.root, args.clang_format)


if __name__ == "__main__":
    sys.exit(main())
