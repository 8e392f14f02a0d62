#!/usr/bin/env python3
"""Runs the marked command examples of README.md and docs/*.md and checks every relative link.

An example is a fenced block right after the line `<!-- example -->`:

    <!-- example -->
    ```console
    $ reprocl bounds --kind sum --n 8 --device 0
    bounds: sum of 8 f32 values (dist uniform, seed 1)
    ...
    ```

Lines starting with `$ ` are commands (a line ending in `\\` continues on the next); the other lines are the
output the command before them prints (stdout and stderr together). Unmarked blocks are never run.
Comparing shown with real output:
  - runs of blanks compare equal (columns may move);
  - times, rates and dates are masked on both sides: a number followed by ns/us/µs/ms/s, by GB/s, MB/s,
    TB/s, GFLOP/s, steps/s or /s, and ISO dates and clock times;
  - a line whose first non-blank text is `...` matches any number of lines (none included); what follows
    it on that line is a note for the reader;
  - `...` inside a line matches any text within that line.
A command exiting non-zero fails the example unless the block shows its status (`$?` in the command
itself or in the next one, e.g. `$ echo $?`).

Commands run with bash, in document order, in one scratch directory (so a block may read a file an
earlier block of the same document wrote) that links to the repository's tests/, scripts/, cl/,
platforms/, include/ and docs/, so `tests/data/...` works as from the repository root while files the
examples write stay out of the tree. `reprocl` is the built CLI (--cli, default build/reprocl), put first
on PATH.

The examples show PoCL, Rusticl and Intel's CPU runtime as devices 0, 1, 2 (DRIVERS). The ICD loader
(ocl-icd) lists platforms in the readdir() order of its vendors directory, which differs between machines,
so the commands run with OCL_ICD_VENDORS set to a directory of the script's own holding those three ICDs
only, in that order (OCL_ICD_PLATFORM_SORT=none); a machine without one of them exits 4. Device names are
compared as placeholders (`<pocl-device>` …), whole or cut short by a table column, both those of the
machine that printed the shown output (docs/examples-machine.json, written by --update) and this
machine's; so are the resources `reprocl devices` reports (compute units, work-group limit, memory).
REPROCL_TUNING=off (unless set) and an empty REPROCL_CACHE_DIR of its own keep tuned, timing-dependent
choices out of the output (the built-in defaults are shown), and RUSTICL_ENABLE is unset: an example that
wants Rusticl's device sets it on its command line. Blank lines ending a command's output only separate it
from the next command.

Links: every relative link [text](path#anchor) outside code must name an existing file or directory, and
its anchor a heading of that Markdown file (GitHub's anchors) or an explicit <a id=...>.

  scripts/doc_examples.py [--cli build/reprocl] [--update] [--links-only] [--list] [--only FILE[:LINE]] [FILES]

On a mismatch it prints file:line, the command and a unified diff (shown → what the doc would become) and
exits 1; --update rewrites the shown output in place instead, keeping every line the real output still
matches (masked times and wildcards stay as written); on a machine other than the recorded one it moves
every block's device names to this machine's and records it (all files at once). Exit 2: bad usage; 3:
could not run; 4: PoCL, Rusticl or Intel's runtime missing.
"""
import argparse
import difflib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata

MARKER = re.compile(r"^\s*<!--\s*example\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
WILDCARD_LINE = re.compile(r"^\s*\.\.\.")
LINKED_DIRS = ("tests", "scripts", "cl", "platforms", "include", "docs")

# Masks, applied to shown and real lines alike before they are compared.
_NUM = r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
MASKS = [
    (re.compile(_NUM + r"\s*(?:[KMGT]B|GFLOP|steps|pairs|M)?/s\b"), "<rate>"),
    (re.compile(_NUM + r"\s*(?:ns|us|µs|ms|s)\b"), "<time>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[-+]\d{2}:?\d{2})?)?\b"), "<date>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b"), "<clock>"),
    # the machine's resources in `reprocl devices`: cores, memory and the driver's limits that follow from them
    (re.compile(r"\b\d+ compute units\b"), "<n> compute units"),
    (re.compile(r"\bwork-group <= \d+"), "work-group <= <n>"),
    (re.compile(r"\b(local|global|max alloc) \d+ ([KMG]iB)\b"), r"\1 <n> \2"),
]


