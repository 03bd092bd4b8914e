#!/usr/bin/env python3
"""Keep README.md and docs/*.md product documentation: few commit hashes, nothing outside the repo.

usage: scripts/docs-check.py [--max-hashes N] [--root DIR] [--list] [FILE.md ...]

Checks README.md and docs/*.md (docs/api-reference.md, generated from the header by
scripts/gen-api-docs.py, aside), or the files named:

  1. commit hashes: at most --max-hashes (default 13) distinct ones in all the files together.
     A results table names the commit it was measured at in one line; history belongs in git and
     CHANGELOG.md. Counted as a hash: a 7-40 character hexadecimal word with at least one letter
     and one digit (`4afa3f9`, 6ecfb593d), a backtick-quoted 7-12 character hexadecimal word
     (`0026256`), and the word after "commit", "commits" or "at" when it is 7-40 hexadecimal
     characters. Hexadecimal numbers written with 0x are never hashes.
  2. references to material outside the repository, which users do not have: the steering
     repository, seed projects ("the seeds", "seed board"; docs/fuzzing.md, whose seeds are the
     fuzzer's inputs in fuzz/seeds/, aside), paths into shared/ or ../shared, issue numbers
     ("issue #15", "#15", "issue 32", "the performance issue"), stop or session numbers and talk
     ("stop 3", "session").
  3. python/LICENSE-MIT and python/LICENSE-APACHE (shipped in the Python package) are copies of
     the repository root's LICENSE-MIT and LICENSE-APACHE.

Prints every finding as FILE:LINE: what, and a summary line "docs-check: OK (...)" or
"docs-check: FAILED (...)"; exits 1 on any finding. --list prints every hash found with where it
is, and exits 0. scripts/docs-check.py runs in CI (.ci/run).
"""

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_HASHES = 13
GENERATED = {"docs/api-reference.md"}

HEX = r"[0-9a-f]"
# A bare hexadecimal word with a letter and a digit (the way hashes are usually written).
BARE_HASH = re.compile(r"(?<![0-9A-Za-z_])(%s{7,40})(?![0-9A-Za-z_])" % HEX)
# `0026256`: a backtick-quoted hexadecimal word, digits only included.
QUOTED_HASH = re.compile(r"`(%s{7,12})`" % HEX)
# "commit 0026256", "at `0026256`", "commits 1234567 and ...".
NAMED_HASH = re.compile(r"\b(?:commits?|at)\s+`?(%s{7,40})\b" % HEX, re.I)

# (name, regex, files the rule does not apply to)
OUTSIDE = [
    ("the steering repository", re.compile(r"\bsteering\b", re.I), ()),
    ("a path into shared/ (outside the repository)",
     re.compile(r"(?<![\w/.-])(?:\.\./)+shared\b|(?<![\w/.-])shared/(?=[\w.-]+/|[\w-]+\.\w+)"), ()),
    ("seed projects", re.compile(r"\bthe\s+seeds\b|\bseeds'|\bseed\s+(?:board|project|repo)s?\b", re.I),
     ("docs/fuzzing.md",)),
    ("an issue number", re.compile(r"\bissues?\s*#?\d+|(?<![\w&/])#\d+\b", re.I), ()),
    ("an issue (users have no issue tracker of this project)",
     re.compile(r"\b(?:the|this|that|an|open|performance|GitHub)\s+issues?(?:'s)?\b", re.I), ()),
    ("a stop or session of the project's work",
     re.compile(r"\bstops?\s+#?\d+\b|\bsessions?\b", re.I), ()),
]

LICENSE_COPIES = [("LICENSE-MIT", "python/LICENSE-MIT"), ("LICENSE-APACHE", "python/LICENSE-APACHE")]


def default_files(root):
    files = [os.path.join(root, "README.md")]
    files += sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    return [f for f in files if rel(root, f) not in GENERATED and os.path.isfile(f)]


def rel(root, path):
    r = os.path.relpath(os.path.abspath(path), root)
    return path if r.startswith("..") else r


def hashes_in(text):
    """(offset, hash) for every commit hash in text."""
    found = []
    for m in BARE_HASH.finditer(text):
        tok = m.group(1)
        if re.search(r"[a-f]", tok) and re.search(r"[0-9]", tok):
            found.append((m.start(1), tok))
    for rx in (QUOTED_HASH, NAMED_HASH):
        for m in rx.finditer(text):
            found.append((m.start(1), m.group(1).lower()))
    return found


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def main(argv):
    root, max_hashes, listing, files = ROOT, MAX_HASHES, False, []
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--max-hashes":
            max_hashes = int(args.pop(0))
        elif a.startswith("--max-hashes="):
            max_hashes = int(a.split("=", 1)[1])
        elif a == "--root":
            root = os.path.abspath(args.pop(0))
        elif a == "--list":
            listing = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("-"):
            print("docs-check: unknown argument %r" % a, file=sys.stderr)
            return 2
        else:
            files.append(a)
    files = files or default_files(root)

    where = {}      # hash -> [file:line, ...]
    problems = []
    for path in files:
        name = rel(root, path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        # The whole text at once: a phrase may be broken across lines.
        for off, h in sorted(set(hashes_in(text))):
            loc = "%s:%d" % (name, line_of(text, off))
            if loc not in where.setdefault(h, []):
                where[h].append(loc)
        for what, rx, exempt in OUTSIDE:
            if name in exempt:
                continue
            for m in rx.finditer(text):
                problems.append("%s:%d: %s: %r" % (name, line_of(text, m.start()), what,
                                                   " ".join(m.group(0).split())))

    if listing:
        for h in sorted(where, key=lambda h: where[h][0]):
            print("%-12s %s" % (h, ", ".join(where[h])))
        print("docs-check: %d distinct commit hashes in %d files" % (len(where), len(files)))
        return 0

    if len(where) > max_hashes:
        problems.append("%d distinct commit hashes in README.md and docs/ (at most %d): a results "
                        "table names its commit in one line; history belongs in git and "
                        "CHANGELOG.md. Every hash and where it is:" % (len(where), max_hashes))
        for h in sorted(where, key=lambda h: where[h][0]):
            for loc in where[h]:
                problems.append("%s: commit hash %s" % (loc, h))

    for orig, copy in LICENSE_COPIES:
        a, b = os.path.join(root, orig), os.path.join(root, copy)
        if not os.path.isfile(a):
            problems.append("%s: missing" % orig)
        elif not os.path.isfile(b):
            problems.append("%s: missing (a copy of %s, shipped in the Python package)" % (copy, orig))
        elif open(a, "rb").read() != open(b, "rb").read():
            problems.append("%s: differs from %s (copy it: cp %s %s)" % (copy, orig, orig, copy))

    for p in problems:
        print(p)
    summary = "%d files, %d distinct commit hashes (at most %d)" % (len(files), len(where), max_hashes)
    if problems:
        print("docs-check: FAILED (%s; %d findings)" % (summary, len(problems)))
        return 1
    print("docs-check: OK (%s, no references to outside material, license copies equal)" % summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
