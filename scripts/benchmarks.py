#!/usr/bin/env python3
"""Runs Dream's criterion benchmarks and writes BENCHMARKS.md from their output.

BENCHMARKS.md holds one current table per benchmark, nothing else: every row is a
criterion median with its confidence interval and, where the bench measures Dream
beside a raw baseline, the ratio to that baseline. The history of earlier results is
in git (`git log -p BENCHMARKS.md`), not in the file.

    python3 scripts/benchmarks.py run [--quick] [--only NAME ...]   # measure
    python3 scripts/benchmarks.py render                            # write BENCHMARKS.md
    python3 scripts/benchmarks.py list                              # the benches

`run` gives each bench its own criterion directory (`CRITERION_HOME`) under
`$CARGO_TARGET_DIR/bench-report/` (default `target/bench-report/`), and records the
machine, the commit, the date and the load average before and after each bench, so
that `render` can say under what conditions every table was measured. `render` reads
only what `run` left there; a bench that has not run is listed as not measured.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Bench:
    """One criterion bench target, what it measures, and how its rows pair with
    their raw baselines: each rule maps a row's id (`group/function[/value]`) to the
    id of its baseline's row."""

    def __init__(self, name, package, target, what, baselines, features=(), needs=()):
        self.name = name
        self.package = package
        self.target = target
        self.what = what
        self.baselines = [(re.compile(p), r) for p, r in baselines]
        self.features = list(features)
        self.needs = list(needs)

    def baseline_of(self, row_id):
        for pattern, replacement in self.baselines:
            if pattern.fullmatch(row_id):
                return pattern.sub(replacement, row_id)
        return None


BENCHES = [
    Bench("store", "dream-memory", "store",
          "Stores: put / get / list of a 4 KiB value, each backend beside its raw "
          "baseline doing the same durable steps (raw files, rusqlite, Redis commands).",
          [(r"(\w+)/fs", r"\1/raw-file"), (r"(\w+)/sqlite", r"\1/raw-rusqlite"),
           (r"(\w+)/redis", r"\1/raw-redis")],
          features=["--all-features"], needs=["redis"]),
    Bench("encryption", "dream-encrypted", "encryption",
          "Encryption at rest: raw AES-256-GCM, and EncryptedStore beside the store "
          "it wraps.",
          [(r"(.+)/(put|get)/encrypted_(\w+)", r"\1/\2/\3")]),
    Bench("redis_lease", "dream-redis", "lease",
          "Redis leases: try_lease + release beside raw SET NX PX + DEL.",
          [(r"lease/redis", r"lease/raw-redis")], needs=["redis"]),
    Bench("postgres_store", "dream-postgres", "store",
          "PostgreSQL put / get / lease / list beside raw tokio-postgres on the "
          "store's pool.",
          [(r"(\w+)/postgres", r"\1/raw-tokio-postgres")], needs=["postgres"]),
    Bench("scan", "dream-scan", "scan",
          "Scanner throughput beside one Aho-Corasick pass of the scanner's own "
          "literals over the same bytes (targets: prose <= 6x, no 1 MiB input over "
          "200 ms).",
          [(r"(prose|attacks)/scan(_rules_only)?", r"\1/aho_corasick_literals"),
           (r"json/scan_json(_rules_only)?", r"json/aho_corasick_literals"),
           (r"worst_1mib/scan_(\w+)", r"worst_1mib/aho_corasick_\1")]),
    Bench("scan_construction", "dream-scan", "construction",
          "Building a scanner beside building one bare Aho-Corasick automaton of its "
          "literals.",
          [(r"construction/scanner_new(_first_scan)?", r"construction/aho_corasick_build")]),
    Bench("recall", "dream-engine", "recall",
          "Recall (ranking and firewall) beside a linear substring scan; building "
          "and loading the index beside listing and reading its records.",
          [(r"recall/(recall|recall_no_feedback|recall_lexical)/(\d+)",
            r"recall/substring_scan/\2"),
           (r"index/cold_build/(\d+)", r"index/list_and_decode/\1"),
           (r"(index|sqlite)/cold_persisted/(\d+)", r"\1/persisted_raw_read/\2")]),
    Bench("vector_recall", "dream-engine", "vector_recall",
          "Recall by vectors beside a linear cosine scan of the same vectors.",
          [(r"(vector_recall/\d+)/(vectors_only|hybrid)", r"\1/linear_cosine_scan")]),
    Bench("dream_pass", "dream-engine", "dream_pass",
          "A whole dream pass beside a replay of exactly its store operations.",
          [(r"dream_pass/(.+)/dream", r"dream_pass/\1/baseline")]),
    Bench("import", "dream-engine", "import",
          "Import of memories per backend beside raw batched writes of the same "
          "records and change-feed entries.",
          [(r"(import-\d+)/(\w+)/dream(-store-part)?", r"\1/\2/raw-batched-with-feed")],
          needs=["redis"]),
    Bench("embed", "dream-embed", "embed",
          "One embedding on one core: the local embedder beside candle's BERT run "
          "bare.",
          [(r"embed_one_core/local_embedder/(\w+)", r"embed_one_core/raw_candle_bert/\1")],
          needs=["model"]),
]


