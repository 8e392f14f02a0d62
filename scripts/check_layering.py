#!/usr/bin/env python3
"""The layering check of reprocl's library (docs/developing.md, "Layout").

src/ holds one folder per layer or kernel family. Dependencies run one way, from the top of this table to
the bottom; a folder may use its own files and the folders of lower rows, never its own row's other folders
or a higher row:

    mpi                        the MPI layer, a library of its own (reprocl_mpi) over the main one
    audit                      the audit of compiled kernels (walks every program of every family)
    context                    contexts, the table of families, the first-use self-test, bundles of all programs
    stencil sparse md          kernel families that use the reductions
    reduce bounds              the reductions; the bounds analysis (host only)
    tune                       the tuner, its cache, platform defaults, parameters
    build                      programs under the policy, binary cache, bundles, cache directories and state
    core                       errors, allocation, digests, profiles, launching, kernel sources, files

Two graphs are checked:
  * includes: every `#include "folder/..."` of a file in src/ (the CLI may include only public headers);
  * symbols: which object file defines each global symbol and which uses it (`nm` over the objects of the library
    and of the MPI layer, where built, in a build directory), so a call through any header, or a local
    declaration, counts.
A folder's cli/ subfolder (src/mpi/cli/, the reprocl-mpi tool) is checked as the CLI is.
And within each folder, the files' symbol graph must have no cycle (a knot between two files is a design
bug: the shared piece belongs in a third file below both).

usage: scripts/check_layering.py [--src DIR] [BUILD_DIR]
  BUILD_DIR  a configured and built tree (default: build); DIR: the sources' src/ (default: this checkout's;
             tests/cli_layering.sh points it at a made-up tree with known violations)
  exit 0 clean, 1 violations, 2 usage
"""
import collections
import glob
import os
import re
import subprocess
import sys

ROWS = [
    ["core"],
    ["build"],
    ["tune"],
    ["reduce", "bounds"],
    ["stencil", "sparse", "md"],
    ["context"],
    ["split"],
    ["audit"],
    ["mpi"],
]
RANK = {folder: i for i, row in enumerate(ROWS) for folder in row}
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SRC = os.path.join(ROOT, "src")


def allowed(src_folder, dst_folder):
    return src_folder == dst_folder or RANK[dst_folder] < RANK[src_folder]


def folder_of(rel):
    return rel.split("/", 1)[0]


def source_folder(rel):
    """The folder a source file is checked as: a tool under a folder's cli/ (src/mpi/cli/) is the CLI."""
    parts = rel.split("/")
    return "cli" if len(parts) == 3 and parts[1] == "cli" else parts[0]


def check_includes(errors):
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    files = 0
    paths = [p for pat in ("*/*.[ch]", "*/*.cpp", "*/cli/*.[ch]") for p in glob.glob(os.path.join(SRC, pat))]
    for path in sorted(paths):
        rel = os.path.relpath(path, SRC)
        f = source_folder(rel)
        files += 1
        if f != "cli" and f not in RANK:
            errors.append(f"src/{rel}: folder '{f}' is not in the layer table of scripts/check_layering.py")
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = inc.match(line)
                if not m or "/" not in m.group(1) or m.group(1).startswith("reprocl/"):
                    continue
                target = folder_of(m.group(1))
                if f == "cli":
                    if target in RANK:
                        errors.append(f"src/{rel}:{n}: the CLI includes the library's private header {m.group(1)}")
                    continue
                if target not in RANK:
                    continue  # a kernel source or generated file, not a layer
                if not allowed(f, target):
                    errors.append(f"src/{rel}:{n}: includes {m.group(1)}: '{f}' may not depend on '{target}'"
                                  f" ({why(f, target)})")
    return files


def why(a, b):
    return "same row" if RANK[a] == RANK[b] else "a higher layer"


def nm_symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDRBGSCV":
            defined.add(p[2])
        elif len(p) == 2 and p[0] == "U":
            used.add(p[1])
    return defined, used


def check_symbols(build, errors):
    objdir = os.path.join(build, "CMakeFiles", "reprocl_objects.dir", "src")
    objdirs = [objdir, os.path.join(build, "CMakeFiles", "reprocl_mpi_objects.dir", "src")]
    objs = sorted((d, o) for d in objdirs for o in glob.glob(os.path.join(d, "*", "*.o")))
    if not any(d == objdir for d, _ in objs):
        print(f"check_layering: no objects under {objdir}: build the library first", file=sys.stderr)
        sys.exit(2)
    owner, uses = {}, {}
    for d, o in objs:
        rel = os.path.relpath(o, d)[: -len(".o")]
        if not os.path.exists(os.path.join(SRC, rel)):
            continue  # a stale object of a source file that was moved or deleted
        d, u = nm_symbols(o)
        for s in d:
            owner[s] = rel
        uses[rel] = u
    edges = collections.defaultdict(dict)  # file -> {file: [symbols]}
    for f, us in uses.items():
        for s in sorted(us):
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, []).append(s)
    for f in sorted(edges):
        for g, syms in sorted(edges[f].items()):
            a, b = folder_of(f), folder_of(g)
            if a not in RANK or b not in RANK:
                errors.append(f"src/{f} -> src/{g}: folder not in the layer table")
            elif not allowed(a, b):
                errors.append(f"src/{f} uses {', '.join(syms[:4])}{' ...' if len(syms) > 4 else ''} of src/{g}:"
                              f" '{a}' may not depend on '{b}' ({why(a, b)})")
    # cycles between files of one folder (strongly connected components of the file graph)
    for comp in sccs({f: [g for g in edges[f] if folder_of(g) == folder_of(f)] for f in uses}):
        lines = [f"  src/{f} -> src/{g}: {', '.join(edges[f][g][:3])}" for f in sorted(comp) for g in
                 sorted(edges[f]) if g in comp]
        errors.append("a knot between files (each reaches the others): " + ", ".join(sorted(comp)) + "\n" +
                      "\n".join(lines))
    return len(uses), sum(len(v) for v in edges.values())


def sccs(adj):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(adj):
        if v not in index:
            visit(v)
    return out


def main():
    global SRC
    args = sys.argv[1:]
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if args[:1] == ["--src"] and len(args) >= 2:
        SRC = os.path.abspath(args[1])
        args = args[2:]
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = args[0] if args else os.path.join(ROOT, "build")
    errors = []
    nfiles = check_includes(errors)
    nobjs, nedges = check_symbols(build, errors)
    for e in errors:
        print("layering: " + e)
    if errors:
        print(f"layering: {len(errors)} violation(s); the layer table is in scripts/check_layering.py and"
              " docs/developing.md")
        return 1
    print(f"layering: ok ({nfiles} source files, {nobjs} objects, {nedges} file-to-file dependencies,"
          f" {len(ROWS)} layers, no cycle)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