class Identity:
    """Replaces the names that say which machine ran an example by placeholders, the same way in the shown
    and the real output: each device name (`<pocl-device>` …) of the machine that produced the shown output
    (docs/examples-machine.json) and of this one, whole or cut short by a table column (a prefix of at least
    MIN characters followed by a blank or the end of the line). Platform names stand for themselves, so a
    device name's prefix never eats into one. Scanning left to right with the longest match at each word
    start makes it a function of the text: equal text gives equal results on both sides."""

    MIN = 8

    def __init__(self, machines=()):
        reps = {}
        for m in machines:
            for key, d in m.items():
                reps.setdefault(d["platform"], d["platform"])
                reps.setdefault(d["device"], "<%s-device>" % key)
        self.labels = sorted(reps.items(), key=lambda kv: -len(kv[0]))

    def match(self, line, i):
        """(length, label, replacement) of the longest label occurrence at line[i], or None."""
        if i and (line[i - 1].isalnum() or line[i - 1] in "_-"):
            return None
        best = None
        for label, rep in self.labels:
            if best and len(label) <= best[0]:
                break
            k = os.path.commonprefix([line[i:i + len(label)], label]).__len__()
            if k < len(label):  # cut short: long enough, and where the column ends (its blanks included)
                t = len(line[i:i + k].rstrip())
                if t < self.MIN or rep == label or (i + t < len(line) and not line[i + t].isspace()):
                    continue
            if not best or k > best[0]:
                best = (k, label, rep)
        return best

    def __call__(self, line, restyle=None):
        """line with every occurrence replaced by its placeholder, or by restyle(label, text) if given."""
        if not self.labels:
            return line
        out, i = [], 0
        while i < len(line):
            m = self.match(line, i)
            if not m:
                out.append(line[i])
                i += 1
                continue
            k, label, rep = m
            out.append(restyle(label, line[i:i + k]) if restyle else rep)
            i += k
        return "".join(out)


IDENTITY = Identity()


@functools.lru_cache(maxsize=65536)
def mask(line, names=True):
    """line as compared: device names (unless names=False) and MASKS replaced, blank runs made one blank."""
    line = IDENTITY(line) if names else line
    for rx, rep in MASKS:
        line = rx.sub(rep, line)
    return " ".join(line.split())


class Pattern:
    """One shown output line: a line wildcard, or a masked line with optional inline wildcards."""

    def __init__(self, text, names=True):
        self.text, self.names = text, names
        self.wild = bool(WILDCARD_LINE.match(text))
        if not self.wild:
            parts = [re.escape(p) for p in mask(text, names).split("...")]
            self.rx = re.compile(r"\s*" + ".*?".join(parts) + r"\s*")

    def matches(self, line):
        return not self.wild and self.rx.fullmatch(mask(line, self.names)) is not None

    def similar(self, line):
        """Whether a real line looks like a new version of this one (what --update replaces it with)."""
        sm = difflib.SequenceMatcher(None, mask(self.text), mask(line), autojunk=False)
        return sm.real_quick_ratio() >= 0.6 and sm.quick_ratio() >= 0.6 and sm.ratio() >= 0.6


