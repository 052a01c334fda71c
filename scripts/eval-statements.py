#!/usr/bin/env python3
"""Scores the dream pass through the `dream` binary on a statements corpus
(crates/dream-engine/tests/fixtures/statements/), as a person meets it: every
row is logged as its own session, `dream dream` runs until nothing is pending
(or the passes stop making progress), then every durable row's question is
asked with `dream recall`. Prints the share of durable statements kept (a
memory from the row's session holds every `must` token), the share recalled
`used`, the share of non-memories stored, and the pass's time per session.

    scripts/eval-statements.py DREAM_BIN CORPUS.jsonl [-- extra dream-pass flags]

With `--llm compatible --base-url URL --model NAME --sessions-per-request 1`
after `--` it measures a local model served by scripts/local-llm-server.py;
with nothing after `--` the offline consolidator. `--embedding-model DIR`
recalls by words and meaning with the built-in local embedder (vectors are
stored by the pass and by recall's backfill), as a fully local user would.

The blind halves (blind*.jsonl) are for scoring only: log every run on one in
LOOKS.md. `--misses` prints the rows that failed (never on a blind half), and
`--keep` keeps the raw outputs that would show them (refused on one too).
`--keep DIR` keeps the store and every raw answer there (each pass's JSON and
stderr, the listing, each question's recall), to find where a row was lost.
"""
import argparse
import collections
import contextlib
import os
import json
import subprocess
import sys
import tempfile
import time


def run(dream, store, args, stdin=None, check=True):
    cmd = [dream, "--store", store, *args]
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=3600)
    if check and done.returncode != 0:
        sys.exit(f"{' '.join(args[:2])}: exit {done.returncode}: {done.stderr.strip()}")
    return done


