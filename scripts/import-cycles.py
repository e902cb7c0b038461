#!/usr/bin/env python3
"""Lists the import circles between source files of each crate under crates/.

A file A depends on a file B when A names an item of B by a path (`use crate::…`,
`use super::…`, `self::…`, `use child::…`, or such a path inline in code, `child::f()`
included when `child` is a module declared in A). A path is followed through `pub use`
re-exports (renamed ones by their new name) to the file that defines the item, so a
crate's lib.rs or a folder's mod.rs that only re-exports is not a hop of its own.
`super::` and `self::` inside an inline `mod x { … }` are read from that module. `mod x;`
declarations are not dependencies, and code inside `#[cfg(test)]` modules, inline or in
files of their own (`#[cfg(test)] mod tests;`), is left out (a test may look at
anything). A circle is a strongly connected set of two or more files.

    scripts/import-cycles.py            # prints each circle; exit 1 if there is one
    scripts/import-cycles.py --edges    # also prints every edge, file by file

CI runs it: no circle may come back.
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

USE_RE = re.compile(r"\buse\s+([^;]+);", re.S)
PATH_RE = re.compile(r"\b((?:crate|super|self)(?:::\s*[A-Za-z_][A-Za-z0-9_]*)+)")
MOD_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;", re.M)


def strip_comments_and_strings(text):
    """Blanks comments, string and char literals (a small scanner, not a regex)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c in "rb" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) and re.match(r"b?r#*\"", text[i:]):
            m = re.match(r"b?r(#*)\"", text[i:])
            end = text.find('"' + m.group(1), i + m.end())
            out.append('""')
            i = n if end < 0 else end + 1 + len(m.group(1))
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:])
            out.append("' '")
            i += m.end()
        elif c == "'" and re.match(r"'\\u\{[0-9a-fA-F]+\}'", text[i:]):
            i += re.match(r"'\\u\{[0-9a-fA-F]+\}'", text[i:]).end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_test_modules(text):
    """Removes `#[cfg(test)] mod x { … }` blocks (brace-matched)."""
    out = []
    i = 0
    pat = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = pat.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i : m.start()])
        i = after_block(text, m.end())
    return "".join(out)


def after_block(text, j):
    """The index just past the `}` that closes the block whose `{` ends before `j`."""
    depth = 1
    while j < len(text) and depth:
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
        j += 1
    return j


def expand_use_tree(tree):
    """`a::{b, c::{d as e, f}}` → ['a::b', 'a::c::d@e', 'a::c::f']: a renamed import
    keeps its new name after `@` ([`split_alias`])."""
    tree = re.sub(r"\s+as\s+([A-Za-z_][A-Za-z0-9_]*)", r"@\1", tree)
    tree = re.sub(r"\s+", "", tree)

    def expand(s):
        brace = s.find("{")
        if brace < 0:
            return [s]
        prefix = s[:brace]
        depth = 0
        parts, cur = [], ""
        for ch in s[brace + 1 : s.rfind("}")]:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        out = []
        for p in parts:
            for e in expand(p):
                if e == "self" or e.startswith("self@"):
                    out.append(prefix.rstrip(":") + e[4:])
                else:
                    out.append(prefix + e)
        return out

    return expand(tree)


def split_alias(path):
    """'a::b@c' → ('a::b', 'c'); 'a::b' → ('a::b', 'b')."""
    path, _, alias = path.partition("@")
    return path, alias or path.split("::")[-1]


INLINE_MOD_RE = re.compile(r"(?<![\w:])(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")


def split_inline_modules(text, mod):
    """A file's text → {module path: its own text}: the body of each inline `mod x { … }`
    (test modules are gone already) belongs to module `mod + (x,)`, so that `super::` and
    `self::` inside it are read from there; the file keeps the rest."""
    out = {}
    outer = []
    i = 0
    while True:
        m = INLINE_MOD_RE.search(text, i)
        if not m:
            outer.append(text[i:])
            break
        outer.append(text[i : m.start()])
        j = after_block(text, m.end())
        out.update(split_inline_modules(text[m.end() : j - 1], mod + (m.group(1),)))
        i = j
    out[mod] = "".join(outer)
    return out


# A path in code that starts with a plain name (`stream::volume_slot(…)`): a dependency
# when the name is a child module of the module it is written in.
CHILD_PATH_RE = re.compile(r"(?<![\w:$])([a-z_][a-z0-9_]*(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")


TEST_MOD_DECL_RE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


