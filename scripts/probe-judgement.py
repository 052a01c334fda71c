#!/usr/bin/env python3
"""Asks a model served on an OpenAI-compatible endpoint the small-model pass's
one-sentence question (`LASTING_RULES` in crates/dream-engine/src/consolidate/llm.rs)
about development rows of the statements corpus, and prints how many durable
statements and non-memories it judges lasting: by its answer, and by the
probability it gives `true` (the server's `logprobs`) at several thresholds.
What the judgement can tell apart, measured apart from the pass.

    scripts/probe-judgement.py URL [--per-kind N] [--system FILE] [--out FILE]

URL: e.g. http://127.0.0.1:8081/v1 (scripts/local-llm-server.py). Rows: N
durable and N non-memory rows drawn (seed 7) from dev2..dev5, never a blind
half. `--system FILE` asks under another rule text instead (`{TAG}` as in the
source).
"""
import argparse
import json
import math
import random
import re
import urllib.request

ROOT = __file__.rsplit("/scripts/", 1)[0]
FIXTURES = f"{ROOT}/crates/dream-engine/tests/fixtures/statements/"
TAG = "k3v9q2"


def lasting_rules():
    source = open(f"{ROOT}/crates/dream-engine/src/consolidate/llm.rs", encoding="utf-8").read()
    body = re.search(r'pub const LASTING_RULES: &str = "\\\n(.*?)";', source, re.S).group(1)
    return body.replace("\\\n", "").replace('\\"', '"').replace("\\n", "\n")


def ask(url, system, text):
    body = {
        "model": "judge",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": f"<statement_{TAG}>\n{text}\n</statement_{TAG}>\nAnswer with the JSON object only.\n"},
        ],
        "max_tokens": 16,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "logprobs": True,
        "top_logprobs": 5,
    }
    request = urllib.request.Request(f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    choice = json.load(urllib.request.urlopen(request, timeout=600))["choices"][0]
    answer = choice["message"]["content"]
    p_true = None
    for token in (choice.get("logprobs") or {}).get("content") or []:
        if token["token"].strip() in ("true", "false"):
            odds = {t["token"].strip(): math.exp(t["logprob"]) for t in token["top_logprobs"]}
            yes, no = odds.get("true", 0.0), odds.get("false", 0.0)
            p_true = yes / (yes + no) if yes + no else None
            break
    return answer, p_true


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--per-kind", type=int, default=60)
    parser.add_argument("--system")
    parser.add_argument("--out")
    a = parser.parse_args()
    system = (open(a.system, encoding="utf-8").read() if a.system else lasting_rules()).replace("{TAG}", TAG)
    rows = []
    for name in ["dev2", "dev3", "dev4", "dev5"]:
        rows += [json.loads(l) for l in open(f"{FIXTURES}{name}.jsonl", encoding="utf-8") if l.strip()]
    draw = random.Random(7)
    durable = [r for r in rows if r["kind"] == "durable"]
    chatter = [r for r in rows if r["kind"] == "non_memory"]
    draw.shuffle(durable)
    draw.shuffle(chatter)
    judged = []
    for row in durable[: a.per_kind] + chatter[: a.per_kind]:
        answer, p_true = ask(a.url.rstrip("/"), system, row["text"])
        judged.append({"id": row["id"], "kind": row["kind"], "answer": answer, "p_true": p_true})
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(j) + "\n" for j in judged)
    for kind in ["durable", "non_memory"]:
        of = [j for j in judged if j["kind"] == kind]
        said = sum('"lasting": true' in re.sub(r'"lasting"\s*:\s*', '"lasting": ', j["answer"]) for j in of)
        by_p = " ".join(f"p>={t}: {sum((j['p_true'] or 0) >= t for j in of)}" for t in (0.35, 0.4, 0.45, 0.5))
        print(f"{kind}: {len(of)} rows, judged lasting {said}; {by_p}")


if __name__ == "__main__":
    main()
