"""Benchmark: grading a complete correct submission, against `python -c "import torch"`.

Both are timed here, in the same run, as fresh processes (what a learner waits for):
``mha-grade solutions --quiet`` (every exercise that has checks) and the bare torch import,
alternated so that the machine's load weighs on both alike. Prints a table of the medians
and exits non-zero when grading takes more than TARGET times the import.

    .venv/bin/python bench/grading.py [--runs 5] [--target 1.15] [--steps]

``--steps`` also times, in this process, where a grading's time goes after the interpreter
starts: torch imported and the zygote forked, the checks imported, then per step of the
pipeline (cases drawn or read from the cache, reference outputs, jobs sent, waiting for the
learner's children, judging), summed over the exercises; median of ``--runs`` fresh processes.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.15


def timed(cmd: list[str]) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed


STEPS = r"""
import json, sys, time
t0 = time.perf_counter()
from autograder.isolation import exchange, sandbox
zygote = sandbox.Zygote()  # torch imported here, then the zygote forked
t1 = time.perf_counter()
from autograder.grading import cache, runner
from autograder import submission
t2 = time.perf_counter()
spent = {}
def timed(owner, name, label):
    real = getattr(owner, name)
    def wrapper(*a, **k):
        start = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - start
    setattr(owner, name, wrapper)
timed(runner, "exercise_cases", "cases drawn or read")
timed(cache, "warm", "reference outputs read or computed")
timed(sandbox.Zygote, "launch", "children forked")
timed(exchange.Child, "start", "jobs sent")
timed(runner, "_outputs", "waiting for the learner's children")
timed(runner, "_judge", "judging")
report = runner.grade_submission(submission.load("solutions"), seed=0, zygote=zygote)
t3 = time.perf_counter()
print(json.dumps({"torch imported, zygote forked": t1 - t0, "checks imported": t2 - t1,
                  "grading, all steps": t3 - t2, **spent, "score": report.score}))
"""


def steps(runs: int) -> None:
    import json

    from rich.console import Console
    from rich.table import Table

    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    samples = [json.loads(subprocess.run([sys.executable, "-c", STEPS], cwd=ROOT, env=env, capture_output=True,
                                         text=True, check=True).stdout) for _ in range(runs)]
    table = Table(title=f"Where a grading's time goes (in-process, median of {runs})")
    table.add_column("step")
    table.add_column("median (s)", justify="right")
    for key in samples[0]:
        if key != "score":
            table.add_row(key, f"{statistics.median(s[key] for s in samples):.3f}")
    Console().print(table)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--target", type=float, default=TARGET)
    p.add_argument("--steps", action="store_true", help="also time each step of a grading")
    args = p.parse_args(argv)
    if args.steps:
        steps(args.runs)

    grade = [sys.executable, "-m", "autograder", "solutions", "--quiet"]
    torch_import = [sys.executable, "-c", "import torch"]
    score = subprocess.run(grade, cwd=ROOT, capture_output=True, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1")).stdout.strip()  # warm-up
    times = {"grade": [], "torch": []}
    for _ in range(args.runs):
        times["torch"].append(timed(torch_import))
        times["grade"].append(timed(grade))
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["grade"] / med["torch"]

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Grading solutions/ ({score} points), median of {args.runs} runs")
    table.add_column("command")
    table.add_column("median (s)", justify="right")
    table.add_column("min (s)", justify="right")
    table.add_column("max (s)", justify="right")
    for label, key in (("mha-grade solutions (all exercises)", "grade"), ('python -c "import torch"', "torch")):
        table.add_row(label, f"{med[key]:.2f}", f"{min(times[key]):.2f}", f"{max(times[key]):.2f}")
    verdict = "met" if ratio <= args.target else "MISSED"
    table.add_row(f"ratio (target <= {args.target:g}x)", f"{ratio:.2f}x", "", verdict)
    Console().print(table)
    try:
        load = os.getloadavg()[0]
        Console().print(f"load average (1 min) during the run: {load:.1f} on {os.cpu_count()} cores",
                        style="dim")
    except OSError:
        pass
    return 0 if ratio <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
