#!/usr/bin/env python3
"""Check that every reference in the repository resolves inside it.

A reader who follows a link or a path named in a comment must land on
something that exists. This script reads every file git tracks (text
files only) and fails, naming the file, the line and the reference, on:

  - a Markdown link `[text](target)` whose target is a relative path that
    does not exist, or whose `#anchor` names no heading of the target file;
  - a repository path named in text (a word starting with one of the
    repository's top-level folders, such as `src/ckpt/saver.c` or
    `docs/contract.md`) that does not exist;
  - a path that leaves the repository (`../x`, `../../x`), such as the
    workspace folders beside a checkout.

Paths with placeholders (`<name>`, `*`, `{dir}`, `...`, `N`) are patterns,
not references, and are skipped; so are paths inside build directories
(`build/...`), which exist only after a build.

  tools/check/references.py [--root DIR]  check the tree at DIR (default:
                                          this script's checkout); exit 1
                                          on a finding
  tools/check/references.py --self-test   check that a copy of the tree
                                          with a broken link, a broken
                                          anchor, a stale path and an
                                          outside reference fails, each named
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOP_FOLDERS = ("src", "include", "tests", "docs", "tools", "bench", "examples", "fuzz", "cmake", ".ci")
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
PATH_RE = re.compile(r"(?<![\w./-])((?:%s)/[\w./+-]*[\w/])" % "|".join(re.escape(f) for f in TOP_FOLDERS))
OUTSIDE_RE = re.compile(r"(?<![\w.])\.\./(?:\.\./)*(?:shared|spec|design|data)\b")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
PLACEHOLDER_RE = re.compile(r"[<>*{}$]|\.\.\.|\bN\b|XXXX")
TEXT_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".md", ".txt", ".cmake", ".py", ".sh", ".in", ".json", "")


def tracked_files(root):
    """The repository's files: git's list when root is a checkout, else a walk."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        files = [f for f in out.decode("utf-8").split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for base, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".git") and not d.startswith("build")]
        for name in names:
            files.append(os.path.relpath(os.path.join(base, name), root))
    return files


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache):
    if path not in cache:
        found = set()
        counts = {}
        in_code = False
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if line.startswith("```"):
                        in_code = not in_code
                        continue
                    m = None if in_code else HEADING_RE.match(line)
                    if m:
                        base = slug(m.group(2))
                        n = counts.get(base, 0)
                        counts[base] = n + 1
                        found.add(base if n == 0 else "%s-%d" % (base, n))
                    for a in re.findall(r'<a (?:name|id)="([^"]+)"', line):
                        found.add(a)
        except OSError:
            pass
        cache[path] = found
    return cache[path]


def is_text(path):
    name = os.path.basename(path)
    suffix = os.path.splitext(name)[1]
    if suffix not in TEXT_SUFFIXES:
        return False
    try:
        with open(path, "rb") as f:
            return b"\0" not in f.read(8192)
    except OSError:
        return False


def check(root):
    findings = []
    cache = {}
    files = tracked_files(root)
    existing = set(files)
    folders = set()
    for f in files:
        parts = f.split("/")
        for i in range(1, len(parts)):
            folders.add("/".join(parts[:i]))
    for rel in files:
        path = os.path.join(root, rel)
        if rel.startswith("tools/check/") or not is_text(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        here = os.path.dirname(rel)
        for number, line in enumerate(lines, 1):
            where = "%s:%d" % (rel, number)
            if OUTSIDE_RE.search(line):
                findings.append("%s: refers outside the repository: %s" % (where, OUTSIDE_RE.search(line).group(0)))
            if rel.endswith(".md"):
                for target in LINK_RE.findall(line):
                    if re.match(r"^[a-z]+:", target):
                        continue
                    file_part, _, anchor = target.partition("#")
                    target_rel = os.path.normpath(os.path.join(here, file_part)) if file_part else rel
                    if target_rel.startswith(".."):
                        findings.append("%s: link leaves the repository: %s" % (where, target))
                        continue
                    if target_rel not in existing and target_rel.rstrip("/") not in folders:
                        findings.append("%s: link to a file that does not exist: %s" % (where, target))
                        continue
                    if anchor and target_rel.endswith(".md"):
                        if anchor not in anchors(os.path.join(root, target_rel), cache):
                            findings.append("%s: link to a heading that %s does not have: #%s" %
                                            (where, target_rel, anchor))
            for m in PATH_RE.finditer(line):
                ref = m.group(1).rstrip(".")
                if PLACEHOLDER_RE.search(line[m.start():m.end() + 1]):
                    continue
                candidate = ref.rstrip("/")
                if candidate in existing or candidate in folders:
                    continue
                # A name the build makes from a source: foo.h from foo.h.in,
                # the program bench/mpi_sync from bench/mpi_sync.c, a module
                # tests/support/tmpdir of tmpdir.c and tmpdir.h.
                if any(candidate + suffix in existing for suffix in (".in", ".c", ".h", ".cpp", ".py", ".sh")):
                    continue
                findings.append("%s: names %s, which does not exist" % (where, ref))
    return findings


def self_test(root):
    if check(root):
        print("references --self-test: the tree itself fails the check:", file=sys.stderr)
        for f in check(root):
            print("  " + f, file=sys.stderr)
        return 1
    cases = [
        ("a broken link", "docs/zz_broken_link.md", "See [the guide](no_such_file.md).\n", "does not exist"),
        ("a broken anchor", "docs/zz_broken_anchor.md", "See [it](../README.md#no-such-heading-here).\n",
         "does not have"),
        ("a stale path", "src/zz_stale.h", "/* the writer lives in src/ckpt/no_such_file.c */\n", "no_such_file.c"),
        ("an outside reference", "docs/zz_outside.md", "As ../" "shared/spec/x.md says.\n", "outside the repository"),
    ]
    for label, rel, text, expected in cases:
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "tree")
            shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".git", "build*"))
            with open(os.path.join(copy, rel), "w", encoding="utf-8") as f:
                f.write(text)
            findings = check(copy)
            if not any(rel in f and expected in f for f in findings):
                print("references --self-test: %s (%s) was not caught" % (label, rel), file=sys.stderr)
                return 1
    print("references --self-test: a broken link, a broken anchor, a stale path and an outside reference "
          "are each caught")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.root)
    findings = check(args.root)
    for f in findings:
        print("references: " + f, file=sys.stderr)
    if findings:
        print("references: %d reference(s) do not resolve inside the repository" % len(findings), file=sys.stderr)
        return 1
    print("references: every link and path resolves inside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
