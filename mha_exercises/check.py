"""``check("exercise_id")`` (or ``check(function)``): grade one exercise from a notebook.

It grades the code the notebook runs (your ``mha_exercises/``, or the reference solutions
when ``MHA_BACKEND=solutions``) with the same isolated grader as ``make grade``: the grader
runs in a separate process (``python -m autograder``), never in this kernel, and your code
runs in a third, confined one. It prints the verdict and what is wrong, and returns nothing.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from .backend import BACKENDS, backend

WIDTH = 88


def check(exercise, *, time_limit: float | None = None) -> None:
    """Grade ``exercise`` (an id like ``"softmax"``, or the function/class itself) and print the verdict."""
    name = exercise if isinstance(exercise, str) else getattr(exercise, "__name__", None)
    if not isinstance(name, str):
        print(f"check(): give an exercise id such as 'softmax', or the function itself, not {exercise!r}")
        return
    grader = "autograder"
    if importlib.util.find_spec("autograder") is None or importlib.util.find_spec("solutions") is None:
        # A learner release: no solutions, but the public practice cases (autograder/selfcheck.py).
        if importlib.util.find_spec("autograder") is None or importlib.util.find_spec("autograder.selfcheck") is None:
            print(f"check({name!r}): the grader is not available in this installation; run your own "
                  "tests, or ask your instructor for a graded run.")
            return
        grader, time_limit = "autograder.selfcheck", None
    package = importlib.util.find_spec(BACKENDS[backend()])
    # The folder the notebook's `load(...)` imports from (first on the package's path).
    directory = Path(next(iter(package.submodule_search_locations)))
    result = _grade(directory, name, time_limit, grader)
    print(result if isinstance(result, str) else verdict(result))


def _grade(directory: Path, name: str, time_limit: float | None, grader: str = "autograder"):
    """The JSON report of ``python -m <grader> DIR --exercise NAME``, or an error message."""
    root = directory.parent
    with tempfile.TemporaryDirectory(prefix="mha-check-") as tmp:
        out = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", grader, str(directory), "--exercise", name, "--json", str(out),
               "--quiet"]
        if time_limit is not None:
            cmd += ["--time-limit", str(time_limit)]
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
            filter(None, [str(root), os.environ.get("PYTHONPATH")])))
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=env)
        if proc.returncode != 0 or not out.exists():
            why = (proc.stderr.strip().splitlines() or ["no output"])[-1].removeprefix("mha-grade: ")
            return f"check({name!r}): could not grade: {why}"
        return json.loads(out.read_text())


def verdict(report: dict) -> str:
    """A few lines: a mark, the score and status, then what is wrong (and the notes)."""
    lines = []
    for r in report["exercises"]:
        mark = "✔" if r["status"] == "passed" else "✘"
        n = len(r["cases"])
        passed = sum(c["passed"] for c in r["cases"])
        lines.append(f"{mark} {r['id']}: {_points(r['score'])}/{_points(r['max_score'])} points, "
                     f"{r['status']} ({passed} of {n} checks passed)")
        if r["status"] == "not attempted" and r["cases"]:  # one reason for every check
            lines.append(_wrap(r["cases"][0]["feedback"], "   "))
        elif r["feedback"]:
            lines.append(_wrap(r["feedback"], "   "))
        for c in _telling(r)[:3]:
            lines.append(_wrap(f"• {c['name']}: {c['feedback']}", "   ", "     "))
        lines += [_wrap(f"note: {note}", "   ", "     ") for note in r["notes"]]
    return "\n".join(lines)


def _telling(result: dict) -> list[dict]:
    """Failing checks that add to the summary: one example per diagnosis, each other failure once."""
    said = [result["feedback"].lower()]
    out = []
    for c in result["cases"]:
        key = (c.get("diagnosis") or c["feedback"] or "").lower()
        if c["passed"] or not key or any(key in text for text in said):
            continue
        said.append(key)
        out.append(c)
    if not out and result["status"] != "not attempted":  # the summary named the cause: one example
        out = [c for c in result["cases"] if not c["passed"] and c["feedback"] not in result["feedback"]][:1]
    return out


def _wrap(text: str, first: str, rest: str | None = None) -> str:
    return textwrap.fill(text, WIDTH, initial_indent=first, subsequent_indent=rest or first)


def _points(x: float) -> str:
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.2f}"
