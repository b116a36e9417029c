"""Benchmark: check() in a notebook, against `python -c "import torch"`.

Each run starts a fresh Python (as a fresh kernel would be), which times, in itself:

* the first ``check("softmax")``, from the interpreter's start: importing ``check``,
  starting the grader service (``autograder/service.py``) and grading;
* then ``check(id)`` for each of the 17 exercises, against the warm service.

Runs alternate with a bare ``python -c "import torch"``, so that the machine's load weighs
on both alike; every check grades the reference solutions (``MHA_BACKEND=solutions``: every
case is computed and compared). Prints the medians and ratios and exits non-zero when a
target is missed.

    .venv/bin/python bench/check.py [--runs 5] [--warm-target 0.15] [--first-target 1.3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH = 'python -c "import torch"'
sys.path.insert(0, str(ROOT))

# Run in the fresh interpreter: its own start time is taken from the parent's clock.
SESSION = r"""
import contextlib, io, json, sys, time
from mha_exercises.check import check
from autograder.spec import POINTS

def quiet(exercise):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check(exercise)
    if not out.getvalue().startswith("✔"):
        sys.exit(f"check({exercise!r}) did not pass:\n{out.getvalue()}")

quiet("softmax")
first = time.perf_counter()
warm = {}
for exercise in POINTS:
    t = time.perf_counter()
    quiet(exercise)
    warm[exercise] = time.perf_counter() - t
print(json.dumps({"first_done": first, "warm": warm}))
"""


def env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MHA_BACKEND="solutions")


def time_torch() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], cwd=ROOT, env=env(), check=True)
    return time.perf_counter() - t0


def session() -> tuple[float, dict]:
    """(seconds to the first check's verdict, {exercise: seconds of a later check})."""
    t0 = time.perf_counter()  # perf_counter is system-wide on Linux: the child's clock is ours
    proc = subprocess.run([sys.executable, "-c", SESSION], cwd=ROOT, env=env(), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the check session failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    return data["first_done"] - t0, data["warm"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--warm-target", type=float, default=0.15)
    p.add_argument("--first-target", type=float, default=1.3)
    args = p.parse_args(argv)

    session()  # warm-up: the disk caches (page cache, bytecode, reference outputs)
    torch_times, firsts, warm = [], [], {}
    for _ in range(args.runs):
        torch_times.append(time_torch())
        first, checks = session()
        firsts.append(first)
        for exercise, seconds in checks.items():
            warm.setdefault(exercise, []).append(seconds)
    torch_med = statistics.median(torch_times)
    per_exercise = {e: statistics.median(v) for e, v in warm.items()}
    warm_med = statistics.median(per_exercise.values())
    first_med = statistics.median(firsts)
    rows = [
        ("check(id) after the first, median over the 17 ids", warm_med, args.warm_target),
        ("first check() in a fresh interpreter", first_med, args.first_target),
    ]
    print(f"check() vs python -c 'import torch' (median of {args.runs} interleaved runs)")
    print(f"{'measure':52s} {'median s':>9s} {'/ torch':>8s} {'target':>7s}  verdict")
    print(f"{TORCH:52s} {torch_med:9.3f}")
    missed = False
    for label, seconds, target in rows:
        ratio = seconds / torch_med
        missed |= ratio > target
        print(f"{label:52s} {seconds:9.3f} {ratio:7.3f}x {target:6.2f}x  {'met' if ratio <= target else 'MISSED'}")
    slowest = max(per_exercise, key=per_exercise.get)
    print(f"slowest later check: {slowest} {per_exercise[slowest]:.3f} s "
          f"({per_exercise[slowest] / torch_med:.3f}x); fastest: "
          f"{min(per_exercise.values()):.3f} s")
    try:
        print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    except OSError:
        pass
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