def align(shown, real, restyle=None):
    """The cheapest alignment of shown lines (patterns) with real lines: a shown line matching a real one
    costs 0, a line wildcard swallows any real lines for free, a shown line replaced by a similar real one
    costs 1 (so a stale line beside a wildcard is replaced, not dropped), an unmatched line on either side 2.
    Returns (cost, updated) where updated is the shown text with unmatched shown lines dropped and
    unmatched real lines inserted: what --update writes. With restyle (--update on another machine), a
    kept line that equals its real line only up to device names shows this machine's (restyle(line))."""
    pats = [Pattern(s) for s in shown]
    n, m = len(pats), len(real)
    inf = n + m + 1
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    move = [[None] * (m + 1) for _ in range(n + 1)]
    for j in range(m, -1, -1):
        cost[n][j], move[n][j] = 2 * (m - j), "ins"
    for i in range(n - 1, -1, -1):
        p = pats[i]
        for j in range(m, -1, -1):
            if p.wild:
                best, mv = cost[i + 1][j], "skipwild"
                if j < m and cost[i][j + 1] < best:
                    best, mv = cost[i][j + 1], "eat"
            else:
                best, mv = 2 + cost[i + 1][j], "del"
                if j < m:
                    if p.matches(real[j]) and cost[i + 1][j + 1] <= best:
                        best, mv = cost[i + 1][j + 1], "match"
                    if 1 + cost[i + 1][j + 1] < best and p.similar(real[j]):
                        best, mv = 1 + cost[i + 1][j + 1], "sub"
                    if 2 + cost[i][j + 1] < best:
                        best, mv = 2 + cost[i][j + 1], "ins"
            cost[i][j], move[i][j] = best, mv
    updated, i, j = [], 0, 0
    while i < n or j < m:
        mv = move[i][j]
        if mv == "match":
            keep = shown[i]
            if restyle and not Pattern(keep, names=False).matches(real[j]):
                keep = restyle(keep)
            updated.append(keep)
            i, j = i + 1, j + 1
        elif mv == "sub":
            updated.append(real[j].rstrip())
            i, j = i + 1, j + 1
        elif mv == "ins":
            updated.append(real[j].rstrip())
            j += 1
        elif mv == "del":
            i += 1
        elif mv == "eat":
            j += 1
        else:  # skipwild: the wildcard line stays, having swallowed what it could
            updated.append(shown[i])
            i += 1
    return cost[0][0], updated


class Command:
    def __init__(self, line, text):
        self.line = line  # 1-based line of the `$ ` line
        self.text = text  # the command, continuation lines joined with "\\\n"
        self.out_start = None  # 0-based index in the file of the first output line
        self.out = []


class Example:
    def __init__(self, path, line):
        self.path, self.line, self.commands = path, line, []


def parse(path, lines):
    """Marked example blocks of one Markdown file, and problems with their syntax."""
    examples, errors = [], []
    i = 0
    while i < len(lines):
        if not MARKER.match(lines[i]):
            i += 1
            continue
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not fence:
            errors.append(f"{path}:{i + 1}: <!-- example --> is not followed by a fenced block")
            i += 1
            continue
        ex = Example(path, i + 2)
        j = i + 2
        close = fence.group(2)
        while j < len(lines) and not lines[j].strip().startswith(close):
            text = lines[j]
            if text.startswith("$ "):
                cmd = Command(j + 1, text[2:])
                while cmd.text.endswith("\\") and j + 1 < len(lines):
                    j += 1
                    cmd.text += "\n" + lines[j]
                cmd.out_start = j + 1
                ex.commands.append(cmd)
            elif ex.commands:
                ex.commands[-1].out.append(text)
            else:
                errors.append(f"{path}:{j + 1}: output before the first `$ ` command of the example")
            j += 1
        if j >= len(lines):
            errors.append(f"{path}:{ex.line}: example block never closed")
        if not ex.commands:
            errors.append(f"{path}:{ex.line}: example block without a `$ ` command")
        examples.append(ex)
        i = j + 1
    return examples, errors


def shows_status(cmds, k):
    return "$?" in cmds[k].text or (k + 1 < len(cmds) and "$?" in cmds[k + 1].text)


