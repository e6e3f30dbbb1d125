#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Shows that the layering check (tests/layering.py) fails on a deliberate
violation in every folder of the matrix.  For each folder F that exists, in a
scratch directory, it writes
  F's include probe  a source of F that includes a header of a folder F may
                     not use, and casts to a function-pointer type;
  F's call probe     an object of F (compiled from a 2-line source) that calls
                     a function which only that folder defines;
hands them to the check with --extra (the built objects are reused: no
rebuild) and requires one report of each per folder, and exit status 1.  It
also requires exit 2 with a clear message for a document without the matrix
and for a matrix with a circle, a report of an exception nobody needs, and the same verdict on the tree itself as
the check alone (every violation it reports is a probe's).

usage: layering_selftest.py --cc COMPILER --scratch DIR LAYERING_ARGS...
(LAYERING_ARGS: those of layering.py, --doc first among them.)
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import layering  # noqa: E402


def arg(args, name):
    return args[args.index(name) + 1]


def check(args, extra=()):
    cmd = [sys.executable, os.path.join(HERE, "layering.py")] + args + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def upward(matrix, f):
    """Folders that may use F, directly or through others (F's layers above)."""
    above = set()
    changed = True
    while changed:
        changed = False
        for g, uses in matrix.items():
            if g not in above and (f in uses or uses & above):
                above.add(g)
                changed = True
    return above


def main():
    argv = sys.argv[1:]
    cc = arg(argv, "--cc")
    scratch = arg(argv, "--scratch")
    args = [a for i, a in enumerate(argv)
            if a not in ("--cc", "--scratch") and argv[i - 1] not in ("--cc", "--scratch")]
    doc, srcdir, builddir = arg(args, "--doc"), arg(args, "--source-dir"), arg(args, "--build-dir")
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    matrix, _ = layering.parse_matrix(doc)
    tree = layering.Tree(matrix, srcdir)

    # What each folder defines (global functions) and holds (headers).
    objs = {}
    for f, _, o in layering.collect_objects(tree, arg(args, "--objects"), builddir):
        objs.setdefault(f, []).append(o)
    funcs = {}
    for f, os_ in objs.items():
        out = subprocess.run(["nm", "-g", "--defined-only"] + os_, capture_output=True,
                             text=True, check=True).stdout
        funcs[f] = sorted({l.split()[2] for l in out.splitlines()
                           if len(l.split()) == 3 and l.split()[1] == "T"})
    headers = {f: sorted(n for n in os.listdir(os.path.join(tree.srcdir, f)) if n.endswith(".h"))
               for f in matrix if os.path.isdir(os.path.join(tree.srcdir, f))}

    base_rc, base_out = check(args)
    extra, expect = [], []
    for f in sorted(matrix):
        if f not in objs and f not in headers:
            print("%s: no such folder yet, nothing to inject" % f)
            continue
        banned = [g for g in sorted(matrix) if g != f and g not in matrix[f]
                  and funcs.get(g) and headers.get(g)]
        if not banned:
            print("%s: may use every other folder, nothing to violate" % f)
            continue
        above = upward(matrix, f)
        y = next((g for g in banned if g in above), banned[0])
        # A function only Y defines, and a header of Y as F would name it.
        own = [s for s in funcs[y] if not any(s in funcs.get(g, ()) for g in funcs if g != y)]
        sym = sorted(own, key=lambda s: not s.startswith(("sib_", "ibv_", "umad_")))[0]
        hdr = headers[y][0]
        hpath = os.path.join(tree.srcdir, y, hdr)
        src_root = os.path.join(tree.srcdir, "src")
        name = os.path.relpath(hpath, src_root) if y.startswith("src/") else hpath
        stem = "layering_probe_" + re.sub(r"\W", "_", f)
        inc = os.path.join(scratch, stem + "_inc.c")
        with open(inc, "w") as fp:
            fp.write('#include "%s"\n' % name)
            fp.write("void *%s_p(void *p) { return (void *)(void (*)(void))p; }\n" % stem)
        call = os.path.join(scratch, stem + "_call.c")
        with open(call, "w") as fp:
            fp.write("extern void %s(void);\nvoid %s(void) { %s(); }\n" % (sym, stem, sym))
        subprocess.run([cc, "-c", "-o", call[:-2] + ".o", call], check=True)
        extra += ["--extra", "%s=%s" % (f, inc), "--extra", "%s=%s" % (f, call[:-2] + ".o")]
        expect.append((f, "include", "VIOLATION %s/%s:1: includes %s/%s of %s," % (f, os.path.basename(inc), y, hdr, y)))
        expect.append((f, "cast", "VIOLATION %s/%s:2: casts to a function-pointer type" % (f, os.path.basename(inc))))
        expect.append((f, "call", "VIOLATION %s/%s: uses %s, defined by " % (f, stem + "_call.o", sym)))

    fail = 0
    rc, out = check(args, extra)
    lines = out.splitlines()
    for f, kind, want in expect:
        hit = [l for l in lines if l.startswith(want)]
        print("%s: %s %s" % (f, kind, "caught: " + hit[0] if hit else "NOT CAUGHT (wanted: %s)" % want))
        fail |= not hit
    if rc != 1:
        print("FAIL: the check exited %d with the probes, not 1" % rc)
        fail = 1
    # Apart from the probes, the same verdict as the tree alone.
    rest = [l for l in lines if l.startswith("VIOLATION") and "layering_probe_" not in l]
    if sorted(rest) != sorted(l for l in base_out.splitlines() if l.startswith("VIOLATION")):
        print("FAIL: the probes changed what the check says of the tree itself")
        fail = 1

    # A document without the matrix, and a matrix with a circle: exit 2, said.
    text = open(doc, encoding="utf-8").read()
    nomatrix = os.path.join(scratch, "no_matrix.md")
    open(nomatrix, "w").write(text.replace("| folder | may use |", "| folder | uses |"))
    circle = os.path.join(scratch, "circle.md")
    open(circle, "w").write(re.sub(r"(\| `src/iba` \| )[^|]*\|", r"\1`src/common` |", text, count=1))
    # An exception nobody needs: exit 1, said.
    stale = os.path.join(scratch, "stale.md")
    open(stale, "w").write(text.replace("| file | may also use | why |\n|---|---|---|\n",
                                        "| file | may also use | why |\n|---|---|---|\n"
                                        "| `src/iba/crc.c` | `src/common` | a probe |\n"))
    for name, path, code, want in (("no matrix", nomatrix, 2, "no table with the header"),
                                   ("a circle", circle, 2, "the matrix has a circle"),
                                   ("a stale exception", stale, 1, "src/iba/crc.c: its exception for src/common is no longer needed")):
        rc, out = check([path if a == doc else a for a in args])
        hit = [l for l in out.splitlines() if want in l]
        ok = rc == code and hit
        print("%s: %s" % (name, "exit %d: %s" % (rc, hit[0]) if ok else "NOT REPORTED (rc %d): %s" % (rc, out)))
        fail |= not ok
    if not fail:
        shutil.rmtree(scratch, ignore_errors=True)
    print("layering selftest: %s" % ("FAILED" if fail else "every injected violation caught"))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
