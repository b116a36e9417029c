"""Benchmark: the learner-side CPU of each exercise's hidden cases, run on the reference solutions.

The grader's side draws each exercise's grading cases (``--seed``); a fresh interpreter then
prepares itself as the zygote prepares the learner side (``zygote.preload``: NumPy, torch on
one thread, the drivers; the garbage collector frozen) and, per exercise and run, forks a
child that runs the cases' drivers on ``solutions`` as an exercise's child runs them on a
submission. Each child measures its own CPU (user + system, ``getrusage``) around the drivers
only: the fork, the module's import and the protocol are not counted. Prints a table of the
medians and exits non-zero when head_importance's median exceeds the target.

    .venv/bin/python bench/checks.py [--runs 7] [--target-ms 60] [--seed 0] [--only ID ...]
"""
from __future__ import annotations

import argparse
import gc
import importlib
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 60.0  # head_importance; it was 115 ms before its cases were cut down (issue 17)


class _Solutions:
    """The ``ns`` a driver gets: ``ns.module("attention")`` is the reference module."""

    def module(self, name):
        return importlib.import_module(f"solutions.{name}")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child_cpu(drivers, cases) -> float:
    """CPU seconds of one forked child running ``cases``; a failing case fails the benchmark."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 0
        try:
            ns = _Solutions()
            start = _cpu()
            for driver, inputs in cases:
                getattr(drivers, driver)(ns, **inputs)
            os.write(write, repr(_cpu() - start).encode())
        except BaseException as err:  # noqa: BLE001  reported by the parent
            os.write(write, f"error {type(err).__name__}: {err}".encode()[:4000])
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    if not text or text.startswith("error"):
        raise RuntimeError(f"a case failed on the reference: {text or 'the child died'}")
    return float(text)


def learner_side(path: str, runs: int) -> None:
    """In a fresh interpreter: prepare as the zygote does, then fork ``runs`` children per exercise."""
    from autograder.isolation import zygote

    drivers = zygote.preload()
    if isinstance(drivers, BaseException):
        raise drivers
    with open(path, "rb") as f:
        jobs = pickle.load(f)
    for module, _ in jobs.values():
        importlib.import_module(f"solutions.{module}")  # not counted: the cases are
    gc.freeze()
    times = {id: [_child_cpu(drivers, cases) for _ in range(runs)] for id, (_, cases) in jobs.items()}
    with open(path, "wb") as f:
        pickle.dump(times, f)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--target-ms", type=float, default=TARGET_MS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="*", help="exercise ids (default: every exercise)")
    p.add_argument("--learner-side", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.learner_side:
        learner_side(args.learner_side, args.runs)
        return 0

    from autograder.grading.exercises import EXERCISES
    from autograder.grading.runner import exercise_cases

    ids = args.only or list(EXERCISES)
    jobs = {id: (EXERCISES[id].module, [(c.driver, c.inputs) for c in exercise_cases(EXERCISES[id], args.seed)])
            for id in ids}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "jobs.pickle")
        with open(path, "wb") as f:
            pickle.dump(jobs, f)
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        subprocess.run([sys.executable, __file__, "--learner-side", path, "--runs", str(args.runs)],
                       cwd=ROOT, env=env, check=True)
        with open(path, "rb") as f:
            times = pickle.load(f)

    from rich.console import Console
    from rich.table import Table

    med = {id: 1000 * statistics.median(t) for id, t in times.items()}
    table = Table(title=f"Learner-side CPU of the grading cases (seed {args.seed}) on solutions/, "
                        f"median of {args.runs} forked runs")
    for name, justify in (("exercise", "left"), ("cases", "right"), ("CPU ms (median)", "right"),
                          ("min", "right"), ("max", "right")):
        table.add_column(name, justify=justify)
    for id in sorted(med, key=med.get, reverse=True):
        table.add_row(id, str(len(jobs[id][1])), f"{med[id]:.1f}", f"{1000 * min(times[id]):.1f}",
                      f"{1000 * max(times[id]):.1f}")
    table.add_row("total", str(sum(len(c) for _, c in jobs.values())), f"{sum(med.values()):.1f}", "", "")
    console = Console()
    console.print(table)
    if "head_importance" not in med:
        return 0
    ok = med["head_importance"] <= args.target_ms
    console.print(f"head_importance: {med['head_importance']:.1f} ms, target <= {args.target_ms:.0f} ms: "
                  + ("met" if ok else "MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
