#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering check (docs/architecture.md "The allowed matrix").

Reads the matrix (folder -> folders it may use) and its known exceptions
from docs/architecture.md, then checks every folder of the matrix:
  symbols   every object file of the folder (the CMake targets' objects,
            listed by tests/layering.cmake) needs, by `nm -u`, only symbols
            that the folder itself, a folder it may use or the system (the
            shared libraries the built binaries load) defines.  Any reference
            counts, a call or an address taken into a table, since each is a
            relocation against an undefined symbol of the object.
  includes  every `#include` of the folder's .c and .h files names a header
            of the folder itself, of a folder it may use, of include/ or of
            the system.
  pointers  no object looks a function up by name (dlsym, dlvsym), and no
            source casts to a function-pointer type, so that a call up can
            go only through a hook table whose type the lower folder
            declares (it can name no other: see the includes).
  matrix    the matrix has no circle, names only its own rows, and every
            folder of src/ with C files has a row; every exception is needed.
A row whose role starts with "interposer" (src/preload: an LD_PRELOAD
library that defines libc's own names) defines, for the other folders,
only the symbols the system does not: their calls of open or stat are the
system's.
Prints one line per violation ("VIOLATION <file>: ...") and exits 1, or a
summary per folder and exits 0; exits 2 when it cannot read the matrix or
its inputs.  No output is cached: each run reads the tree and the objects.

usage: layering.py --doc FILE --source-dir DIR --build-dir DIR
                   --objects FILE [--ldd BINARY]... [--extra FOLDER=FILE]...
--extra adds a file to a folder (an .o to check, or a .c/.h to scan):
tests/layering_selftest.py injects violations that way.
"""
import argparse
import os
import re
import subprocess
import sys

# Symbols the static linker provides itself.
LINKER_SYMBOLS = {"_GLOBAL_OFFSET_TABLE_", "__dso_handle", "_DYNAMIC"}
# Looking a function up by name bypasses the symbol check.
BY_NAME = {"dlsym", "dlvsym"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# A cast to a function-pointer type: "(ret (*)(args))" not after sizeof.
FNCAST_RE = re.compile(r'(?<!sizeof)\(\s*(?:const\s+)?[A-Za-z_][\w\s]*\**\s*\(\s*\*\s*\)\s*\([^()]*\)\s*\)\s*[\w(&]')
CELL_RE = re.compile(r"`([^`]+)`")


def die(msg):
    print("layering: " + msg, file=sys.stderr)
    sys.exit(2)


def table_rows(lines, header):
    """Rows (lists of cells) of the first markdown table whose header cells
    start with HEADER (lower case, backticks and spaces stripped)."""
    for i, line in enumerate(lines):
        cells = [c.strip().strip("`").lower() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and cells[:len(header)] == header:
            if i + 1 >= len(lines) or not re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
                die("the table '%s' has no |---| line under its header" % " | ".join(header))
            rows = []
            for row in lines[i + 2:]:
                if not row.lstrip().startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return i + 1, rows
    return None, None


def parse_matrix(doc):
    """{folder: set(folders it may use)} and {file: (set(folders), why)}."""
    try:
        lines = open(doc, encoding="utf-8").read().split("\n")
    except OSError as e:
        die("cannot read the matrix: %s" % e)
    at, rows = table_rows(lines, ["folder", "may use"])
    if rows is None:
        die("%s: no table with the header '| folder | may use | ...' (the allowed matrix)" % doc)
    matrix = {}
    for r in rows:
        names = CELL_RE.findall(r[0])
        if len(r) < 2 or len(names) != 1:
            die("%s:%d: a matrix row needs one `folder` in its first cell: %s" % (doc, at, "|".join(r)))
        uses = CELL_RE.findall(r[1])
        if not uses and r[1].strip().lower() not in ("nothing", "-", "none"):
            die("%s: row %s: 'may use' lists `folders` or says nothing" % (doc, names[0]))
        matrix[names[0].rstrip("/")] = {u.rstrip("/") for u in uses}
        if len(r) > 2 and r[2].strip().lower().startswith("interposer"):
            INTERPOSERS.add(names[0].rstrip("/"))
    if not matrix:
        die("%s: the allowed matrix has no rows" % doc)
    for f, uses in matrix.items():
        for u in uses:
            if u not in matrix:
                die("%s: row %s may use %s, which has no row" % (doc, f, u))
            if u == f:
                die("%s: row %s lists itself" % (doc, f))
    # No circle: a folder may never reach itself.
    for f in matrix:
        seen, todo = set(), list(matrix[f])
        while todo:
            u = todo.pop()
            if u == f:
                die("%s: the matrix has a circle through %s" % (doc, f))
            if u not in seen:
                seen.add(u)
                todo.extend(matrix[u])
    exceptions = {}
    at, rows = table_rows(lines, ["file", "may also use"])
    for r in rows or []:
        files = CELL_RE.findall(r[0])
        uses = {u.rstrip("/") for u in CELL_RE.findall(r[1])} if len(r) > 1 else set()
        why = r[2].strip() if len(r) > 2 else ""
        if len(files) != 1 or not uses or not why:
            die("%s: an exception row needs `file` | `folders` | a reason: %s" % (doc, "|".join(r)))
        for u in uses:
            if u not in matrix:
                die("%s: exception %s names %s, which has no row" % (doc, files[0], u))
        exceptions[files[0]] = (uses, why)
    return matrix, exceptions


class Tree:
    def __init__(self, matrix, srcdir):
        self.matrix = matrix
        self.srcdir = os.path.realpath(srcdir)
        # Longest folder first, so that a nested row wins.
        self.folders = sorted(matrix, key=len, reverse=True)

    def rel(self, path):
        p = os.path.relpath(os.path.realpath(path), self.srcdir)
        return None if p.startswith("..") else p

    def folder_of(self, rel):
        for f in self.folders:
            if rel == f or rel.startswith(f + "/"):
                return f
        return None

    def may(self, folder, target, relfile):
        """May RELFILE (of FOLDER) use TARGET?"""
        if target == folder or target in self.matrix[folder]:
            return True
        if target in EXC.get(relfile, (set(), ""))[0]:
            USED.add((relfile, target))
            return True
        return False


EXC = {}
INTERPOSERS = set()  # folders whose definitions of system symbols do not count
USED = set()  # (file, folder) pairs an exception was needed for


def run(cmd):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        die("%s: %s" % (" ".join(cmd), e))


def object_source(obj, builddir, srcdir):
    """The source file a CMake object was built from:
    BUILD/<dir>/CMakeFiles/<target>.dir/<path, '..' as '__'>.o"""
    rel = os.path.relpath(obj, builddir)
    m = re.match(r"^(.*?)/?CMakeFiles/[^/]+\.dir/(.*)\.o(bj)?$", rel)
    if not m:
        return None
    parts = [".." if p == "__" else p for p in m.group(2).split("/")]
    return os.path.normpath(os.path.join(srcdir, m.group(1), *parts))


def nm_objects(objs, *flags):
    """{object: [lines]} of `nm FLAGS` over many objects at once."""
    out = {}
    for i in range(0, len(objs), 200):
        chunk = objs[i:i + 200]
        text = run(["nm", "-A", *flags] + chunk)
        for o in chunk:
            out.setdefault(o, [])
        for line in text.splitlines():
            name, _, rest = line.partition(": ")
            if not rest:
                name, _, rest = line.partition(":")
            out.setdefault(name, []).append(rest)
    return out


def system_symbols(binaries):
    libs = set()
    for b in binaries:
        for line in run(["ldd", b]).splitlines():
            f = line.split()
            if len(f) >= 3 and f[1] == "=>" and f[2].startswith("/"):
                libs.add(f[2])
            elif f and f[0].startswith("/"):
                libs.add(f[0])
    syms = set(LINKER_SYMBOLS)
    for so in sorted(libs):
        for line in run(["nm", "-D", "--defined-only", so]).splitlines():
            f = line.split()
            if len(f) >= 3:
                syms.add(f[2].split("@")[0])
    return syms


def check_rows(tree, exceptions, bad):
    """Every folder with C files under a matrix root (src/) has a row; every
    exception names a file that exists."""
    roots = {f.split("/")[0] for f in tree.matrix if "/" in f}
    for root in sorted(roots):
        base = os.path.join(tree.srcdir, root)
        for d in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            path = os.path.join(base, d)
            if os.path.isdir(path) and tree.folder_of(root + "/" + d) is None and any(
                    n.endswith((".c", ".h")) for n in os.listdir(path)):
                bad.append("VIOLATION %s/%s: a folder with C files but no row in the matrix" % (root, d))
    for f in exceptions:
        if not os.path.exists(os.path.join(tree.srcdir, f)):
            bad.append("VIOLATION %s: an exception for a file that does not exist (remove its row)" % f)


def collect_objects(tree, listfile, builddir):
    """[(folder, source rel, object)] of the listed objects built from a
    folder of the matrix."""
    objs = []
    try:
        listed = [l.strip() for l in open(listfile) if l.strip()]
    except OSError as e:
        die("cannot read the object list: %s" % e)
    for o in dict.fromkeys(listed):
        src = object_source(o, builddir, tree.srcdir)
        rel = tree.rel(src) if src else None
        folder = tree.folder_of(rel) if rel else None
        if folder:
            if not os.path.exists(o):
                die("%s: not built (build first)" % o)
            objs.append((folder, rel, o))
    return objs


def collect_sources(tree):
    """{path: (folder, rel)} of every .c and .h of the matrix's folders."""
    sources = {}
    for f in tree.matrix:
        for dirpath, dirs, files in os.walk(os.path.join(tree.srcdir, f)):
            dirs[:] = [d for d in dirs if tree.folder_of(tree.rel(os.path.join(dirpath, d))) == f]
            for n in files:
                if n.endswith((".c", ".h")):
                    p = os.path.join(dirpath, n)
                    sources[p] = (f, tree.rel(p))
    return sources


def check_symbols(tree, objs, binaries, bad):
    """Each object's strong undefined symbols against the definitions of the
    folders it may use and the system."""
    paths = [o for _, _, o in objs]
    defined = {}
    system = system_symbols(binaries)
    defs = nm_objects(paths, "-g", "--defined-only")
    for folder, _, o in objs:
        for line in defs[o]:
            f = line.split()
            if len(f) == 3 and not (folder in INTERPOSERS and f[2] in system):
                defined.setdefault(f[2], set()).add(folder)
    undef = nm_objects(paths, "-u")
    for folder, rel, o in objs:
        for line in undef[o]:
            f = line.split()
            if len(f) != 2 or f[0] != "U":
                continue  # a weak reference may stay unresolved
            sym = f[1]
            where = defined.get(sym, set())
            if any(tree.may(folder, w, rel) for w in where):
                continue
            if sym in BY_NAME:
                bad.append("VIOLATION %s: calls %s (a function looked up by name escapes this check)" % (rel, sym))
            elif where:
                bad.append("VIOLATION %s: uses %s, defined by %s, which %s may not use"
                           % (rel, sym, ", ".join(sorted(where)), folder))
            elif sym not in system:
                bad.append("VIOLATION %s: uses %s, which nothing defines" % (rel, sym))


def check_include(tree, path, folder, rel, kind, name, line, bad):
    """One #include of PATH (a file of FOLDER)."""
    incdirs = [os.path.join(tree.srcdir, "include"), os.path.join(tree.srcdir, "src")]
    cands = ([os.path.join(os.path.dirname(path), name)] if kind == '"' else []) + \
        [os.path.join(d, name) for d in incdirs]
    hit = next((c for c in cands if os.path.exists(c)), None)
    if hit is None:
        if kind == '"':
            bad.append("VIOLATION %s:%d: includes \"%s\", found neither beside it nor in src/ or include/"
                       % (rel, line, name))
        return  # a system header
    hrel = tree.rel(hit)
    if hrel is None or hrel.startswith("include/"):
        return  # include/softib/: the public headers
    target = tree.folder_of(hrel)
    if target is None:
        bad.append("VIOLATION %s:%d: includes %s, which belongs to no folder of the matrix" % (rel, line, hrel))
    elif not tree.may(folder, target, rel):
        bad.append("VIOLATION %s:%d: includes %s of %s, which %s may not use"
                   % (rel, line, hrel, target, folder))


def check_sources(tree, sources, bad):
    """Includes and function-pointer casts of every source."""
    for path, (folder, rel) in sorted(sources.items()):
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in INCLUDE_RE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            check_include(tree, path, folder, rel, m.group(1), m.group(2), line, bad)
        for m in FNCAST_RE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            bad.append("VIOLATION %s:%d: casts to a function-pointer type (%s): a hook gets a declared type"
                       % (rel, line, m.group(0).strip()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--doc", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--objects", required=True)
    ap.add_argument("--ldd", action="append", default=[])
    ap.add_argument("--extra", action="append", default=[])
    a = ap.parse_args()

    matrix, exceptions = parse_matrix(a.doc)
    EXC.update(exceptions)
    tree = Tree(matrix, a.source_dir)
    bad = []
    check_rows(tree, exceptions, bad)
    objs = collect_objects(tree, a.objects, a.build_dir)
    sources = collect_sources(tree)
    for e in a.extra:
        folder, _, path = e.partition("=")
        if folder not in matrix or not os.path.exists(path):
            die("--extra %s: no such folder row or file" % e)
        label = "%s/%s" % (folder, os.path.basename(path))
        if path.endswith(".o"):
            objs.append((folder, label, path))
        else:
            sources[path] = (folder, label)
    check_symbols(tree, objs, a.ldd, bad)
    check_sources(tree, sources, bad)
    for f, (uses, _) in sorted(exceptions.items()):
        for u in sorted(uses):
            if (f, u) not in USED and os.path.exists(os.path.join(tree.srcdir, f)):
                bad.append("VIOLATION %s: its exception for %s is no longer needed (remove the row)" % (f, u))

    for line in bad:
        print(line)
    if bad:
        print("layering: %d violation(s); the matrix and its exceptions are in %s" % (len(bad), a.doc))
        return 1
    for f in sorted(matrix):
        n_obj = sum(1 for x in objs if x[0] == f)
        n_src = sum(1 for x in sources.values() if x[0] == f)
        uses = ", ".join(sorted(matrix[f])) or "nothing"
        note = "" if n_obj or n_src else " (no such folder yet)"
        print("%s: ok, %d objects, %d sources; may use %s%s" % (f, n_obj, n_src, uses, note))
    for f, (uses, why) in sorted(exceptions.items()):
        print("exception: %s may also use %s (%s)" % (f, ", ".join(sorted(uses)), why[:70]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
