"""Benchmark: the learner-side CPU of each exercise's hidden cases, run on the reference solutions.

The grader's side draws each exercise's grading cases (``--seed``); a fresh interpreter then
prepares itself as the zygote prepares the learner side (``zygote.preload``: NumPy, torch on
one thread, the drivers; the garbage collector frozen) and, per exercise and run, forks a
child that runs the cases' drivers on ``solutions`` as an exercise's child runs them on a
submission. Each child measures its own CPU (user + system, ``getrusage``) around the drivers
only: the fork, the module's import and the protocol are not counted. Prints a table of the
medians and exits non-zero when head_importance's median exceeds the target.

Cheaper cases must stay as precise: ``--margins SEEDS`` instead grades the correct alternatives
of ``tests/wrong_implementations/`` in this process on the grading cases of seeds 0..SEEDS-1
and prints, per exercise, the largest share of a case's tolerance they use,
max |got - expected| / (atol + rtol |expected|) over every compared array (1 = failing), and
exits non-zero when one reaches 1; beside it, how far the exercise's known bugs are (each
variant's largest share over a draw's cases, the smallest over variants and seeds 0..2; a
variant that no float array shows, caught on booleans, integers, a property or a flag, is
counted apart).

    .venv/bin/python bench/checks.py [--runs 7] [--target-ms 60] [--seed 0] [--only ID ...]
    .venv/bin/python bench/checks.py --margins 100 --only head_importance
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
# head_importance: half its cost before its cases were cut down (116-119 ms then, 54-56 ms after,
# alternating runs of this script on both trees, the old one through PYTHONPATH=<checkout>).
TARGET_MS = 60.0


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


def _share(got, expected, case) -> float:
    """The largest share of the case's tolerance that ``got`` uses, over every float array."""
    import numpy as np

    if isinstance(expected, dict) and isinstance(got, dict):
        return max([_share(got.get(k), v, case) for k, v in expected.items() if not str(k).startswith("_")],
                   default=0.0)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)) and len(got) == len(expected):
        return max([_share(g, e, case) for g, e in zip(got, expected)], default=0.0)
    if isinstance(expected, np.ndarray) and expected.dtype.kind == "f" and expected.size:
        if not isinstance(got, np.ndarray) or got.shape != expected.shape:
            return float("inf")
        with np.errstate(invalid="ignore", over="ignore"):
            share = np.abs(got.astype(np.float64) - expected) / (case.atol + case.rtol * np.abs(expected))
        same = (got == expected) | (np.isnan(got) & np.isnan(expected))  # infinities and NaNs where expected
        return float(np.max(np.where(same, 0.0, np.nan_to_num(share, nan=np.inf))))
    return 0.0


def margins(ids, seeds: int) -> int:
    """The share of the tolerance the correct alternatives use, worst over ``seeds`` grading draws."""
    import importlib.util

    from autograder.grading import judge, reference
    from autograder.grading.exercises import EXERCISES, draw

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Correct alternatives (tests/wrong_implementations/): the largest share of a case's "
                        f"tolerance used, seeds 0..{seeds - 1}")
    for name in ("exercise", "cases", "worst share", "where (seed, case, implementation)",
                 "known bugs' smallest share", "bugs shown by no value"):
        table.add_column(name)
    failed = False
    for id in ids:
        path = ROOT / "tests" / "wrong_implementations" / f"{id}.py"
        spec = importlib.util.spec_from_file_location(f"correct_{id}", path)
        library = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(library)
        worst, where, n = 0.0, "", 0
        for seed in range(seeds):
            for k, case in enumerate(draw.grading_cases(EXERCISES[id], seed)):
                expected = judge.reference_output(case)
                n += 1
                for implementation in library.CORRECT:
                    got = judge.run_driver(case, reference.namespace({id: implementation}))
                    share = _share(got, expected, case)
                    if share > worst:
                        worst, where = share, f"{seed}, {k}, {implementation.__name__}"
        failed |= worst >= 1
        misses = {}
        for seed in range(min(seeds, 3)):
            cases = draw.grading_cases(EXERCISES[id], seed)
            for bug in (v for b in EXERCISES[id].bugs.values() for v in judge.variants(b)):
                shares = [_share(judge.bug_output(case, EXERCISES[id], bug), judge.reference_output(case),
                                 case) for case in cases]
                misses[bug] = min(misses.get(bug, float("inf")), max(shares, default=0.0))
        by_value = [m for m in misses.values() if m >= 1]
        table.add_row(id, str(n), f"{worst:.3f}", where, f"{min(by_value):.3g}" if by_value else "-",
                      str(len(misses) - len(by_value)))
    Console(width=max(140, int(os.environ.get("COLUMNS", 0)))).print(table)
    return 1 if failed else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--target-ms", type=float, default=TARGET_MS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", nargs="*", help="exercise ids (default: every exercise)")
    p.add_argument("--margins", type=int, metavar="SEEDS",
                   help="measure the correct alternatives' share of the tolerances instead of CPU")
    p.add_argument("--learner-side", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.learner_side:
        learner_side(args.learner_side, args.runs)
        return 0

    from autograder.grading.exercises import EXERCISES
    from autograder.grading.runner import exercise_cases

    ids = args.only or list(EXERCISES)
    if args.margins:
        return margins(ids, args.margins)
    jobs = {id: (EXERCISES[id].module,
                 [(c.driver, c.inputs) for c in exercise_cases(EXERCISES[id], args.seed)]) for id in ids}
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