def run_example(ex, work, env, timeout):
    """Runs the commands of one block in one bash process; returns [(status, output lines)] per command."""
    script = ["cd " + sh_quote(work)]
    for k, c in enumerate(ex.commands):
        out = os.path.join(work, ".doc-out-%d" % k)
        script.append("{ " + c.text + "\n} >" + sh_quote(out) + " 2>&1 </dev/null")
        script.append("__s=$?; echo $__s >" + sh_quote(out + ".status") + "; (exit $__s)")
    try:
        subprocess.run(["bash", "-c", "\n".join(script)], env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None
    results = []
    for k in range(len(ex.commands)):
        out = os.path.join(work, ".doc-out-%d" % k)
        try:
            with open(out, encoding="utf-8", errors="replace") as f:
                text = f.read()
            with open(out + ".status") as f:
                status = int(f.read().strip() or "-1")
            os.remove(out)
            os.remove(out + ".status")
        except (OSError, ValueError):
            text, status = "", -1
        results.append((status, text.splitlines()))
    return results


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


# ---- links ------------------------------------------------------------------------------------------------
LINK_DEST = re.compile(r"<?([^\s<>]+)>?(?:\s+\"[^\"]*\")?")


def link_destinations(line):
    """What stands between the parentheses after each `](` of a line (parentheses balanced)."""
    out, start = [], 0
    while True:
        k = line.find("](", start)
        if k < 0:
            return out
        depth, j = 1, k + 2
        while j < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            j += 1
        out.append(line[k + 2:j - 1] if depth == 0 else line[k + 2:])
        start = j
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_ANCHOR = re.compile(r"<a\s+(?:[^>]*\s)?(?:id|name)=[\"']([^\"']+)[\"']", re.I)
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def strip_code(lines):
    """Lines with fenced blocks blanked and inline code spans removed (links there are not links)."""
    out, fence = [], None
    for line in lines:
        m = FENCE.match(line)
        if fence:
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= len(fence) and not m.group(3).strip():
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(2)
            out.append("")
            continue
        out.append(re.sub(r"(`+)(?:(?!\1).)+?\1", "", line))
    return out


def github_anchor(text):
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.lower()
    kept = []
    for ch in text:
        if ch in " -_" or unicodedata.category(ch)[0] in "LN":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


_anchor_cache = {}


def anchors_of(path):
    if path not in _anchor_cache:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            raw = f.read().splitlines()
        for line in strip_code([re.sub(r"`", "", x) if HEADING.match(x) else x for x in raw]):
            for a in HTML_ANCHOR.findall(line):
                found.add(a)
            h = HEADING.match(line)
            if h:
                base = github_anchor(h.group(2))
                k = seen.get(base, 0)
                seen[base] = k + 1
                found.add(base if k == 0 else "%s-%d" % (base, k))
        _anchor_cache[path] = found
    return _anchor_cache[path]


def check_links(path, lines):
    problems = []
    base = os.path.dirname(path)
    for no, line in enumerate(strip_code(lines), 1):
        targets = []
        for dest in link_destinations(line):
            m = LINK_DEST.fullmatch(dest.strip())
            if m:
                targets.append(m.group(1))
            else:
                problems.append(f"{path}:{no}: malformed link ({dest}): a path with blanks, or not a path")
        m = REFDEF.match(line)
        if m:
            targets.append(m.group(1))
        for t in targets:
            if re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I):  # http:, https:, mailto:, …
                continue
            file_part, _, anchor = t.partition("#")
            target = os.path.normpath(os.path.join(base, file_part)) if file_part else path
            if not os.path.exists(target):
                problems.append(f"{path}:{no}: link to {t}: {target} does not exist")
                continue
            if anchor:
                if not target.endswith(".md") or os.path.isdir(target):
                    problems.append(f"{path}:{no}: link to {t}: an anchor into a file that is not Markdown")
                elif anchor not in anchors_of(target):
                    problems.append(f"{path}:{no}: link to {t}: no heading or anchor #{anchor} in {target}")
    return problems


# ---- the drivers and the machine ------------------------------------------------------------------------
# The drivers the examples show, in the order they show them (devices 0, 1, 2), by platform name.
DRIVERS = (("pocl", "Portable Computing Language"), ("rusticl", "rusticl"), ("intel", "Intel(R) OpenCL"))
MACHINE_FILE = os.path.join("docs", "examples-machine.json")


