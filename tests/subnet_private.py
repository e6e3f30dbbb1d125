#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The subnet layer's context stays private (docs/architecture.md "softibd
and the subnet layer"): struct sib_subnet is laid out in
src/subnet/subnet_int.h, which no .c or .h file under src/ or tools/
outside src/subnet/ includes (the compiler then refuses a field use), and
no such file uses a field of it either, but the files given with --allow.
The host holds a pointer and goes through the functions of subnet_api.h.

Flagged, with comments and strings blanked first:
  include   `#include "subnet/subnet_int.h"`;
  member    `X.sn.F`, `X->sn.F`, `X.sn->F`, `X->sn->F` (the daemon's d->sn);
  pointer   `P->F` / `P.F` where P is declared in the same file as a
            `struct sib_subnet` or a pointer to one, and F is a field of it.
The field names are read from the struct in src/subnet/subnet_int.h.
Prints one line per use ("VIOLATION file:line: ...") and exits 1, or a
summary and exits 0; exits 2 when it cannot read the struct.
--selftest: a scratch file with one use of each kind must fail the check
(and one that only calls the interface must pass).

usage: subnet_private.py --source-dir DIR [--allow FILE]... [--selftest]
"""
import argparse
import os
import re
import sys
import tempfile

STRUCT_RE = re.compile(r"struct\s+sib_subnet\s*\{(.*?)\n\};", re.S)
MEMBER_RE = re.compile(r"(?:->|\.)\s*sn\s*(?:\.|->)\s*([A-Za-z_]\w*)")
INT_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*["<]subnet/subnet_int\.h[">]', re.M)
DECL_RE = re.compile(r"struct\s+sib_subnet\s*(?:\*\s*(?:const\s+)?)*([A-Za-z_]\w*)")


def blank(text):
    """TEXT with comments and string/char literals replaced by spaces
    (newlines kept, so that line numbers stay)."""
    out = re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'",
                 lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return out


def die(msg):
    print("subnet_private: " + msg, file=sys.stderr)
    sys.exit(2)


def fields(srcdir):
    path = os.path.join(srcdir, "src/subnet/subnet_int.h")
    try:
        text = blank(open(path, encoding="utf-8").read())
    except OSError as e:
        die("cannot read %s: %s" % (path, e))
    m = STRUCT_RE.search(text)
    if not m:
        die("%s: no 'struct sib_subnet {...};'" % path)
    names = set()
    for decl in m.group(1).split(";"):
        decl = decl.strip()
        if not decl:
            continue
        fp = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", decl)  # a function pointer
        name = fp.group(1) if fp else re.findall(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*$", decl)
        names.add(name if fp else (name[0] if name else None))
    names.discard(None)
    if not names:
        die("%s: struct sib_subnet has no fields" % path)
    return names


def check_file(path, rel, names):
    """Violations of one file: ["rel:line: what"]."""
    try:
        raw = open(path, encoding="utf-8", errors="replace").read()
    except OSError as e:
        die("cannot read %s: %s" % (path, e))
    text = blank(raw)

    def line(pos):
        return text.count("\n", 0, pos) + 1

    found = ["%s:%d: includes subnet/subnet_int.h (the context's layout)" % (rel, line(m.start()))
             for m in INT_RE.finditer(raw) if text[m.start() + m.group(0).index("#")] == "#"]

    for m in MEMBER_RE.finditer(text):
        found.append("%s:%d: uses field '%s' of the subnet's context (sn.%s)"
                     % (rel, line(m.start()), m.group(1), m.group(1)))
    for var in sorted({m.group(1) for m in DECL_RE.finditer(text)} - {"sib_subnet"}):
        for m in re.finditer(r"\b%s\s*(?:->|\.)\s*([A-Za-z_]\w*)" % re.escape(var), text):
            if m.group(1) in names:
                found.append("%s:%d: uses field '%s' of the subnet's context through %s"
                             % (rel, line(m.start()), m.group(1), var))
    return found


def sources(srcdir):
    for top in ("src", "tools"):
        for root, dirs, files in os.walk(os.path.join(srcdir, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    full = os.path.join(root, f)
                    yield full, os.path.relpath(full, srcdir)


def run(srcdir, allow, extra=None):
    names = fields(srcdir)
    bad, n = [], 0
    files = list(sources(srcdir)) + ([extra] if extra else [])
    for full, rel in files:
        if rel.startswith("src/subnet/") or rel in allow:
            continue
        n += 1
        bad.extend(check_file(full, rel, names))
    return names, n, bad


def selftest(srcdir, allow):
    probes = {
        "member": "void f(struct sibd *d) { d->sn->mad.oob++; }\n",
        "by value": "unsigned g(struct sibd d) { return d.sn->fab.n_nodes; }\n",
        "pointer": ("void h(struct sibd *d) { struct sib_subnet *s = d->sn;\n"
                    " s->sm_external = 1; }\n"),
        "include": "/* x */\n  #  include \"subnet/subnet_int.h\"\n",
    }
    clean = ("/* d->sn->fab in a comment\n#include \"subnet/subnet_int.h\" */\n"
             "void k(struct sibd *d)\n"
             "{ sib_subnet_mad_count(d->sn, SIB_MAD_EV_OOB, 1); }\n")
    with tempfile.TemporaryDirectory() as tmp:
        ok = True
        for what, code in list(probes.items()) + [("clean", clean)]:
            path = os.path.join(tmp, "probe.c")
            with open(path, "w", encoding="utf-8") as f:
                f.write(code)
            _, _, bad = run(srcdir, allow, (path, "src/daemon/probe.c"))
            probe = [b for b in bad if b.startswith("src/daemon/probe.c")]
            want = what != "clean"
            if bool(probe) != want:
                print("SELFTEST %s: %s" % (what, "not caught" if want else "caught: %s" % probe))
                ok = False
            else:
                print("selftest %s: %s" % (what, probe[0] if probe else "passes"))
        return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--allow", action="append", default=[])
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        sys.exit(selftest(a.source_dir, set(a.allow)))
    names, n, bad = run(a.source_dir, set(a.allow))
    for b in bad:
        print("VIOLATION " + b)
    if bad:
        sys.exit(1)
    print("subnet_private: %d files outside src/subnet/ include no subnet_int.h and use none of"
          " struct sib_subnet's %d fields (allowed: %s)"
          % (n, len(names), ", ".join(sorted(a.allow)) or "none"))


if __name__ == "__main__":
    main()
