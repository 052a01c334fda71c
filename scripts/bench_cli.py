#!/usr/bin/env python3
"""Start-up benchmark of the built `dream` binary beside a plain `true`.

Each command is run RUNS times, interleaved with `true` so machine load hits both
alike; the medians and p90s (wall clock, fork+exec included) and the median
difference over `true` are printed. Every run is a fresh process: the state a
command finds on disk (a persisted recall index) is what a hook or an agent's
next call would find.

Usage: bench_cli.py DREAM_BINARY STORE_DIR [RUNS] -- LABEL=ARGS ...
  e.g. bench_cli.py target/release/dream /tmp/s200 30 -- "list=list" \
       "recall=recall vitest" "scan=scan --text 'hello there'"
  STORE_DIR is the working directory (its .dream/ is the default store).
  A label ending in `!cold` removes STORE_DIR/.dream/recall before each run, to
  time a recall that finds no persisted index.
"""

import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time


def run(argv, cwd, env):
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"{argv} failed ({done.returncode}): {done.stderr.decode()[:500]}")
    return elapsed


def p90(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.9))]


def main():
    args = sys.argv[1:]
    if "--" not in args or len(args) < 3:
        sys.exit(__doc__)
    cut = args.index("--")
    binary, store = os.path.abspath(args[0]), args[1]
    runs = int(args[2]) if cut > 2 else 30
    commands = [a.split("=", 1) for a in args[cut + 1:]]
    env = dict(os.environ)
    print(f"{'command':<28} {'median':>9} {'p90':>9} {'true':>9} {'over true':>10}")
    for label, rest in commands:
        cold = label.endswith("!cold")
        argv = [binary] + shlex.split(rest)
        ours, base = [], []
        run(argv, store, env)  # warm the page cache and persist what recall persists
        for _ in range(runs):
            if cold:
                shutil.rmtree(os.path.join(store, ".dream", "recall"), ignore_errors=True)
            ours.append(run(argv, store, env))
            base.append(run(["true"], store, env))
        m, t = statistics.median(ours), statistics.median(base)
        print(f"{label:<28} {m * 1e3:8.1f}ms {p90(ours) * 1e3:8.1f}ms "
              f"{t * 1e3:8.1f}ms {(m - t) * 1e3:9.1f}ms")


if __name__ == "__main__":
    main()
