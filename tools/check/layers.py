#!/usr/bin/env python3
"""Check that src/ is the stack src/README.md draws.

The table between the <!-- layers --> markers of src/README.md lists the
folders of src/, top of the stack first, each with the folders whose headers
its files may include. This script reads that table and every #include of
every file under src/, and fails, naming the file, the line and the rule, on:

  - an include of another folder's header that the table does not allow
    (one pointing up the stack, or sideways where not listed);
  - an include of a header named *_internal.h from outside its folder;
  - an include that names a file under src/ or include/ that does not exist;
  - a table that is no stack (a folder allowed to include one that is not
    below it) or that does not list exactly the folders of src/;
  - a source file in src/ itself, outside the folders of the table.

Public headers (include/hooked/...) may be included from anywhere.

  tools/check/layers.py [--root DIR]    check the tree at DIR (default: this
                                        script's checkout); exit 1 on a
                                        finding, 2 on a README it cannot read
  tools/check/layers.py --self-test     check that a copy of the tree with an
                                        upward, a sideways and a private
                                        include added fails, each named
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

README = os.path.join("src", "README.md")
SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".hpp")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
ROW_RE = re.compile(r"^\|\s*`([A-Za-z0-9_]+)/`\s*\|.*\|([^|]*)\|\s*$")


class TableError(Exception):
    pass


def read_table(root):
    """The table's rows, top first: a list of (folder, [folders it may include])."""
    path = os.path.join(root, README)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise TableError("%s: cannot read it: %s" % (README, e.strerror))
    try:
        first = lines.index("<!-- layers -->")
        last = lines.index("<!-- /layers -->", first)
    except ValueError:
        raise TableError("%s: no table between <!-- layers --> and <!-- /layers -->" % README)
    rows = []
    for number, line in enumerate(lines[first + 1:last], first + 2):
        m = ROW_RE.match(line)
        if m:
            rows.append((m.group(1), re.findall(r"`([A-Za-z0-9_]+)/`", m.group(2)), number))
        elif line.startswith("|") and not re.match(r"^\|[\s|:-]*$", line) and "Folder" not in line:
            raise TableError("%s:%d: a row the check cannot read: %s" % (README, number, line))
    if not rows:
        raise TableError("%s: the layers table has no rows" % README)
    return rows


def check_table(root, rows):
    """Findings about the table itself: it must be a stack over exactly src/'s folders."""
    findings = []
    position = {}
    for i, (folder, _, number) in enumerate(rows):
        if folder in position:
            findings.append("%s:%d: %s/ is listed twice" % (README, number, folder))
        position[folder] = i
    for i, (folder, allowed, number) in enumerate(rows):
        for other in allowed:
            if other not in position:
                findings.append("%s:%d: %s/ may include %s/, which the table does not list" %
                                (README, number, folder, other))
            elif position[other] <= i:
                findings.append("%s:%d: %s/ may include %s/, which is not below it: the table must be a stack" %
                                (README, number, folder, other))
    src = os.path.join(root, "src")
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for d in folders:
        if d not in position:
            findings.append("src/%s/: a folder %s does not list (add its row)" % (d, README))
    for folder, _, number in rows:
        if folder not in folders:
            findings.append("%s:%d: %s/ is listed but src/%s/ does not exist" % (README, number, folder, folder))
    for name in sorted(os.listdir(src)):
        if name.endswith(SOURCE_SUFFIXES) and os.path.isfile(os.path.join(src, name)):
            findings.append("src/%s: a source file outside the folders of %s" % (name, README))
    return findings


def resolve(root, including, kind, name):
    """('src', 'folder/file') or ('public', path) or ('other', None) or ('missing', None)."""
    candidates = []
    if kind == '"':
        candidates.append(os.path.dirname(including))
    candidates += [os.path.join(root, "src"), os.path.join(root, "include")]
    for base in candidates:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel.startswith("src/"):
                return "src", rel[len("src/"):]
            if rel.startswith("include/"):
                return "public", rel
            return "other", rel
    if kind == '"' or name.startswith("hooked/"):
        return "missing", None
    return "other", None  # a system header