def holds_all(text, must):
    text = text.lower()
    return all(m.lower() in text for m in must)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dream")
    parser.add_argument("corpus")
    parser.add_argument("--misses", action="store_true")
    parser.add_argument("--limit", type=int, default=5, help="memories recalled per question")
    parser.add_argument("--rows", type=int, default=0, help="score only the first N rows")
    parser.add_argument("--keep", help="keep the store and every raw output in this directory")
    parser.add_argument("--embedding-model", help="a local embedding model directory (--embedder local)")
    parser.add_argument("pass_flags", nargs=argparse.REMAINDER)
    a = parser.parse_args()
    flags = [f for f in a.pass_flags if f != "--"]
    embed = ["--embedder", "local", "--embedding-model", a.embedding_model] if a.embedding_model else []
    flags += embed
    rows = [json.loads(l) for l in open(a.corpus, encoding="utf-8") if l.strip()]
    if a.rows:
        rows = rows[: a.rows]
    # Absent rows (dev4, blind4) ask about nothing the file states: not logged,
    # asked after the pass, and a memory recalled `used` for one is a false alarm.
    absent = [r for r in rows if r["kind"] == "absent"]
    rows = [r for r in rows if r["kind"] != "absent"]
    if (a.misses or a.keep) and os.path.basename(a.corpus).startswith("blind"):
        sys.exit("--misses and --keep are for development sets only: a blind half is scored, never read")

    if a.keep:
        os.makedirs(f"{a.keep}/recall", exist_ok=True)

    def keep(name, text):
        if a.keep:
            with open(f"{a.keep}/{name}", "w", encoding="utf-8") as f:
                f.write(text)

    with contextlib.nullcontext(a.keep) if a.keep else tempfile.TemporaryDirectory() as tmp:
        store = f"fs:{tmp}/.dream"
        sessions = []
        for row in rows:
            message = json.dumps([{"role": "user", "content": row["text"]}])
            out = run(a.dream, store, ["log", "-", "--format", "json"], stdin=message)
            sessions.append(json.loads(out.stdout)["session"])
        keep("sessions.json", json.dumps({r["id"]: s for r, s in zip(rows, sessions)}, indent=1))

        refusals = collections.Counter()
        started = time.monotonic()
        passes, last_pending = 0, None
        while True:
            out = run(a.dream, store, [*flags, "dream", "--force", "--format", "json"], check=False)
            passes += 1
            keep(f"pass-{passes}.json", out.stdout)
            keep(f"pass-{passes}.stderr", out.stderr)
            if out.returncode not in (0, 1):
                sys.exit(f"dream: exit {out.returncode}: {out.stderr.strip()}")
            report = json.loads(out.stdout)
            for r in report.get("refused", []):
                refusals[f"{r.get('action')} {r.get('cause', '')}: {r.get('reason', '')[:90]}"] += 1
            pending = report.get("pending", 0)
            if pending == 0 or pending == last_pending or passes > 10:
                break
            last_pending = pending
        elapsed = time.monotonic() - started
        if embed:
            # Every memory's vector now, as `dream model embed` gives a person
            # told "memory vectors not updated": a pass waits for them only a
            # bounded time (60 s), which a loaded machine can exceed, and
            # recall would then rank by words alone.
            run(a.dream, store, [*embed, "model", "embed"])

        listed = run(a.dream, store, ["list", "--format", "json"]).stdout
        keep("list.json", listed)
        memories = json.loads(listed)
        content_of = {m["id"]: m["content"] for m in memories}
        by_session = {}
        for m in memories:
            for s in m.get("sources", []):
                by_session.setdefault(s, []).append(m)

        durable = stored = used = non = chatter = 0
        misses = []
        for row, session in zip(rows, sessions):
            mine = by_session.get(session, [])
            if row["kind"] == "durable":
                durable += 1
                if any(holds_all(m["content"], row["must"]) for m in mine):
                    stored += 1
                # Exit 1: nothing admitted (an answer, not a failure).
                out = run(a.dream, store, [*embed, "recall", row["question"], "--limit", str(a.limit), "--format", "json"], check=False)
                if out.returncode not in (0, 1):
                    sys.exit(f"recall: exit {out.returncode}: {out.stderr.strip()}")
                keep(f"recall/{row['id']}.json", out.stdout)
                result = json.loads(out.stdout)
                # Recall's records name the memory; its text is the store's.
                if any(r.get("verdict") == "used" and holds_all(content_of.get(r["id"], ""), row["must"])
                       for r in result.get("records", [])):
                    used += 1
                else:
                    misses.append(f"{row['id']} {row['text']!r} -> {[m['content'] for m in mine]}; asked {row['question']!r}")
            else:
                non += 1
                if mine:
                    chatter += 1
                    misses.append(f"{row['id']} non-memory stored: {[m['content'] for m in mine]}")

        answered = 0
        for row in absent:
            out = run(a.dream, store, [*embed, "recall", row["question"], "--limit", str(a.limit), "--format", "json"], check=False)
            if out.returncode not in (0, 1):
                sys.exit(f"recall: exit {out.returncode}: {out.stderr.strip()}")
            keep(f"recall/{row['id']}.json", out.stdout)
            used_ids = [r["id"] for r in json.loads(out.stdout).get("records", []) if r.get("verdict") == "used"]
            if used_ids:
                answered += 1
                misses.append(f"{row['id']} absent {row['question']!r} -> used {[content_of.get(i, '') for i in used_ids]}")

    pct = lambda p, w: 100.0 * p / max(w, 1)
    print(f"== {a.corpus.rsplit('/', 1)[-1]} ({' '.join(flags) or 'offline'}; {len(rows)} rows)")
    print(f"durable {durable}: kept {stored} ({pct(stored, durable):.1f} %), recalled used {used} ({pct(used, durable):.1f} %)")
    print(f"non-memories {non}: stored {chatter} ({pct(chatter, non):.1f} %)")
    if absent:
        print(f"absent questions {len(absent)}: answered with a used memory {answered} ({pct(answered, len(absent)):.1f} %)")
    print(f"pass: {passes} runs, {elapsed:.0f} s, {elapsed / max(len(rows), 1):.1f} s a session")
    if a.misses:
        for reason, n in refusals.most_common():
            print(f"  refused {n}x {reason}")
        for m in misses:
            print("  " + m)


if __name__ == "__main__":
    main()