class Crate:
    def __init__(self, src):
        self.src = src
        self.paths = {}  # file's module path tuple -> file path
        self.files = {}  # module path tuple (a file's, or an inline module's) -> file's tuple
        self.text = {}  # module path tuple -> its own text
        self.reexports = defaultdict(dict)  # module -> name -> full path (module, rest)
        for dirpath, _, names in os.walk(src):
            for n in names:
                if not n.endswith(".rs"):
                    continue
                full = os.path.join(dirpath, n)
                rel = os.path.relpath(full, src)[:-3].split(os.sep)
                if rel[-1] in ("lib", "main", "mod"):
                    rel = rel[:-1]
                self.paths[tuple(rel)] = full
        raw = {}
        for mod, path in self.paths.items():
            with open(path, encoding="utf-8") as f:
                raw[mod] = strip_comments_and_strings(f.read())
        # A file that is only a test module (`#[cfg(test)] mod tests;`) is left out, with
        # what is under it.
        tests = {mod + (m.group(1),) for mod, text in raw.items() for m in TEST_MOD_DECL_RE.finditer(text)}
        for mod in list(self.paths):
            if any(mod[: len(t)] == t for t in tests):
                del self.paths[mod]
        for mod in self.paths:
            for inner, text in split_inline_modules(strip_test_modules(raw[mod]), mod).items():
                self.files.setdefault(inner, mod)
                self.text[inner] = text
        for mod in self.paths:
            self.files[mod] = mod
        for mod, text in self.text.items():
            for m in USE_RE.finditer(text):
                start = text.rfind("\n", 0, m.start()) + 1
                if not re.match(r"\s*pub(\([^)]*\))?\s+use", text[start : m.end()]):
                    continue
                for p in expand_use_tree(m.group(1)):
                    path, alias = split_alias(p)
                    if alias == "*":
                        continue
                    self.reexports[mod][alias] = (mod, path.split("::"))

    def absolute(self, mod, segs):
        """Segments relative to `mod` → absolute segments, or None for another crate."""
        if segs[0] == "crate":
            return segs[1:]
        cur = list(mod)
        i = 0
        while i < len(segs) and segs[i] in ("self", "super"):
            if segs[i] == "super":
                if not cur:
                    return None
                cur.pop()
            i += 1
        if i == 0:
            # A plain `x::…`: a child module of this one, or another crate.
            if tuple(list(mod) + [segs[0]]) in self.files:
                return list(mod) + segs
            return None
        return cur + segs[i:]

    def resolve(self, abs_segs, depth=0):
        """Absolute segments → the file (module tuple) that defines the named item."""
        best = ()
        for k in range(len(abs_segs), -1, -1):
            if tuple(abs_segs[:k]) in self.files:
                best = tuple(abs_segs[:k])
                break
        rest = abs_segs[len(best) :]
        if rest and depth < 8 and rest[0] in self.reexports.get(best, {}):
            where, segs = self.reexports[best][rest[0]]
            target = self.absolute(where, segs)
            if target is not None:
                return self.resolve(target + rest[1:], depth + 1)
        return self.files.get(best, ())

    def edges(self):
        out = defaultdict(set)
        for mod, text in self.text.items():
            paths = []
            for m in USE_RE.finditer(text):
                paths.extend(split_alias(p)[0] for p in expand_use_tree(m.group(1)))
            for m in PATH_RE.finditer(text):
                paths.append(re.sub(r"\s+", "", m.group(1)))
            for m in CHILD_PATH_RE.finditer(text):
                paths.append(re.sub(r"\s+", "", m.group(1)))
            for p in paths:
                segs = [s for s in p.split("::") if s]
                if not segs or segs[-1] == "*" and len(segs) == 1:
                    continue
                if segs[-1] == "*":
                    segs = segs[:-1]
                target_abs = self.absolute(mod, segs)
                if target_abs is None:
                    continue
                # A plain `use self::…` of a re-export in this very file is no edge.
                target = self.resolve(target_abs)
                if target != self.files[mod]:
                    out[self.files[mod]].add(target)
        return out


def circles(edges, nodes):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    show_edges = "--edges" in sys.argv
    found = 0
    crates_dir = os.path.join(ROOT, "crates")
    for name in sorted(os.listdir(crates_dir)):
        src = os.path.join(crates_dir, name, "src")
        if not os.path.isdir(src):
            continue
        crate = Crate(src)
        edges = crate.edges()
        rel = lambda m: os.path.relpath(crate.paths[m], ROOT)
        if show_edges:
            for a in sorted(edges):
                for b in sorted(edges[a]):
                    print(f"{rel(a)} -> {rel(b)}")
        for comp in circles(edges, sorted(crate.paths)):
            found += 1
            comp_set = set(comp)
            print(f"circle in {name}: " + ", ".join(sorted(rel(m) for m in comp)))
            for a in sorted(comp):
                for b in sorted(edges[a] & comp_set):
                    print(f"    {rel(a)} -> {rel(b)}")
    if found:
        print(f"{found} import circle(s) between files")
        return 1
    print("no import circle between files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