def devices_of(cli, env):
    """`reprocl devices --json --no-selftest` under env: its list of devices ([] when it fails)."""
    try:
        r = subprocess.run([cli, "devices", "--json", "--no-selftest"], env=env, capture_output=True, text=True,
                           timeout=120, check=False)
        return json.loads(r.stdout)["devices"]
    except (subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        return []


def ordered_vendors(cli, env, tmp):
    """An OCL_ICD_VENDORS directory with the ICD files of DRIVERS only, which the loader reads in DRIVERS'
    order. ocl-icd loads the .icd files of its directory in readdir() order (a hash order on ext4, so one
    machine's order says nothing of another's), so the files are written under names and in orders until
    listing the directory gives DRIVERS' order. Returns (directory or None, a message)."""
    vend = env.get("OCL_ICD_VENDORS") or env.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors"
    files = sorted(os.path.join(vend, f) for f in os.listdir(vend) if f.endswith(".icd")) \
        if os.path.isdir(vend) else [vend]
    found, seen = {}, []
    for f in files:
        for d in devices_of(cli, dict(env, OCL_ICD_VENDORS=os.path.abspath(f), RUSTICL_ENABLE="llvmpipe")):
            seen.append("%s: %s (%s)" % (d.get("platform"), d.get("device"), f))
            for key, plat in DRIVERS:
                if d.get("platform") == plat:
                    found.setdefault(key, f)
    missing = [plat for key, plat in DRIVERS if key not in found]
    if missing:
        return None, "the examples need the drivers %s; missing %s; found: %s" % (
            ", ".join(p for _, p in DRIVERS), ", ".join(missing), "; ".join(seen) or "no device")
    texts = []
    for key, _ in DRIVERS:
        with open(found[key], encoding="utf-8") as fh:
            texts.append(fh.read())
    for attempt in range(200):
        d = os.path.join(tmp, "vendors-%d" % attempt)
        os.mkdir(d)
        names = ["%d-%s%s.icd" % (n, key, "-%d" % attempt if attempt > 1 else "") for n, (key, _) in enumerate(DRIVERS)]
        for n in (range(len(names)) if attempt % 2 == 0 else reversed(range(len(names)))):
            with open(os.path.join(d, names[n]), "w", encoding="utf-8") as fh:
                fh.write(texts[n])
        if [x for x in os.listdir(d) if x.endswith(".icd")] == names:
            return d, ""
    return None, "could not write an ICD directory that lists in the drivers' order"


def machine_of(cli, env):
    """The identity of this machine's drivers, as MACHINE_FILE records it; None unless exactly DRIVERS show."""
    devs = devices_of(cli, dict(env, RUSTICL_ENABLE="llvmpipe"))
    if [d.get("platform") for d in devs] != [plat for _, plat in DRIVERS]:
        return None
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            cpu = next((x.split(":", 1)[1].strip() for x in fh if x.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": cpu, "devices": {key: {"platform": d["platform"], "device": d["device"]}
                                    for (key, _), d in zip(DRIVERS, devs)}}


def restyler(recorded, current):
    """For --update on another machine: a recorded device name (whole or cut short) becomes this machine's,
    cut to the same width, so lines that still match show this machine's names."""
    new = {recorded[k]["device"]: current[k]["device"] for k in current if k in recorded}

    def restyle(label, text):
        if label not in new:
            return text
        if len(text) == len(label):
            return new[label]
        return new[label][:len(text)].ljust(len(text))
    return restyle


# ---- main -------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="Markdown files (default: README.md docs/*.md)")
    ap.add_argument("--cli", default="build/reprocl", help="the reprocl binary (default build/reprocl)")
    ap.add_argument("--update", action="store_true", help="rewrite the shown output in place")
    ap.add_argument("--links-only", action="store_true", help="check links only; run nothing")
    ap.add_argument("--no-links", action="store_true", help="do not check links")
    ap.add_argument("--list", action="store_true", help="list the marked examples and exit")
    ap.add_argument("--only", action="append", default=[], metavar="FILE[:LINE]",
                    help="run only the examples of FILE (or the one whose block starts at or contains LINE)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per example block (default 300)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # progress shows as it comes, also through a pipe

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    files = args.files or ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir("docs") if f.endswith(".md"))
    for f in files:
        if not os.path.isfile(f):
            print(f"doc_examples.py: {f}: no such file", file=sys.stderr)
            return 2
    for o in args.only:
        of, _, ol = o.partition(":")
        if not any(os.path.normpath(of) == os.path.normpath(f) for f in files) or not re.fullmatch(r"\d*", ol):
            print(f"doc_examples.py: --only {o}: not FILE[:LINE] of a checked file", file=sys.stderr)
            return 2

    failures = 0
    docs = {}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        docs[f] = (text, text.split("\n"))
    if not args.no_links and not args.list:
        for f in files:
            for p in check_links(f, docs[f][1]):
                print(p)
                failures += 1
        if args.links_only:
            print(f"links: {failures} problem(s) in {len(files)} file(s)")
            return 1 if failures else 0

    selected = {}
    for f in files:
        examples, errors = parse(f, docs[f][1])
        for e in errors:
            print(e)
            failures += 1
        if args.only:
            keep = []
            for ex in examples:
                for o in args.only:
                    of, _, ol = o.partition(":")
                    if os.path.normpath(of) != os.path.normpath(f):
                        continue
                    last = ex.commands[-1].out_start + len(ex.commands[-1].out) if ex.commands else ex.line
                    if not ol or ex.line <= int(ol) <= last + 1:
                        keep.append(ex)
                        break
            examples = keep
        selected[f] = examples
    if args.list:
        for f, exs in selected.items():
            for ex in exs:
                for c in ex.commands:
                    print(f"{f}:{c.line}: $ {c.text.splitlines()[0]}")
        return 0

    cli = os.path.abspath(args.cli)
    if not (os.path.isfile(cli) and os.access(cli, os.X_OK)):
        print(f"doc_examples.py: {args.cli}: not an executable reprocl (build it, or pass --cli)", file=sys.stderr)
        return 3
    tmp = tempfile.mkdtemp(prefix="doc-examples-")
    try:
        os.mkdir(os.path.join(tmp, "bin"))
        os.symlink(cli, os.path.join(tmp, "bin", "reprocl"))
        env = dict(os.environ)
        env["PATH"] = os.path.join(tmp, "bin") + os.pathsep + env.get("PATH", "")
        env.setdefault("REPROCL_TUNING", "off")
        env["REPROCL_CACHE_DIR"] = os.path.join(tmp, "cache")  # no tuned choice from earlier runs
        env.pop("RUSTICL_ENABLE", None)  # an example that wants Rusticl says so on its command line
        env.setdefault("LC_ALL", "C.UTF-8")
        vendors, why = ordered_vendors(cli, env, tmp)
        if not vendors:
            print(f"doc_examples.py: {why}", file=sys.stderr)
            return 4
        env["OCL_ICD_VENDORS"] = vendors  # only the three drivers, in the docs' order
        env["OCL_ICD_PLATFORM_SORT"] = "none"  # ocl-icd: keep the directory's order
        env.pop("OPENCL_VENDOR_PATH", None)
        current = machine_of(cli, env)
        if not current:
            print(f"doc_examples.py: the drivers do not show as {', '.join(p for _, p in DRIVERS)} in this order "
                  f"with OCL_ICD_VENDORS={vendors}", file=sys.stderr)
            return 4
        recorded = None
        if os.path.isfile(MACHINE_FILE):
            with open(MACHINE_FILE, encoding="utf-8") as fh:
                recorded = json.load(fh)
        global IDENTITY
        IDENTITY = Identity([m["devices"] for m in (recorded, current) if m])
        mask.cache_clear()
        restyle = None
        if args.update and (not recorded or recorded["devices"] != current["devices"]):
            if recorded and (args.only or args.files):
                print(f"doc_examples.py: the docs show the devices of {MACHINE_FILE}, not this machine's: "
                      "--update every file at once (no --only, no FILES) to move them here", file=sys.stderr)
                return 2
            if recorded:
                moved = restyler(recorded["devices"], current["devices"])
                restyle = functools.partial(Identity([recorded["devices"]]), restyle=moved)
            with open(MACHINE_FILE, "w", encoding="utf-8") as fh:
                json.dump(dict(current, note="the machine whose drivers printed the marked examples' output "
                                             "(scripts/doc_examples.py --update writes it)"),
                          fh, indent=2, ensure_ascii=False)
                fh.write("\n")
            print(f"wrote {MACHINE_FILE}: {current['cpu']}")
        total = 0
        for f, examples in selected.items():
            if not examples:
                continue
            work = os.path.join(tmp, "work-" + re.sub(r"\W", "_", f))
            os.mkdir(work)
            for d in LINKED_DIRS:
                os.symlink(os.path.join(root, d), os.path.join(work, d))
            edits = []  # (start, end, new lines) in the file's line list
            for ex in examples:
                t0 = time.monotonic()
                results = run_example(ex, work, env, args.timeout)
                dt = time.monotonic() - t0
                if results is None:
                    print(f"{f}:{ex.line}: FAIL: timed out after {args.timeout} s")
                    failures += 1
                    continue
                status_bad = mismatch = False
                for k, (c, (status, real)) in enumerate(zip(ex.commands, results)):
                    # blank lines closing a command's output separate it from the next command
                    shown = c.out[:]
                    while shown and not shown[-1].strip():
                        shown.pop()
                    gap = c.out[len(shown):]
                    while real and not real[-1].strip():
                        real.pop()
                    cost, updated = align(shown, real, restyle)
                    if not cost and updated != shown:  # only device names moved to this machine's
                        edits.append((c.out_start, c.out_start + len(shown), list(updated)))
                        print(f"{f}:{c.line}: names moved to this machine's: $ {c.text.splitlines()[0]}")
                    updated += gap
                    first = c.text.splitlines()[0]
                    if status != 0 and not shows_status(ex.commands, k):
                        status_bad = True
                        print(f"{f}:{c.line}: FAIL: $ {first}: exit status {status} (the block does not show it)")
                        if not cost:
                            for r in real[-15:]:
                                print("  | " + r)
                    if not cost:
                        continue
                    mismatch = True
                    if args.update:
                        edits.append((c.out_start, c.out_start + len(c.out), updated))
                        print(f"{f}:{c.line}: updated: $ {first}")
                        continue
                    print(f"{f}:{c.line}: FAIL: $ {first}")
                    diff = difflib.unified_diff(shown, updated, "shown", "real", lineterm="", n=2)
                    for d in list(diff)[2:]:
                        m = re.match(r"^@@ -(\d+)(,\d+)? ", d)
                        if m:  # hunk headers name the file's line, not the block's
                            d = "@@ %s:%d @@" % (f, c.out_start + int(m.group(1)))
                        print("  " + d)
                bad = status_bad or (mismatch and not args.update)
                failures += bad
                word = "FAIL" if bad else ("upd " if mismatch else "ok  ")
                print(f"{word} {f}:{ex.line} ({len(ex.commands)} command(s), {dt:.1f} s)")
                total += dt
            if edits:
                lines = docs[f][1]
                for start, end, new in sorted(edits, reverse=True):
                    lines[start:end] = new
                with open(f, "w", encoding="utf-8") as fh:
                    fh.write("\n".join(lines))
        n = sum(len(e) for e in selected.values())
        print(f"{n} example(s) in {sum(1 for e in selected.values() if e)} file(s) ran in {total:.1f} s; "
              f"{failures} problem(s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
