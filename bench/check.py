"""Benchmark: check() in a notebook, against `python -c "import torch"`.

Each run starts a fresh Python (as a fresh kernel would be), which times, in itself:

* the first ``check("softmax")``, from the interpreter's start: importing ``check``,
  starting the grader service (``autograder/service/``) and grading;
* then ``check(id)`` for each of the 17 exercises, against the warm service;

and, in another fresh Python, a chapter's way: the set-up cell (``warm_up()`` first, which
starts the grader in the background, then the cell's imports of NumPy, torch and the
chapter's module), a learner reading for ``--read`` seconds (3) after it, then the first
``check("softmax")``, timed alone.

Runs alternate with a bare ``python -c "import torch"``, so that the machine's load weighs
on both alike; every check grades the reference solutions (``MHA_BACKEND=solutions``: every
case is computed and compared). Prints the medians and ratios and exits non-zero when a
target is missed.

    .venv/bin/python bench/check.py [--runs 5] [--warm-target 0.15] [--first-target 1.3]
                                    [--read 3] [--setup-target 0.1]
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


# A chapter's set-up cell, then reading, then the first check: only the check is timed.
SETUP_SESSION = r"""
import contextlib, io, json, sys, time
from mha_exercises.check import check, warm_up
warm_up()  # first in the cell: the grader starts while the kernel imports the rest
import numpy, torch
from mha_exercises.backend import load
attention = load("attention")
time.sleep(float(sys.argv[1]))
out = io.StringIO()
t = time.perf_counter()
with contextlib.redirect_stdout(out):
    check("softmax")
seconds = time.perf_counter() - t
if not out.getvalue().startswith("✔"):
    sys.exit(f"check('softmax') did not pass:\n{out.getvalue()}")
print(json.dumps({"first_after_setup": seconds}))
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


def setup_session(read: float) -> float:
    """Seconds of the first check() made ``read`` seconds after the set-up cell's warm_up()."""
    proc = subprocess.run([sys.executable, "-c", SETUP_SESSION, str(read)], cwd=ROOT, env=env(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the set-up session failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["first_after_setup"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--warm-target", type=float, default=0.15)
    p.add_argument("--first-target", type=float, default=1.3)
    p.add_argument("--read", type=float, default=3.0, help="seconds between the set-up cell and the first check")
    p.add_argument("--setup-target", type=float, default=0.1)
    args = p.parse_args(argv)

    session()  # warm-up: the disk caches (page cache, bytecode, reference outputs)
    torch_times, firsts, after_setup, warm = [], [], [], {}
    for _ in range(args.runs):
        torch_times.append(time_torch())
        first, checks = session()
        firsts.append(first)
        after_setup.append(setup_session(args.read))
        for exercise, seconds in checks.items():
            warm.setdefault(exercise, []).append(seconds)
    torch_med = statistics.median(torch_times)
    per_exercise = {e: statistics.median(v) for e, v in warm.items()}
    warm_med = statistics.median(per_exercise.values())
    first_med = statistics.median(firsts)
    rows = [
        ("check(id) after the first, median over the 17 ids", warm_med, args.warm_target),
        ("first check() in a fresh interpreter", first_med, args.first_target),
        (f"first check() {args.read:g} s after the set-up cell's warm_up()", statistics.median(after_setup),
         args.setup_target),
    ]
    print(f"check() vs python -c 'import torch' (median of {args.runs} interleaved runs)")
    print(f"{'measure':56s} {'median s':>9s} {'/ torch':>8s} {'target':>7s}  verdict")
    print(f"{TORCH:56s} {torch_med:9.3f}")
    missed = False
    for label, seconds, target in rows:
        ratio = seconds / torch_med
        missed |= ratio > target
        print(f"{label:56s} {seconds:9.3f} {ratio:7.3f}x {target:6.2f}x  {'met' if ratio <= target else 'MISSED'}")
    print(f"first check() after the set-up cell, every run: {', '.join(f'{x:.3f}' for x in after_setup)} s")
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
