#!/usr/bin/env python3
"""Check that the public headers follow docs/conventions.md.

Reads every header under include/hooked/ (sys/ included) and fails, naming
the header, the line and the rule, on:

  - a function declared without HK_API;
  - a function whose name does not start with its module, hk_<module>_
    (see module_names() for what a header's modules are);
  - an output parameter (named `out` or `<what>_out`) after a parameter that
    is not one, except where the conventions' two rules put the object
    first: a graph builder (graph.h, first parameter the `hk_graph *` being
    built) names the graph, then what it makes; a run function (its name
    ends in `_run`) puts its results after the arguments they answer;
  - an options struct (`typedef struct hk_<x>_options`) whose first member
    is not `uint32_t version`, or without its HK_<X>_OPTIONS_INIT macro, its
    HK_<X>_OPTIONS_VERSION or its hk_<x>_options_init() function;
  - an @param line naming no parameter, or @param lines out of the
    parameters' order;
  - a public function whose doc comment lacks a **Threads:** or an
    **Allocates:** line, or, when it returns a pointer, the ownership of
    what it returns (one of: borrowed, owned, static, consumed, copied);
  - a contract clause ID (C12, H3, D3.5, "house style 4") anywhere in a
    header.

  tools/check/conventions.py [--root DIR]   check the headers at DIR (default:
                                            this script's checkout); exit 1
                                            on a finding
  tools/check/conventions.py --self-test    check that a copy of the headers
                                            with one broken declaration of
                                            each kind fails, each named
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

INCLUDE = os.path.join("include", "hooked")
CLAUSE_RE = re.compile(r"\b(?:[CH][1-9][0-9]{0,2}|D[1-9][0-9]?)(?:\.[0-9]+)?\b|house style\s+[0-9]+", re.I)
OWNERSHIP_RE = re.compile(r"\b(borrowed|owned|static|consumed|copied)\b", re.I)
IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def headers(root, suffixes=(".h",)):
    base = os.path.join(root, INCLUDE)
    for dirpath, _, files in sorted(os.walk(base)):
        for name in sorted(files):
            if name.endswith(suffixes):
                yield os.path.join(dirpath, name)


def check_clause_ids(root, path, findings):
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            for m in CLAUSE_RE.finditer(line):
                findings.append("%s:%d: clause ID: %r: say the behaviour in words (a header cites no contract "
                                "clause)" % (rel, number, m.group(0)))


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def blank_comments(text):
    """The text with every comment replaced by spaces (newlines kept), and
    the list of (start, end, body) of its /** doc comments."""
    out = []
    docs = []
    i = 0
    n = len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            if text.startswith("/**", i) and not text.startswith("/**<", i):
                docs.append((i, j, text[i:j]))
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out), docs


def strip_preprocessor(code):
    """Blank out preprocessor lines (continuations included)."""
    lines = code.split("\n")
    result = []
    cont = False
    for line in lines:
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            result.append(" " * len(line))
        else:
            result.append(line)
    return "\n".join(result)


def split_params(params):
    depth = 0
    parts = []
    cur = []
    for ch in params:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def param_name(param):
    """The name of a parameter ("" for void or an unnamed one)."""
    if param in ("void", "..."):
        return ""
    m = re.match(r"^.*\(\s*\*\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", param)  # function pointer
    if m:
        return m.group(1)
    ids = IDENT_RE.findall(param)
    return ids[-1] if len(ids) > 1 else ""


class Decl:
    def __init__(self, header, line, name, ret, params, doc, exported):
        self.header = header
        self.line = line
        self.name = name
        self.ret = ret
        self.params = params
        self.doc = doc
        self.exported = exported


def declarations(path, text):
    """Every function declared at file scope in a header."""
    code, docs = blank_comments(text)
    # The C++ guard's braces are no scope.
    code = re.sub(r'extern\s+"C"\s*\{', lambda m: " " * len(m.group(0)), code)
    code = re.sub(r'(#\s*ifdef\s+__cplusplus\s*\n\s*)\}', lambda m: m.group(1) + " ", code)
    code = strip_preprocessor(code)
    decls = []
    # A statement ends at ';' or at a brace at depth 0; look at those that
    # contain a '(' and are not typedefs.
    start = 0
    depth = 0
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                start = i + 1
        elif ch == ";" and depth == 0:
            stmt = code[start:i]
            s = start
            start = i + 1
            if "(" not in stmt or re.match(r"\s*typedef\b", stmt) or 'extern "C"' in stmt:
                continue
            m = re.match(r"\s*(.*?)\b(hk_[A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*(HK_PRINTF\s*\([^)]*\))?\s*$",
                         stmt, re.S)
            if not m:
                continue
            ret = " ".join(m.group(1).split())
            name = m.group(2)
            params = split_params(" ".join(m.group(3).split()))
            first = s + len(stmt) - len(stmt.lstrip())
            doc = ""
            for dstart, dend, body in docs:
                if dend <= first and text[dend:first].strip() == "":
                    doc = body
            exported = ret.startswith("HK_API")
            if exported:
                ret = ret[len("HK_API"):].strip()
            decls.append(Decl(path, line_of(text, first), name, ret, params, doc, exported))
    return decls


def module_names(path, text):
    """The modules whose functions a header may declare: its own name; every
    type it declares (typedef ... hk_<type>), an options struct or vtable
    hk_<x>_options / hk_<x>_vtable making <x> one (the thing it configures);
    and the modules its opening comment lists on a line "Modules: a, b."
    (common.h, which holds the library-wide pieces, lists its own)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    code, _ = blank_comments(text)
    mods = {stem}
    for t in re.findall(r"\btypedef\b[^;]*?\bhk_([a-z0-9_]+)\s*;", code, re.S):
        mods.add(t)
    for t in re.findall(r"\btypedef\s+(?:struct|enum)\s+hk_([a-z0-9_]+)\b", code):
        mods.add(t)
    for t in list(mods):
        for suffix in ("_options", "_vtable"):
            if t.endswith(suffix):
                mods.add(t[: -len(suffix)])
    first = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    if first:
        m = re.search(r"Modules:(.*)", first.group(1), re.S)
        if m:
            listed = re.sub(r"\([^)]*\)", "", m.group(1)).split(".")[0]
            for w in re.split(r"[,\s*]+", listed):
                if w:
                    mods.add(w)
    return mods


def hook_constructor(stem, name):
    """hooks.h holds one module per hook: hk_<hook>_hook_<verb>()."""
    return stem == "hooks" and re.match(r"^hk_[a-z0-9_]+_hook_[a-z0-9_]+$", name) is not None


def check_header(root, path, findings):
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        text = f.read()

    def finding(line, rule, what):
        findings.append("%s:%d: %s: %s" % (rel, line, rule, what))

    check_clause_ids(root, path, findings)

    mods = module_names(path, text)
    stem = os.path.splitext(os.path.basename(path))[0]
    code, _ = blank_comments(text)

    for d in declarations(path, text):
        if not d.name.startswith("hk_"):
            continue
        if not d.exported:
            finding(d.line, "export", "%s() is declared without HK_API" % d.name)
        rest = d.name[len("hk_"):]
        if not any(rest == m or rest.startswith(m + "_") for m in mods) and not hook_constructor(stem, d.name):
            finding(d.line, "module prefix", "%s() does not start with hk_<module>_ (modules of %s: %s)"
                    % (d.name, os.path.basename(path), ", ".join(sorted(mods))))
        names = [param_name(p) for p in d.params]
        # Outputs: `out`, `<what>_out`, or a pointer to a pointer the
        # function fills in (`const char **prefix`; not `const char *const *`).
        is_out = [n == "out" or n.endswith("_out") or (re.search(r"\*\s*\*", p) is not None and
                                                        re.search(r"\*\s*const\s*\*", p) is None)
                  for n, p in zip(names, d.params)]
        # A graph builder names the graph it builds in first, then what it makes.
        builder = bool(d.params) and re.match(r"^hk_graph\s*\*", d.params[0]) is not None
        run = d.name.endswith("_run")
        if not run:
            seen_input = False
            for i, (n, o) in enumerate(zip(names, is_out)):
                if o and seen_input:
                    finding(d.line, "outputs first", "%s(): output `%s` comes after an input (outputs first, "
                            "then the object; a graph builder names the graph first)" % (d.name, n))
                    break
                if not o and not (builder and i == 0):
                    seen_input = True
        doc = d.doc
        if not doc:
            finding(d.line, "documentation", "%s() has no doc comment of its own" % d.name)
            continue
        if "**Threads:**" not in doc:
            finding(d.line, "documentation", "%s(): no **Threads:** line" % d.name)
        if "**Allocates:**" not in doc:
            finding(d.line, "documentation", "%s(): no **Allocates:** line" % d.name)
        # @param lines name real parameters, in the declaration's order.
        documented = [m.group(1) for m in re.finditer(r"@param\s+([A-Za-z_][A-Za-z0-9_]*)", doc)]
        unknown = [n for n in documented if n not in names]
        if unknown:
            finding(d.line, "documentation", "%s(): @param %s names no parameter (parameters: %s)"
                    % (d.name, unknown[0], ", ".join(names)))
        else:
            order = [names.index(n) for n in documented]
            if order != sorted(order):
                finding(d.line, "documentation", "%s(): the @param lines are not in the parameters' order (%s)"
                        % (d.name, ", ".join(names)))
        if "*" in d.ret and not OWNERSHIP_RE.search(doc):
            finding(d.line, "documentation", "%s() returns a pointer but its comment says not whose it is "
                    "(borrowed, owned, static, consumed or copied)" % d.name)

    for m in re.finditer(r"\btypedef\s+struct\s+hk_([a-z0-9_]+)_options\s*\{([^}]*)\}", code, re.S):
        x = m.group(1)
        line = line_of(text, m.start())
        body = m.group(2).strip()
        if not re.match(r"uint32_t\s+version\s*;", body):
            finding(line, "options struct", "hk_%s_options: the first member is not `uint32_t version`" % x)
        for macro in ("HK_%s_OPTIONS_INIT" % x.upper(), "HK_%s_OPTIONS_VERSION" % x.upper()):
            if not re.search(r"#\s*define\s+%s\b" % macro, code):
                finding(line, "options struct", "hk_%s_options has no %s" % (x, macro))
        init = "hk_%s_options_init" % x
        if not re.search(r"\b%s\s*\(\s*hk_%s_options\s*\*\s*\w+\s*,\s*uint32_t\s+version\s*\)" % (init, x), code):
            finding(line, "options struct", "hk_%s_options has no %s(hk_%s_options *opts, uint32_t version)"
                    % (x, init, x))


def check_tree(root):
    findings = []
    for path in headers(root):
        check_header(root, path, findings)
    for path in headers(root, (".hpp",)):
        check_clause_ids(root, path, findings)
    return findings


def check(root):
    findings = check_tree(root)
    for f in findings:
        print(f)
    if findings:
        print("conventions.py: %d finding(s); the rules are docs/conventions.md's" % len(findings), file=sys.stderr)
        return 1
    return 0


# Each case: (rule the finding must name, header, text appended before the
# header's last #endif).
SELF_TEST_CASES = [
    ("documentation", "session.h",
     "/** x.\n * @param status  y.\n * @param s  z.\n * **Threads:** any. **Allocates:** no. */\n"
     "HK_API hk_code hk_session_broken_order(hk_session *s, hk_status *status);\n"),
    ("documentation", "session.h",
     "/** x.\n * @param session  y.\n * **Threads:** any. **Allocates:** no. */\n"
     "HK_API hk_code hk_session_broken_name(hk_session *s, hk_status *status);\n"),
    ("export", "session.h", "/** x. **Threads:** any. **Allocates:** no. */\nhk_code hk_session_broken(void);\n"),
    ("module prefix", "session.h", "/** x. **Threads:** any. **Allocates:** no. */\nHK_API int hk_broken_session(void);\n"),
    ("outputs first", "session.h",
     "/** x. **Threads:** any. **Allocates:** no. */\n"
     "HK_API hk_code hk_session_broken(hk_session *s, int *out, hk_status *status);\n"),
    ("outputs first", "graph.h",
     "/** x. **Threads:** any. **Allocates:** no. */\n"
     "HK_API hk_code hk_graph_broken(hk_graph *g, const char *name, hk_handle *out, hk_status *status);\n"),
    ("options struct", "session.h", "typedef struct hk_broken_options {\n  int x;\n} hk_broken_options;\n"),
    ("outputs first", "session.h",
     "/** x. **Threads:** any. **Allocates:** no. */\n"
     "HK_API hk_code hk_session_broken(hk_session *s, const char **name, hk_status *status);\n"),
    ("no **Threads:**", "session.h", "/** x. **Allocates:** no. */\nHK_API int hk_session_broken(void);\n"),
    ("no **Allocates:**", "session.h", "/** x. **Threads:** any. */\nHK_API int hk_session_broken(void);\n"),
    ("says not whose it is", "session.h",
     "/** x. **Threads:** any. **Allocates:** no. */\nHK_API const char *hk_session_broken(void);\n"),
    ("no doc comment", "session.h", "HK_API int hk_session_broken(void);\n"),
    ("options struct", "session.h",
     "typedef struct hk_broken_options {\n  uint32_t version;\n} hk_broken_options;\n"),
    ("clause ID", "session.h", "/* see H12 */\n"),
    ("clause ID", "hooked.hpp", "/* per D5.2 */\n"),
]


def self_test(root):
    if check(root) != 0:
        print("conventions.py --self-test: the tree itself fails; fix it first", file=sys.stderr)
        return 1
    failed = 0
    for rule, header, addition in SELF_TEST_CASES:
        with tempfile.TemporaryDirectory(prefix="hooked-conventions-") as tmp:
            shutil.copytree(os.path.join(root, "include"), os.path.join(tmp, "include"))
            path = os.path.join(tmp, INCLUDE, header)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            cut = text.rfind("#ifdef __cplusplus\n}")
            if cut < 0:
                cut = text.rfind("#endif")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text[:cut] + addition + text[cut:])
            findings = check_tree(tmp)
            hits = [f for f in findings if rule in f]
            if not hits:
                print("conventions.py --self-test: a broken declaration (%s) in %s was not caught:\n%s"
                      % (rule, header, addition), file=sys.stderr)
                failed += 1
            else:
                print("caught (%s): %s" % (rule, hits[0]))
    if failed:
        return 1
    print("conventions.py --self-test: all %d broken declarations caught" % len(SELF_TEST_CASES))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.root)
    return check(args.root)


if __name__ == "__main__":
    sys.exit(main())
