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
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from . import __version__
from .spec import POINTS, Case, CaseError, CaseResult, ExerciseResult

CASES_DIR = Path(__file__).resolve().parent / "public_cases"
PUBLIC_SEED = 20240601  # the hidden grading seed is another one (scripts/build_gradescope.py)
META_KEYS = ("result_type", "len", "types", "args_after", "kwargs_after")
NOT_ATTEMPTED = ("not_implemented", "missing")
WHAT = {"not_implemented": "not attempted: the stub still raises NotImplementedError",
        "missing": "not attempted", "import": "the module failed to import", "exception": "raised",
        "timeout": "timed out", "memory": "ran out of memory", "crash": "the process running your code died",
        "garbage": "returned something that is not plain data"}


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


def store(exercise, cases: list[Case], expected: list[dict], bugs: list[dict[str, dict]],
          directory: Path) -> None:
    """Write one exercise's public cases: ``<id>.json`` (structure) and ``<id>.npz`` (arrays)."""
    arrays: dict = {}
    data = {
        "id": exercise.id, "module": exercise.module, "points": exercise.points, "timeout": exercise.timeout,
        "memory_mb": exercise.memory_mb, "seed": PUBLIC_SEED,
        "cases": [{"name": c.name, "driver": c.driver, "inputs": _encode(c.inputs, arrays),
                   "weight": c.weight, "rtol": c.rtol, "atol": c.atol, "properties": list(c.properties),
                   "timeout": c.timeout,
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


# --------------------------------------------------------------------------- comparing

def _where(flat: int, shape) -> tuple:
    return tuple(map(int, np.unravel_index(flat, shape)))


def compare(name: str, got, expected, rtol: float, atol: float) -> str | None:
    """None when ``got`` matches ``expected`` (plain data), else what differs, in one sentence."""
    if isinstance(expected, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"{name} is {type(got).__name__}, expected an array"
        if got.shape != expected.shape:
            return f"{name} has shape {got.shape}, expected {expected.shape}"
        if got.dtype != expected.dtype:
            return f"{name} has dtype {got.dtype}, expected {expected.dtype}"
        if expected.dtype.kind != "f":
            wrong = np.flatnonzero(got != expected)
            return None if not wrong.size else (f"{name} is wrong at {wrong.size} of {got.size} entries, "
                                                 f"first at index {_where(wrong[0], got.shape)}")
        g, e = got.astype(np.float64), expected.astype(np.float64)
        both = (np.isnan(g) & np.isnan(e)) | (np.isinf(g) & (g == e))
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.where(both, 0.0, np.where(np.isfinite(e) & np.isfinite(g), np.abs(g - e), np.inf))
            bad = err > atol + rtol * np.abs(np.where(np.isfinite(e), e, 0.0))
        if not bad.any():
            return None
        worst = int(np.argmax(np.where(bad, err, -1.0)))
        return (f"{name} differs at {int(bad.sum())} of {g.size} entries; the largest error is "
                f"{err.flat[worst]:.3g} at index {_where(worst, g.shape)} "
                f"(got {g.flat[worst]:.6g}, expected {e.flat[worst]:.6g})")
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{name} is {type(got).__name__}, expected a dict"
        messages = (compare(f"{name}[{k}]", got.get(k), v, rtol, atol) for k, v in expected.items())
        return next((m for m in messages if m), None)
    if isinstance(expected, float) and type(got) in (int, float):
        close = np.isclose(got, expected, rtol=rtol, atol=atol)
        return None if close else f"{name} is {got}, expected {expected}"
    if type(expected) is int and isinstance(got, np.ndarray) and got.shape == ():
        got = got.item()  # a NumPy integer scalar counts as the int it holds
    try:
        same = type(got) is type(expected) and bool(got == expected)
    except Exception:  # noqa: BLE001  (a list holding arrays)
        same = False
    return None if same else f"{name} is {got!r}, expected {expected!r}"[:300]


def check_case(case: dict, got, properties: bool = True) -> list[str]:
    """Why ``got`` (the driver's output in the learner's process) fails ``case``; [] when it passes.

    ``properties=False`` compares the values only: how a learner's output is matched with a
    known bug's (whose rows need not sum to one)."""
    if not isinstance(got, dict):
        return [f"returned data of the wrong form ({type(got).__name__})"]
    expected, reasons = case["expected"], []
    names = [k for k in expected if k not in META_KEYS and not k.startswith("_")]
    if any(k not in got for k in names):
        want = expected.get("result_type"), expected.get("len")
        return [f"returned a {got.get('result_type')} of length {got.get('len')}, expected a {want[0]}"
                + (f" of length {want[1]}" if want[1] is not None else "")]
    key = "weights" if "weights" in expected else "out"
    g, e = got.get(key), expected.get(key)
    arrays = isinstance(g, np.ndarray) and isinstance(e, np.ndarray) and g.shape == e.shape
    props = case["properties"] if properties else ()
    if "masked_exactly_zero" in props and arrays and ((e == 0) & (g != 0)).any():
        reasons.append("masked entries must be exactly 0")
    if "rows_sum_to_one" in props and arrays and g.dtype.kind == "f":
        axis = case["inputs"].get("kwargs", {}).get("axis", -1)
        if not np.allclose(g.astype(np.float64).sum(axis), e.astype(np.float64).sum(axis), rtol=0, atol=1e-5):
            reasons.append("the rows do not sum to one (fully masked rows: to zero)")
    for k in names:
        label = "the result" if names == ["out"] else k
        message = compare(label, got[k], expected[k], case["rtol"], case["atol"])
        if message:
            reasons.append(message)
            break
    if "inputs_unchanged" in case["properties"]:
        before = case["inputs"].get("args", [])
        after = got.get("args_after") or []
        for i, (b, a) in enumerate(zip(before, after), 1):
            if isinstance(b, np.ndarray) and not (isinstance(a, np.ndarray) and a.shape == b.shape
                                                   and np.array_equal(a, b, equal_nan=b.dtype.kind == "f")):
                reasons.append(f"argument {i} was modified in place (exercises never modify their inputs)")
    return reasons


def judge(data: dict, outputs: list) -> ExerciseResult:
    """Score one exercise from the learner's outputs on its stored cases."""
    total = sum(c["weight"] for c in data["cases"]) or 1.0
    results, kinds = [], []
    for case, got in zip(data["cases"], outputs):
        share = data["points"] * case["weight"] / total
        if isinstance(got, CaseError):
            kinds.append(got.kind)
            text = WHAT.get(got.kind, got.kind) + (f": {got.message}" if got.message else "")
            results.append(CaseResult(case["name"], 0.0, share, False, text))
            continue
        reasons = check_case(case, got)
        diagnosis = None
        if reasons:  # a known bug whose stored output the learner's matches names the cause
            diagnosis = next((d for d, out in case["bugs"].items()
                              if not check_case({**case, "expected": out}, got, properties=False)), None)
        feedback = "; ".join(reasons[:2])
        if diagnosis:
            feedback = f"{diagnosis[:1].upper()}{diagnosis[1:]} ({feedback})"
        score = 0.0 if reasons else share
        results.append(CaseResult(case["name"], score, share, not reasons, feedback, diagnosis))
    score = round(sum(r.score for r in results), 9)
    if kinds and len(kinds) == len(outputs) and all(k in NOT_ATTEMPTED for k in kinds):
        status = "not attempted"
    elif "timeout" in kinds:
        status = "timed out"
    elif any(k in ("import", "crash", "memory") for k in kinds):
        status = "error"
    else:
        status = "passed" if score >= data["points"] - 1e-9 else ("partial" if score > 0 else "failed")
    first = next((r.feedback for r in results if not r.passed), "")
    return ExerciseResult(data["id"], status, score, float(data["points"]), results, first)


# --------------------------------------------------------------------------- running

def run_exercise(zygote, sources: dict[str, str], data: dict, scratch: str) -> list:
    """The learner's outputs on the stored cases, from a confined child (as the grader does)."""
    from .isolation import sandbox

    cases = data["cases"]
    child = zygote.launch()
    job = {"exercise": data["id"], "module": data["module"], "sources": sources, "proxies": {},
           "cases": [[c["driver"], c["inputs"]] for c in cases], "memory_mb": data["memory_mb"],
           "cpu_seconds": data["timeout"] + 1, "workdir": scratch}
    child.start(job)
    try:
        outputs, ended = child.collect(len(cases), time.monotonic() + data["timeout"],
                                       lambda *a: b"")  # no proxies: nothing to answer
    finally:
        status = zygote.finish(child)
    if ended == "timeout":
        missing = CaseError("timeout", f"no result within {data['timeout']:g} s "
                                       "(an infinite loop, or far too slow)")
    elif ended == "closed":
        missing = sandbox.describe_exit(status)
    else:
        missing = CaseError("garbage", "no result for this case")
    return [missing if o is None else o for o in outputs]


def check_submission(path, exercises=None, directory: Path = CASES_DIR, zygote=None):
    """A report (``report.Report``) of ``path`` (or a ``Submission``) on the public cases.

    ``zygote``: a learner-side process to use and keep (the warm service's); by default one
    for this OS (``practice.learner_side``: confined on Linux), closed at the end."""
    import os

    from .practice import learner_side
    from .report import Report
    from .submission import Submission, load as load_submission

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
                results.append(judge(data, run_exercise(zygote, submission.sources, data, f"{scratch}/{i}")))
    finally:
        if own_zygote:
            zygote.close()
    return Report(exercises=results, score=round(sum(r.score for r in results), 6),
                  max_score=float(sum(r.max_score for r in results)), seed=PUBLIC_SEED,
                  grader_version=__version__,
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
    from . import report as report_mod
    from .submission import SubmissionError

    try:
        report = check_submission(args.submission, args.exercise)
    except (ValueError, SubmissionError) as err:
        print(f"mha-check: {err}", file=sys.stderr)
        return 2
    if args.json:
        report_mod.write_atomic(args.json, report_mod.to_json(report))
    if args.quiet:
        print(f"{report.score:g}/{report.max_score:g}")
    else:
        report_mod.print_table(report)
        print("These are the public practice cases; your grade uses the same checks on hidden cases.")
    from .practice import LABEL, mode

    if mode() == "spawn":
        print(f"({LABEL}: your code ran in a plain subprocess with a time limit; graded runs are confined, on Linux)")
    return 0


if __name__ == "__main__":
    from .quick_exit import exit_now

    exit_now(main())
