"""The learner release's self-check: public cases, stored, checked without the solutions.

A learner release (``make release``) ships no reference solutions and no judge. What it ships
instead, in ``autograder/public_cases/``, was computed from the solutions when the release
was built (``scripts/build_release.py`` calls :func:`store`): for every exercise, its cases
drawn with the *public* seed, the reference's output on each, and the output of each known
bug (so a mistake can still be named, without the bug's code). Final grading draws hidden
cases with another seed, so these cases are practice, not the exam.

``python -m autograder.selfcheck [SUBMISSION] [--exercise ID]`` (and ``check("softmax")`` in a
notebook of the release) runs the learner's code exactly as the real grader does, in a
confined child of the zygote (``sandbox.py``, ``worker.py``), and compares the plain data
that comes back with the stored outputs here, in the checking process. Calls between
exercises are not replaced by the reference (there is none): a mistake in ``softmax`` may
also cost ``scaled_dot_product_attention`` here, never in the real grade.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import __version__, scoring
from . import report as report_mod
from .isolation import exchange
from .isolation.practice import LABEL, learner_side, mode
from .report import Report
from .spec import POINTS, Case, CaseError, ExerciseResult
from .submission import Submission, SubmissionError, load as load_submission

CASES_DIR = Path(__file__).resolve().parent / "public_cases"
PUBLIC_SEED = 20240601  # the hidden grading seed is another one (scripts/build_gradescope.py)


# --------------------------------------------------------------------------- storage

def _encode(value, arrays: dict) -> object:
    """Plain data -> JSON, arrays moved to ``arrays`` (saved as one .npz)."""
    if isinstance(value, (np.ndarray, np.generic)):
        key = f"a{len(arrays)}"
        arrays[key] = np.asarray(value)
        return {"__array__": key, "scalar": isinstance(value, np.generic)}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return [_encode(v, arrays) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value) or "__array__" in value or "__tuple__" in value:
            raise TypeError(f"cannot store a dict with keys {list(value)!r}")
        return {k: _encode(v, arrays) for k, v in value.items()}
    if value is None or type(value) in (bool, int, float, str):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} as a public case")


def _decode(value, arrays):
    if isinstance(value, dict):
        if "__array__" in value:
            a = arrays[value["__array__"]]
            return a[()] if value.get("scalar") else a
        if "__tuple__" in value:
            return tuple(_decode(v, arrays) for v in value["__tuple__"])
        return {k: _decode(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    return value


def store(exercise, cases: list[Case], expected: list[dict], bugs: list[dict[str, list[dict]]],
          directory: Path) -> None:
    """Write one exercise's public cases: ``<id>.json`` (structure) and ``<id>.npz`` (arrays).

    ``bugs[i]`` maps each known bug that shows on case i to its outputs there (one per way of
    writing the mistake, None where that way does not show)."""
    arrays: dict = {}
    data = {
        "id": exercise.id, "module": exercise.module, "points": exercise.points, "timeout": exercise.timeout,
        "case_cpu": exercise.case_cpu, "memory_mb": exercise.memory_mb, "seed": PUBLIC_SEED,
        "ladder": [list(r) for r in exercise.ladder], "hints": dict(exercise.hints),
        "cases": [{"name": c.name, "driver": c.driver, "inputs": _encode(c.inputs, arrays),
                   "weight": c.weight, "rtol": c.rtol, "atol": c.atol, "properties": list(c.properties),
                   "timeout": c.timeout, "rung": c.rung, "features": dict(c.features),
                   "expected": _encode(e, arrays), "bugs": _encode(b, arrays)}
                  for c, e, b in zip(cases, expected, bugs)],
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{exercise.id}.json").write_text(json.dumps(data, indent=1, allow_nan=True))
    np.savez_compressed(directory / f"{exercise.id}.npz", **arrays)


def load(exercise_id: str, directory: Path = CASES_DIR) -> dict:
    data = json.loads((directory / f"{exercise_id}.json").read_text())
    with np.load(directory / f"{exercise_id}.npz", allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    for case in data["cases"]:
        for key in ("inputs", "expected", "bugs"):
            case[key] = _decode(case[key], arrays)
    return data


def available(directory: Path = CASES_DIR) -> list[str]:
    found = {p.stem for p in directory.glob("*.json")} if directory.is_dir() else set()
    return [e for e in POINTS if e in found]


# --------------------------------------------------------------------------- judging

def cases_of(data: dict) -> list[Case]:
    """The stored cases as the grader's ``Case`` objects (``scoring`` judges both alike)."""
    return [Case(c["name"], c["driver"], c["inputs"], c["weight"], c["rtol"], c["atol"], tuple(c["properties"]),
                 c["timeout"], c.get("rung", 0), c.get("features", {})) for c in data["cases"]]