def check_includes(root, rows):
    allowed = {folder: set(others) for folder, others, _ in rows}
    findings = []
    src = os.path.join(root, "src")
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            parts = rel.split("/")
            if len(parts) < 3 or parts[1] not in allowed:
                continue  # reported by check_table
            folder = parts[1]
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    kind, target = m.group(1), m.group(2)
                    where, header = resolve(root, path, kind, target)
                    if where == "missing":
                        findings.append("%s:%d: includes %s, which is no file under src/ or include/" %
                                        (rel, number, target))
                        continue
                    if where != "src":
                        continue
                    other = header.split("/")[0] if "/" in header else None
                    if other is None:
                        findings.append("%s:%d: includes src/%s, which is in no folder of %s" %
                                        (rel, number, header, README))
                    elif other != folder and os.path.basename(header).endswith("_internal.h"):
                        findings.append("%s:%d: includes %s, which is private to %s/ (a *_internal.h header)" %
                                        (rel, number, header, other))
                    elif other != folder and other not in allowed[folder]:
                        may = ", ".join(o + "/" for o in sorted(allowed[folder])) or "no other folder"
                        findings.append("%s:%d: includes %s: %s/ may include %s (%s)" %
                                        (rel, number, header, folder, may, README))
    return findings


def check(root):
    """(exit status, findings)."""
    try:
        rows = read_table(root)
    except TableError as e:
        return 2, [str(e)]
    findings = check_table(root, rows) + check_includes(root, rows)
    return (1 if findings else 0), findings


def self_test(root):
    """Copy the tree's src/ and include/, add bad includes one at a time, and
    check that each is caught and named."""
    cases = [
        ("src/util/common.c", '#include "hooks/checkpoint_saver_internal.h"\n', "private to hooks/"),
        ("src/util/common.c", '#include "core/core.h"\n', "util/ may include no other folder"),
        ("src/ckpt/best.c", '#include "events/events.h"\n', "ckpt/ may include util/"),
        ("src/events/proto.c", '#include "graph/graph_internal.h"\n', "private to graph/"),
        ("src/graph/run.c", '#include "ckpt/ckpt.h"\n', "graph/ may include events/, util/"),
        ("src/core/timer.c", '#include "hooks/nothing_here.h"\n', "no file under src/ or include/"),
    ]
    status, findings = check(root)
    if status != 0:
        print("layers --self-test: the tree itself fails the check:", file=sys.stderr)
        for f in findings:
            print("  " + f, file=sys.stderr)
        return 1
    failed = 0
    for victim, line, expected in cases:
        with tempfile.TemporaryDirectory(prefix="hooked-layers-") as tmp:
            for sub in ("src", "include"):
                shutil.copytree(os.path.join(root, sub), os.path.join(tmp, sub))
            with open(os.path.join(tmp, victim), "a", encoding="utf-8") as f:
                f.write(line)
            status, findings = check(tmp)
            named = [f for f in findings if f.startswith(victim + ":") and expected in f]
            if status != 1 or not named:
                failed += 1
                print("layers --self-test: %s with %s was not caught as '%s' (exit %d):" %
                      (victim, line.strip(), expected, status), file=sys.stderr)
                for f in findings:
                    print("  " + f, file=sys.stderr)
            else:
                print("caught: " + named[0])
    with tempfile.TemporaryDirectory(prefix="hooked-layers-") as tmp:
        shutil.copytree(os.path.join(root, "src"), os.path.join(tmp, "src"))
        shutil.copytree(os.path.join(root, "include"), os.path.join(tmp, "include"))
        readme = os.path.join(tmp, README)
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        # util/ allowed to include core/: the table is no stack any more.
        text = re.sub(r"(\| `util/` \|.*\|)[^|]*\|\s*$", r"\1 `core/` |", text, flags=re.M)
        with open(readme, "w", encoding="utf-8") as f:
            f.write(text)
        status, findings = check(tmp)
        named = [f for f in findings if "util/ may include core/, which is not below it" in f]
        if status != 1 or not named:
            failed += 1
            print("layers --self-test: a table that is no stack was not caught (exit %d)" % status, file=sys.stderr)
        else:
            print("caught: " + named[0])
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description="Check that src/ is the stack src/README.md draws.")
    parser.add_argument("--root", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..")),
                        help="the top of the tree to check (default: this script's checkout)")
    parser.add_argument("--self-test", action="store_true",
                        help="check that bad includes added to a copy of the tree are caught")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.root)
    status, findings = check(args.root)
    for f in findings:
        print(f, file=sys.stderr)
    if status == 0:
        print("layers: src/ follows the stack of %s" % README)
    return status


if __name__ == "__main__":
    sys.exit(main())
