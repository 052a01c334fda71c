#!/usr/bin/env python3
"""The import circles between the top-level modules of one crate.

Usage: scripts/module-circles.py [--tests] CRATE_SRC_DIR   (e.g. crates/dream-engine/src)

A top-level module is a file `src/x.rs` or a folder `src/x/`; `lib.rs` is the root.
An edge A -> B is a path `crate::B...` (or a `super::` that climbs to the crate root
and names B) written in A, in a `use` or inline. A name that `lib.rs` re-exports
(`pub use b::{Name}`) counts as an edge to `b`. Code under `#[cfg(test)]` (an
inline `mod` block or a file it declares) is left out unless `--tests` is given.
Prints every edge, then each circle (a strongly connected set of two or more
modules) with the names that tie it, then the count of circles.
"""

import re
import sys
from collections import defaultdict
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    for line in text.splitlines():
        in_str = False
        cut = len(line)
        i = 0
        while i < len(line) - 1:
            c = line[i]
            if c == "\\" and in_str:
                i += 2
                continue
            if c == '"':
                in_str = not in_str
            elif not in_str and line[i : i + 2] == "//":
                cut = i
                break
            i += 1
        out.append(line[:cut])
    return "\n".join(out)


def drop_test_blocks(text):
    """Removes `#[cfg(test)] mod name { ... }` blocks; returns text and names of
    `#[cfg(test)] mod name;` declarations."""
    test_files = set(re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(" + IDENT + r")\s*;", text))
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+" + IDENT + r"\s*\{", text)
        if not m:
            return text, test_files
        depth = 0
        for j in range(m.end() - 1, len(text)):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    break
        text = text[: m.start()] + text[j + 1 :]


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"\bas\b.*$", "", tree)]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for c in inner:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    if cur:
        parts.append(cur)
    out = []
    for p in parts:
        for e in expand_use(p):
            out.append(prefix + e if e != "self" else prefix.rstrip(":"))
    return out


def module_path(src, file):
    rel = file.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return parts


def main():
    args = sys.argv[1:]
    with_tests = "--tests" in args
    args = [a for a in args if a != "--tests"]
    src = Path(args[0])
    files = sorted(src.rglob("*.rs"))
    texts, test_files = {}, set()
    for f in files:
        text = strip_comments(f.read_text())
        if not with_tests:
            text, tests = drop_test_blocks(text)
            base = module_path(src, f)
            for t in tests:
                test_files.add(tuple(base + [t]))
        texts[f] = text
    modules = {module_path(src, f)[0] for f in files if module_path(src, f)}
    lib = texts[src / "lib.rs"]
    reexport = {}
    for m in re.finditer(r"pub\s+use\s+([^;]+);", lib):
        for path in expand_use(m.group(1)):
            segs = path.split("::")
            if segs[0] in modules:
                reexport[segs[-1]] = segs[0]

    edges = defaultdict(set)  # (from, to) -> names
    for f, text in texts.items():
        here = module_path(src, f)
        if not here or (not with_tests and any(tuple(here[: i + 1]) in test_files for i in range(len(here)))):
            continue
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            paths += expand_use(m.group(1))
        paths += re.findall(r"(?<![:\w$])((?:crate|super)(?:::" + IDENT + r")+)", text)
        for path in paths:
            segs = path.split("::")
            if segs[0] == "crate":
                rest = segs[1:]
            elif segs[0] == "super":
                ups = 0
                while ups < len(segs) and segs[ups] == "super":
                    ups += 1
                base = here[: len(here) - ups]
                if base:
                    continue  # stays inside this top-level module
                rest = segs[ups:]
            else:
                continue
            if not rest or rest[0] in ("self", "*"):
                continue
            target = rest[0] if rest[0] in modules else reexport.get(rest[0])
            if target and target != here[0]:
                edges[(here[0], target)].add(rest[-1] if rest[0] in modules else rest[0])

    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    for (a, b), names in sorted(edges.items()):
        print(f"edge {a} -> {b}: {', '.join(sorted(names))}")

    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(modules):
        if v not in index:
            visit(v)
    for comp in sccs:
        print(f"circle: {', '.join(comp)}")
        for (a, b), names in sorted(edges.items()):
            if a in comp and b in comp:
                print(f"  {a} -> {b}: {', '.join(sorted(names))}")
    print(f"modules {len(modules)}, edges {len(edges)}, circles {len(sccs)}")


if __name__ == "__main__":
    main()
