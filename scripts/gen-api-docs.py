#!/usr/bin/env python3
"""Render docs/api-reference.md from the doc comments of include/tegragpu.h.

usage: scripts/gen-api-docs.py [--check] [--header PATH] [--out PATH]

Writes the reference (default docs/api-reference.md) from the header (default
include/tegragpu.h): the header's opening comment (conventions), a table of contents, then
constants, enums (with their values), opaque handles, structs (with their fields), other types,
and functions (signature and comment), each in header order. The output depends only on the
header, so it can be checked for staleness: --check compares instead of writing and exits 1 when
the file differs (tests/api_docs.rs runs it). Regenerate after every header change
(scripts/gen-header.sh): python3 scripts/gen-api-docs.py

Python 3 standard library only.
"""

import difflib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = "include/tegragpu.h"
OUT = "docs/api-reference.md"
REGEN = "python3 scripts/gen-api-docs.py"

SECTIONS = [
    ("constant", "Constants", "`#define` values."),
    ("enum", "Enums", "C enums; the values are stable."),
    ("handle", "Handles", "Opaque handle types: only pointers to them exist."),
    ("struct", "Structs", "Structs passed in or out; each starts with `struct_size`."),
    ("alias", "Other types", ""),
    ("function", "Functions", ""),
]


class Item:
    def __init__(self, kind, name, decl, doc, line):
        self.kind = kind
        self.name = name
        self.decl = decl          # C declaration shown in a code block
        self.doc = doc            # list of lines
        self.line = line
        self.members = []         # (name, type or value, doc lines) for enums and structs


class ParseError(Exception):
    pass


