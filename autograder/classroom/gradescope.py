"""Gradescope's ``results.json`` from a grader report, as learners and instructors read it.

    python -m autograder.classroom.gradescope REPORT.json RESULTS.json [--submission DIR]

One Gradescope test per exercise, named by its exercise id, worth the exercise's whole points;
its score is rounded to hundredths, and the submission's score is the sum of those rounded
scores, so the tests add up exactly to the total shown. What each learner sees at once: which
exercises passed, the score, the named diagnoses (the known mistakes the judge recognised),
the case names with a mark each, and which files were graded. What only shows once the
instructor publishes the grades (``after_published``): a zero-point test per exercise with
every case's full feedback, which holds the hidden cases' values. The seed is in no output
(it would let a learner regenerate the hidden cases); the autograder's stdout, which holds the
grader's table, stays hidden from learners (``stdout_visibility``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..spec import POINTS
from .gradebook import points

DETAILS_VISIBILITY = "after_published"


def _round(x: float) -> float:
    return round(float(x), 2)


def results(report: dict, intake: str = "") -> dict:
    seed = report.get("seed")
    tests = []
    total = 0.0
    for ex in report.get("exercises", []):
        score = _round(ex.get("score", 0.0))
        max_score = float(ex.get("max_score", POINTS.get(ex["id"], 0)))
        total += score
        cases = ex.get("cases", [])
        lines = [f"{ex.get('status', 'error')}: {points(score)}/{points(max_score)} points"]
        if ex.get("feedback"):
            lines.append(ex["feedback"])
        diagnoses: dict[str, list[str]] = {}
        for c in cases:
            if c.get("diagnosis"):
                diagnoses.setdefault(c["diagnosis"], []).append(c["name"])
        for d, names in diagnoses.items():
            if d.lower() not in " ".join(lines).lower():
                lines.append(f"Likely cause: {d} (cases: {', '.join(names)})")
        lines += [f"note: {n}" for n in ex.get("notes", [])]
        if cases:
            lines += ["cases:", *(f"{'✔' if c.get('passed') else '✘'} {c['name']}" for c in cases)]
        tests.append({"name": ex["id"], "score": score, "max_score": max_score,
                      "status": "passed" if ex.get("status") == "passed" else "failed",
                      "output": _clean("\n".join(lines), seed), "visibility": "visible"})
        failing = [c for c in cases if not c.get("passed")]
        if failing:
            detail = "\n".join(f"{c['name']}: {c.get('feedback') or 'failed'}" for c in failing)
            tests.append({"name": f"{ex['id']}: details of the failing cases", "score": 0.0, "max_score": 0.0,
                          "status": "failed", "output": _clean(detail, seed), "visibility": DETAILS_VISIBILITY})
    total = _round(total)
    max_total = sum(float(ex.get("max_score", 0)) for ex in report.get("exercises", []))
    output = f"{points(total)}/{points(max_total)} points."
    if report.get("error"):
        output += f" The grader could not grade everything: {report['error']}"
    if intake:
        output += f"\n{intake}"
    output += ("\nEach exercise's cases are drawn at random and hidden; their values show once grades are "
               "published.")
    return {"score": total, "execution_time": report.get("wall_time", 0.0), "output": _clean(output, seed),
            "visibility": "visible", "stdout_visibility": "hidden", "tests": tests}


def _clean(text: str, seed) -> str:
    text = str(text)
    if seed is not None and str(seed) in text and len(str(seed)) > 2:
        text = text.replace(str(seed), "…")
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder.classroom.gradescope", description=__doc__.splitlines()[0])
    p.add_argument("report", type=Path)
    p.add_argument("results", type=Path)
    p.add_argument("--submission", type=Path, help="the submission, to say which files were graded")
    args = p.parse_args(argv)
    report = json.loads(args.report.read_text())
    intake = ""
    if args.submission:
        from ..submission import SubmissionError, load

        try:
            intake = load(args.submission).intake()
        except SubmissionError as err:
            intake = str(err)
        intake = intake.replace(str(args.submission) + "/", "").replace(str(args.submission), "your submission")
    data = results(report, intake)
    from .files import write_atomic

    write_atomic(args.results, json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