def report_dir():
    target = os.environ.get("CARGO_TARGET_DIR") or str(ROOT / "target")
    return Path(target) / "bench-report"


def load_average():
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return None


def machine():
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    rustc = subprocess.run(["rustc", "-V"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    # BENCHMARKS.md itself (a render between runs) changes nothing that is measured.
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no",
                            "--", ".", ":!BENCHMARKS.md"],
                           capture_output=True, text=True).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "os": platform.platform(),
        "rustc": rustc,
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
    }


def run(args):
    out = report_dir()
    out.mkdir(parents=True, exist_ok=True)
    chosen = [b for b in BENCHES if not args.only or b.name in args.only]
    unknown = set(args.only or []) - {b.name for b in BENCHES}
    if unknown:
        sys.exit(f"no bench named {', '.join(sorted(unknown))}; see `benchmarks.py list`")
    failed = []
    for bench in chosen:
        home = out / "criterion" / bench.name
        home.mkdir(parents=True, exist_ok=True)
        cmd = ["cargo", "bench", "-p", bench.package, *bench.features, "--bench", bench.target,
               "--", "--noplot"]
        if args.quick:
            cmd += ["--warm-up-time", "1", "--measurement-time", "3"]
        env = dict(os.environ, CRITERION_HOME=str(home))
        print(f"== {bench.name}: {' '.join(cmd)}", flush=True)
        record = {"command": " ".join(cmd), "quick": args.quick,
                  "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "load_before": load_average()}
        began = time.monotonic()
        status = subprocess.run(cmd, cwd=ROOT, env=env).returncode
        record.update(seconds=round(time.monotonic() - began), load_after=load_average(),
                      status=status, machine=machine())
        (out / f"{bench.name}.run.json").write_text(json.dumps(record, indent=1))
        if status != 0:
            failed.append(bench.name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


def rows_of(home):
    """Every benchmark criterion measured under `home`: id, median and its interval
    (ns), and the throughput per iteration if the bench declared one."""
    rows = {}
    for meta in home.glob("**/new/benchmark.json"):
        info = json.loads(meta.read_text())
        estimates = json.loads((meta.parent / "estimates.json").read_text())
        median = estimates["median"]
        rows[info["full_id"]] = {
            "median": median["point_estimate"],
            "low": median["confidence_interval"]["lower_bound"],
            "high": median["confidence_interval"]["upper_bound"],
            "throughput": info.get("throughput"),
        }
    return rows


def duration(ns):
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= size:
            return f"{ns / size:.3g} {unit}"
    return f"{ns:.3g} ns"


def rate(throughput, ns):
    if not throughput:
        return ""
    (kind, amount), = throughput.items()
    per_second = amount / (ns / 1e9)
    if kind == "Bytes":
        return f"{per_second / 2**20:.3g} MiB/s"
    return f"{per_second:.3g} {kind.lower()}/s"


def render(args):
    out = report_dir()
    lines = [
        "# Benchmarks",
        "",
        "Written by `python3 scripts/benchmarks.py render` from the criterion output of",
        "`python3 scripts/benchmarks.py run`; do not edit by hand. Every row is a criterion",
        "median (95 % confidence interval of the median in brackets). Where a bench",
        "measures Dream beside a raw baseline doing the same work, the last column is the",
        "ratio of the medians. The machine is shared: the load average before and after",
        "each bench is given, and on a loaded machine absolute times run high while the",
        "ratios hold better. Earlier results are in git history, not here.",
        "",
        "Instruction counts that do not depend on load (callgrind) are how the scanner's",
        "speed changes are checked; see the `DREAM_SCAN_COUNT` notes in",
        "`crates/dream-scan/benches/scan.rs`.",
        "",
    ]
    measured = []
    for bench in BENCHES:
        run_file = out / f"{bench.name}.run.json"
        rows = rows_of(out / "criterion" / bench.name) if run_file.exists() else {}
        lines.append(f"## `{bench.name}`: `cargo bench -p {bench.package} --bench {bench.target}`")
        lines.append("")
        lines.append(bench.what)
        lines.append("")
        if not rows:
            needs = f" (needs {', '.join(bench.needs)})" if bench.needs else ""
            lines += [f"Not measured in this report{needs}.", ""]
            continue
        record = json.loads(run_file.read_text())
        measured.append(record)
        quick = ", quick settings (1 s warm-up, 3 s measurement)" if record.get("quick") else ""
        lines.append(f"Measured {record['started']} at commit `{record['machine']['commit']}`, "
                     f"load average {record['load_before']} before and {record['load_after']} "
                     f"after{quick}.")
        if record.get("status"):
            lines.append(f"The bench exited with status {record['status']}: rows may be missing.")
        lines += ["", "| benchmark | median | throughput | beside its baseline |",
                  "|---|---|---|---|"]
        for row_id in sorted(rows, key=natural):
            row = rows[row_id]
            base_id = bench.baseline_of(row_id)
            ratio = ""
            if base_id and base_id in rows:
                ratio = f"{row['median'] / rows[base_id]['median']:.2f}× `{base_id.split('/', 1)[1]}`"
            elif base_id:
                ratio = f"(baseline `{base_id}` not measured)"
            lines.append(f"| `{row_id}` | {duration(row['median'])} "
                         f"[{duration(row['low'])} – {duration(row['high'])}] | "
                         f"{rate(row['throughput'], row['median'])} | {ratio} |")
        lines.append("")
    if measured:
        m = measured[-1]["machine"]
        lines[2:2] = [f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; "
                      f"{m['os']}; {m['rustc']}.", ""]
    target = ROOT / "BENCHMARKS.md"
    target.write_text("\n".join(lines).rstrip() + "\n")
    print(f"wrote {target} ({len(measured)} of {len(BENCHES)} benches measured)")


def natural(text):
    """Sort key that orders `recall/1000` before `recall/10000`."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the benches, keeping criterion's output")
    r.add_argument("--quick", action="store_true", help="1 s warm-up, 3 s measurement")
    r.add_argument("--only", nargs="+", metavar="NAME", help="only these benches")
    sub.add_parser("render", help="write BENCHMARKS.md from the kept output")
    sub.add_parser("list", help="list the benches")
    args = parser.parse_args()
    if args.command == "run":
        run(args)
    elif args.command == "render":
        render(args)
    else:
        for b in BENCHES:
            print(f"{b.name:18} cargo bench -p {b.package} --bench {b.target}   {b.what}")


if __name__ == "__main__":
    main()