def comment_lines(text):
    """The lines of a /** ... */ or /* ... */ comment, without the comment markers."""
    text = re.sub(r"^/\*+", "", text.strip())
    text = re.sub(r"\*+/$", "", text)
    out = []
    for line in text.split("\n"):
        line = re.sub(r"^\s*\* ?", "", line, count=1) if line.strip().startswith("*") else line
        out.append(line.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    # Common indentation (lines that were not " * "-prefixed).
    return out


class Scanner:
    """Splits the header into doc comments, preprocessor lines and C statements."""

    def __init__(self, text):
        self.lines = text.split("\n")
        self.i = 0

    def at_end(self):
        return self.i >= len(self.lines)

    def peek(self):
        return self.lines[self.i]

    def take_comment(self):
        """A /* ... */ comment starting at the current line, or a run of /// lines."""
        start = self.i
        line = self.peek().strip()
        if line.startswith("///"):
            out = []
            while not self.at_end() and self.peek().strip().startswith("///"):
                out.append(re.sub(r"^\s*/// ?", "", self.peek()).rstrip())
                self.i += 1
            return start, out, True
        doc = line.startswith("/**") and not line.startswith("/**/")
        buf = []
        while True:
            if self.at_end():
                raise ParseError("line %d: unterminated comment" % (start + 1))
            buf.append(self.peek())
            self.i += 1
            if "*/" in buf[-1]:
                break
        return start, comment_lines("\n".join(buf)), doc

    def take_statement(self):
        """Lines up to the `;` that ends a C statement at brace depth 0 (preprocessor lines
        inside are dropped, comments kept for member docs)."""
        start = self.i
        buf = []
        depth = 0
        in_comment = False
        while not self.at_end():
            line = self.peek()
            self.i += 1
            s = line.strip()
            if not in_comment and s.startswith("#"):
                continue
            buf.append(line)
            code = line
            if in_comment:
                if "*/" not in code:
                    continue
                code = code.split("*/", 1)[1]
                in_comment = False
            code = re.sub(r"/\*.*?\*/", "", code)
            code = re.sub(r"//.*", "", code)
            if "/*" in code:
                code = code.split("/*", 1)[0]
                in_comment = True
            depth += code.count("{") - code.count("}")
            if depth == 0 and code.rstrip().endswith(";"):
                return start, buf
        raise ParseError("line %d: declaration does not end" % (start + 1))


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def members(body_lines, kind):
    """Members of an enum or struct body: (name, value-or-type, doc lines)."""
    out = []
    doc = []
    i = 0
    pending = ""
    while i < len(body_lines):
        line = body_lines[i]
        s = line.strip()
        if s.startswith("/*") or s.startswith("///"):
            sc = Scanner("\n".join(body_lines[i:]))
            _, lines, _ = sc.take_comment()
            doc = lines
            i += sc.i
            continue
        i += 1
        code = strip_comments(line).strip()
        if not code:
            continue
        pending = (pending + " " + code).strip()
        if kind == "enum":
            if not pending.endswith(",") and i < len(body_lines):
                # last variant may lack a comma
                nxt = [x for x in body_lines[i:] if strip_comments(x).strip()]
                if nxt:
                    continue
            m = re.match(r"^(\w+)\s*(?:=\s*(.+?))?\s*,?$", pending)
            if not m:
                raise ParseError("cannot parse enum variant %r" % pending)
            out.append((m.group(1), (m.group(2) or "").strip(), doc))
        else:
            if not pending.endswith(";"):
                continue
            m = re.match(r"^(.*?)\b(\w+)\s*((?:\[[^\]]*\])*)\s*;$", pending)
            if not m:
                raise ParseError("cannot parse struct field %r" % pending)
            ctype = re.sub(r"\s+", " ", m.group(1)).strip() + m.group(3)
            ctype = re.sub(r"\s+\*", " *", ctype)
            out.append((m.group(2), ctype, doc))
        pending = ""
        doc = []
    if pending:
        raise ParseError("unterminated member %r" % pending)
    return out


def parse(text):
    sc = Scanner(text)
    intro = None
    items = []
    doc = None
    seen = set()

    def add(item):
        if item.name in seen:
            return
        seen.add(item.name)
        items.append(item)

    while not sc.at_end():
        line = sc.peek()
        s = line.strip()
        if not s:
            sc.i += 1
            continue
        if s.startswith("/*") or s.startswith("///"):
            start, lines, is_doc = sc.take_comment()
            if intro is None and not items and not is_doc:
                intro = lines
            elif is_doc:
                doc = (start, lines)
            continue
        if s.startswith("//"):
            sc.i += 1
            continue
        if s.startswith("#"):
            start = sc.i
            full = line
            sc.i += 1
            while full.rstrip().endswith("\\") and not sc.at_end():
                full = full.rstrip()[:-1] + " " + sc.peek().strip()
                sc.i += 1
            m = re.match(r"^\s*#\s*define\s+(\w+)(\s+.*)?$", full)
            if m and m.group(2) and m.group(2).strip():
                add(Item("constant", m.group(1), "#define %s %s" % (m.group(1),
                         m.group(2).strip()), doc[1] if doc else [], start + 1))
            doc = None
            continue
        if re.match(r'^extern\s+"C"\s*\{', s) or s.startswith("}"):
            sc.i += 1
            doc = None
            continue
        start, buf = sc.take_statement()
        raw = "\n".join(buf)
        code = re.sub(r"\s+", " ", strip_comments(raw)).strip()
        the_doc = doc[1] if doc else []
        doc = None
        m = re.match(r"^typedef (struct|union|enum) (\w+) (\w+);$", code)
        if m and m.group(2) == m.group(3):
            add(Item("handle", m.group(3), code, the_doc, start + 1))
            continue
        m = re.match(r"^(typedef )?(struct|union|enum) (\w+)?\s*(?::[^{]*)?\{(.*)\}\s*(\w+)?\s*;$",
                     code)
        if m:
            kind = "enum" if m.group(2) == "enum" else "struct"
            name = m.group(5) or m.group(3)
            if not name:
                raise ParseError("line %d: anonymous %s" % (start + 1, m.group(2)))
            lines = raw.split("\n")
            first = next(k for k, x in enumerate(lines) if "{" in strip_comments(x))
            last = max(k for k, x in enumerate(lines) if "}" in strip_comments(x))
            item = Item(kind, name, None, the_doc, start + 1)
            item.members = members(lines[first + 1:last], kind)
            item.decl = "\n".join(x for x in lines if not x.strip().startswith(("/*", "*", "///"))
                                  ) if kind == "struct" else None
            add(item)
            continue
        if code.startswith("typedef "):
            m = re.search(r"\(\s*\*\s*(\w+)\s*\)", code) or re.search(r"(\w+)\s*(\[[^\]]*\])?;$",
                                                                     code)
            if not m:
                raise ParseError("line %d: cannot name typedef %r" % (start + 1, code))
            decl = "\n".join(x for x in buf if x.strip())
            add(Item("alias", m.group(1), decl.strip(), the_doc, start + 1))
            continue
        m = re.match(r"^[^(]*?\b(\w+)\s*\(", code)
        if m and code.endswith(");"):
            decl = "\n".join(x for x in buf if x.strip())
            add(Item("function", m.group(1), decl.strip(), the_doc, start + 1))
            continue
        raise ParseError("line %d: unrecognised declaration %r" % (start + 1, code))
    return intro or [], items


def anchor(name):
    return name.lower()


def linkify(text, names, self_name):
    """`tg_foo()` / `tg_foo` / `TG_FOO` of a documented item (or an enum value) -> a link to
    the item (the enum). `names` maps each name to the item it belongs to."""
    def repl(m):
        name = m.group(1)
        target = names.get(name)
        if target and target != self_name:
            return "[`%s%s`](#%s)" % (name, m.group(2) or "", anchor(target))
        return m.group(0)
    # Not inside an existing link: [`...`](...)
    return re.sub(r"(?<!\[)`(\w+)(\(\))?`(?!\])", repl, text)


def links(items):
    return ", ".join("[`%s`](#%s)" % (it.name, anchor(it.name)) for it in items)


def family(fn, handles):
    """The handle a function belongs to: its name's prefix (tg_queue_create -> tg_queue), else
    the handle type of its first parameter (tg_launch -> tg_queue), else None (library)."""
    for h in sorted(handles, key=len, reverse=True):
        if fn.name.startswith(h + "_"):
            return h
    params = fn.decl.split("(", 1)[1] if "(" in fn.decl else ""
    first = params.split(",", 1)[0]
    for h in sorted(handles, key=len, reverse=True):
        if re.search(r"\b%s\b" % re.escape(h), first):
            return h
    return None


def doc_markdown(lines, names, self_name):
    out = []
    for line in lines:
        m = re.match(r"^#+\s+(.*)$", line)
        if m:  # rustdoc headings (`# Safety`) become bold paragraph labels
            out.append("**%s:**" % m.group(1))
        else:
            out.append(linkify(line, names, self_name))
    return out


def cell(lines, names, self_name):
    text = " ".join(x.strip() for x in lines if x.strip())
    return linkify(text, names, self_name).replace("|", "\\|")


def render(header_text, header_name=HEADER):
    intro, items = parse(header_text)
    names = {it.name: it.name for it in items}
    for it in items:
        if it.kind == "enum":
            for name, _, _ in it.members:
                names.setdefault(name, it.name)
    out = []
    w = out.append
    w("# API reference")
    w("")
    w("<!-- GENERATED by scripts/gen-api-docs.py from %s: do not edit. -->" % header_name)
    w("")
    w("Rendered from the doc comments of [`%s`](../%s) by `scripts/gen-api-docs.py`; "
      "`tests/api_docs.rs` fails when this page is stale (regenerate: `%s`). The contract and "
      "design behind the API: [api.md](api.md)." % (header_name, header_name, REGEN))
    w("")
    w("## Contents")
    w("")
    if intro:
        w("- [Conventions](#conventions)")
    for kind, title, _ in SECTIONS:
        group = [it for it in items if it.kind == kind]
        if not group:
            continue
        heading = "[%s](#%s)" % (title, anchor(title).replace(" ", "-"))
        if kind != "function":
            w("- %s: %s" % (heading, links(group)))
            continue
        w("- %s" % heading)
        handles = [it.name for it in items if it.kind == "handle"]
        families = {}
        for it in group:
            families.setdefault(family(it, handles), []).append(it)
        for fam, members_ in families.items():
            w("  - %s: %s" % ("`%s`" % fam if fam else "library", links(members_)))
    w("")
    if intro:
        w("## Conventions")
        w("")
        w("From the header's opening comment:")
        w("")
        out.extend(doc_markdown(intro, names, None))
        w("")
    for kind, title, blurb in SECTIONS:
        group = [it for it in items if it.kind == kind]
        if not group:
            continue
        w("## %s" % title)
        w("")
        if blurb:
            w(blurb)
            w("")
        for it in group:
            w("### `%s`" % it.name)
            w("")
            if it.decl and kind != "struct":
                w("```c")
                w(it.decl)
                w("```")
                w("")
            if it.doc:
                out.extend(doc_markdown(it.doc, names, it.name))
                w("")
            if kind == "enum":
                w("| name | value | meaning |")
                w("|---|---|---|")
                for name, value, doc in it.members:
                    w("| `%s` | %s | %s |" % (name, value, cell(doc, names, it.name)))
                w("")
            elif kind == "struct":
                w("| field | type | meaning |")
                w("|---|---|---|")
                for name, ctype, doc in it.members:
                    w("| `%s` | `%s` | %s |" % (name, ctype, cell(doc, names, it.name)))
                w("")
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def main(argv):
    check = False
    header = os.path.join(ROOT, HEADER)
    dest = os.path.join(ROOT, OUT)
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--check":
            check = True
        elif a == "--header":
            header = args.pop(0)
        elif a == "--out":
            dest = args.pop(0)
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            print("gen-api-docs: unknown argument %r" % a, file=sys.stderr)
            return 2
    with open(header, encoding="utf-8") as f:
        text = f.read()
    try:
        fresh = render(text)
    except ParseError as e:
        print("gen-api-docs: %s: %s" % (header, e), file=sys.stderr)
        return 1
    rel = os.path.relpath(dest, ROOT)
    if check:
        try:
            with open(dest, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = ""
        if current == fresh:
            print("gen-api-docs: %s is up to date" % rel)
            return 0
        diff = list(difflib.unified_diff(current.split("\n"), fresh.split("\n"),
                                         "%s (committed)" % rel, "%s (from the header)" % rel,
                                         lineterm="", n=1))
        print("gen-api-docs: %s is stale; regenerate it with `%s`" % (rel, REGEN))
        print("\n".join(diff[:60]) + ("\n..." if len(diff) > 60 else ""))
        return 1
    with open(dest, "w", encoding="utf-8") as f:
        f.write(fresh)
    print("gen-api-docs: wrote %s" % rel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