def judge(data: dict, outputs: list) -> ExerciseResult:
    """Score one exercise from the learner's outputs on its stored cases, as the grader would."""
    cases, stored = cases_of(data), data["cases"]

    def bugs(i, diagnosis=None):  # the known bugs that show on case i, their stored outputs
        return stored[i]["bugs"] if diagnosis is None else stored[i]["bugs"].get(diagnosis)

    return scoring.score(data["id"], data["points"], cases, outputs, [c["expected"] for c in stored], bugs,
                         tuple(map(tuple, data.get("ladder", ()))), hints=data.get("hints", {}))


# --------------------------------------------------------------------------- running

def run_exercise(zygote, sources: dict[str, str], data: dict, scratch: str, not_imported: dict | None = None) -> list:
    """The learner's outputs on the stored cases, from a confined child, as the grader runs
    them (``exchange.run_cases``); ``not_imported`` gets the children's record of the modules
    that did not import."""
    cases, timeouts = data["cases"], [c["timeout"] for c in data["cases"]]

    def begin(first: int):
        child = zygote.launch()
        child.start(exchange.job(data["id"], data["module"], sources,
                                 [(c["driver"], c["inputs"]) for c in cases[first:]], data["memory_mb"],
                                 data["timeout"], workdir=scratch))
        return child

    outputs, failed = exchange.run_cases(
        begin(0), begin, lambda child, ended: zygote.finish(child), len(cases), time.monotonic() + data["timeout"],
        lambda *a: b"", timeouts, data.get("case_cpu"), sources,  # no proxies: nothing to answer
        module=data["module"], exercise=data["id"], seconds=data["timeout"])
    if not_imported is not None:
        not_imported.update(failed)
    return outputs


def check_submission(path, exercises=None, directory: Path = CASES_DIR, zygote=None):
    """A report (``report.Report``) of ``path`` (or a ``Submission``) on the public cases.

    ``zygote``: a learner-side process to use and keep (the warm service's); by default one
    for this OS (``isolation/practice.py::learner_side``: confined on Linux), closed at the end."""
    submission = path if isinstance(path, Submission) else load_submission(path)
    ids = list(exercises or available(directory))
    unknown = [e for e in ids if e not in available(directory)]
    if unknown:
        raise ValueError(f"no public cases for {', '.join(unknown)}; "
                         f"available: {', '.join(available(directory))}")
    started = time.monotonic()
    own_zygote = zygote is None
    zygote = zygote or learner_side()
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="mha-check-") as scratch:
            for i, exercise_id in enumerate(ids):
                data = load(exercise_id, directory)
                os.makedirs(f"{scratch}/{i}")
                failed: dict = {}
                outputs = run_exercise(zygote, submission.sources, data, f"{scratch}/{i}", failed)
                results.append(judge(data, outputs))
                results[-1].notes += exchange.stand_in_notes(failed, data["module"], submission.sources)
                results[-1].not_imported = failed
    finally:
        if own_zygote:
            zygote.close()
    return Report(exercises=results, score=round(sum(r.score for r in results), 6),
                  max_score=float(sum(r.max_score for r in results)), seed=PUBLIC_SEED,
                  grader_version=__version__, confinement=zygote.confinement,
                  submission=submission.path, submission_sha256=submission.sha256,
                  versions={"python": sys.version.split()[0], "numpy": np.__version__},
                  wall_time=round(time.monotonic() - started, 3))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.selfcheck", description=(
        "Check your exercises on the public practice cases (your grade uses hidden cases)."))
    parser.add_argument("submission", nargs="?", default="mha_exercises")
    parser.add_argument("--exercise", "-e", action="append", metavar="ID")
    parser.add_argument("--json", metavar="PATH", help="write the report as JSON")
    parser.add_argument("--quiet", "-q", action="store_true")
    args = parser.parse_args(argv)
    try:
        report = check_submission(args.submission, args.exercise)
    except (ValueError, SubmissionError) as err:
        print(f"mha-check: {err}", file=sys.stderr)
        return 2
    if args.json:
        report_mod.write_atomic(args.json, report_mod.to_json(report))
    if args.quiet:
        print(f"{scoring.points(report.shown()[1])}/{scoring.points(report.max_score)}")  # as mha-grade --quiet
    else:
        report_mod.print_table(report)
        print("These are the public practice cases; your grade uses the same checks on hidden cases.")
    if mode() == "spawn":
        print(f"({LABEL}: your code ran in a plain subprocess with a time limit; graded runs are confined, on Linux)")
    return 0


if __name__ == "__main__":
    from .quick_exit import exit_now

    exit_now(main())
