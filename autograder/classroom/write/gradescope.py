"""Gradescope's ``results.json`` from a grader report: the one writer of it, for
``mha-grade SUB --gradescope PATH`` (``classroom/cli.py``), the bundle's
``run_autograder`` (which runs exactly that) and a report already written:

    python -m autograder.classroom.write.gradescope REPORT.json RESULTS.json [--submission DIR]

One Gradescope test per exercise, named by its exercise id, worth the exercise's whole points;
its score and the submission's total follow ``scoring.shown_points`` (hundredths; the total is
the sum of the shown parts).

What each learner sees at once (``visible``), on cases kept hidden: the score and status of each
exercise, each case's name with a mark, the named diagnoses (the known mistakes the judge
recognised), the case ladder's verdict, the notes, and for every other cause of failure its
kind in the grader's words (an exception's type with its file and line; "the output has the
wrong shape"), with at most a short excerpt of the learner's own text per cause, and at most
``LEARNER_CHARS`` BYTES of learner text per exercise (UTF-8: CJK counts 3 a character), whatever the number of cases: code
that writes a hidden case's inputs into its exception messages reads out no more than that.
Never an expected value, never a case's values, never the seed (it would let a learner
regenerate the hidden cases). What only shows once the instructor publishes the grades
(``after_published``): a zero-point test per exercise with every failing case's full feedback.
The autograder's stdout, which holds the grader's table, stays hidden (``stdout_visibility``).
Every output is plain text (``output_format``), so no learner text is read as HTML or Markdown.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ...inert import inert
from ...said import Budget, cut_bytes, render
from ...scoring import MISMATCH_WORDS, points, sentence, shown_points
from ...spec import POINTS
from ...submission import SubmissionError, load
from ..files import write_atomic
from .feedback import BUILTIN_ERRORS, FILES

DETAILS_VISIBILITY = "after_published"
# Learner text an exercise's visible output may hold: per cause, the exception type's name
# and an excerpt of its message; per exercise, this many characters in all, and this many
# causes named besides the diagnoses (the others are counted, and told after publication).
# All of them in BYTES of UTF-8 (a CJK character is 3): 150 characters of CJK once carried
# 5,145 decoded bytes of a hidden case at once.
NAME_CHARS = 40
EXCERPT_CHARS = 60
LEARNER_CHARS = 150  # bytes per exercise
# Bytes of learner text in all the visible outputs of one submission: under the 300 a learner's
# feedback files hold (a built-in exception's name and an exercise module's file are the grader's
# words, said free: ``_errors``).
VISIBLE_BYTES = 256
DETAILS_BYTES, DETAILS_EXERCISE_BYTES = 4096, 600  # in the details shown after publication
CAUSES_SHOWN = 3
# Errors whose feedback is the grader's own words, with no value of a case (exchange.py, runner.py).
GRADER_WORDED = ("not_implemented", "missing", "timeout", "memory", "crash", "not_run")
FORMAT = "text"  # Gradescope shows an output as text (not HTML, Markdown or ANSI colours)


class _Budget(Budget):
    """The learner bytes the visible outputs have left: ``LEARNER_CHARS`` an exercise (``said.Budget``)."""

    def __init__(self, file_bytes: int = VISIBLE_BYTES):
        super().__init__(file_bytes, LEARNER_CHARS)

    def take(self, text, cap: int) -> str:
        """Learner text (a part of a cause), inert and cut to ``cap`` bytes and what is left."""
        if not text:
            return ""
        cut, size = cut_bytes(inert(" ".join(str(text).split())), "text", min(cap, self.grant()))
        self.spend(size)
        return cut


def _errors(cause: dict, feedback: str, budget: _Budget) -> str:
    """One cause as the visible output says it."""
    kind = cause.get("kind")
    if kind == "mismatch":
        return sentence(MISMATCH_WORDS.get(cause.get("what"), MISMATCH_WORDS["values"]))
    if kind in GRADER_WORDED:
        return sentence(render(feedback, "text", budget))
    if kind not in ("exception", "import", "garbage"):  # a report without the cause's parts
        return "Failed (why is told once grades are published)"
    said = {"exception": "Raised", "import": "The module failed to import:",
            "garbage": "Returned something that is not plain data"}[kind]
    name = cause.get("type") if cause.get("type") in BUILTIN_ERRORS else budget.take(cause.get("type"), NAME_CHARS)
    if name:
        said += f" {name}"
    if cause.get("line") is not None:
        where = cause.get("file") if cause.get("file") in FILES else budget.take(cause.get("file"), NAME_CHARS)
        said += f" at {where + ', ' if where else ''}line {int(cause['line'])}"
    text = budget.take(cause.get("text"), EXCERPT_CHARS)
    return said + (f': "{text}"' if text else "")


def _cause_key(cause: dict, feedback: str) -> tuple:
    if cause.get("kind") == "mismatch":
        return ("mismatch", cause.get("what"))
    if cause.get("kind") in ("exception", "import", "garbage"):
        return (cause["kind"], cause.get("type"), cause.get("file"), cause.get("line"))
    return (cause.get("kind"), feedback if cause.get("kind") in GRADER_WORDED else "")


def visible_output(ex: dict, score: float, budget: _Budget | None = None) -> str:
    """An exercise's immediately visible output (see the module docstring). ``budget``: the
    submission's, shared by its exercises' outputs."""
    cases = ex.get("cases", [])
    status = ex.get("status", "error")
    passed = sum(bool(c.get("passed")) for c in cases)
    lines = [f"{status}: {points(score)}/{points(float(ex.get('max_score', 0)))} points"
             + (f" ({passed} of {len(cases)} cases passed)" if cases else "")]
    budget = (budget or _Budget()).exercise()
    failing = [c for c in cases if not c.get("passed")]
    if status == "not attempted" and failing:  # one reason for every case, in the grader's words
        lines.append(sentence(render(failing[0].get("feedback", ""), "text", budget)))
        failing = []
    elif not cases and ex.get("feedback"):  # no case results: the grader failed on the exercise
        lines.append(render(ex["feedback"], "text", budget))
    diagnoses: dict[str, list[str]] = {}
    causes: dict[tuple, list] = {}
    for c in failing:
        if c.get("diagnosis"):
            diagnoses.setdefault(c["diagnosis"], []).append(c["name"])
        else:
            cause, said = c.get("cause") or {"kind": "unknown"}, c.get("feedback", "")
            causes.setdefault(_cause_key(cause, said), [cause, said, []])[2].append(c["name"])
    for diagnosis, names in diagnoses.items():
        lines.append(f"Likely cause: {render(diagnosis, 'text', budget)} (in {_cases(names)})")
    ordered = sorted(causes.values(), key=lambda g: -len(g[2]))  # the most frequent first
    for cause, feedback, names in ordered[:CAUSES_SHOWN]:
        lines.append(f"{_errors(cause, feedback, budget)} (in {_cases(names)})")
    if len(ordered) > CAUSES_SHOWN:
        rest = sum(len(g[2]) for g in ordered[CAUSES_SHOWN:])
        lines.append(f"{len(ordered) - CAUSES_SHOWN} other cause(s) in {rest} case(s): "
                     "told once grades are published")
    if ex.get("ladder"):
        lines.append(render(ex["ladder"], "text", budget))
    lines += [f"note: {render(n, 'text', budget)}" for n in ex.get("notes", [])]
    if cases:
        lines += ["cases:", *(f"{'✔' if c.get('passed') else '✘'} {inert(c['name'])}" for c in cases)]
    return "\n".join(lines)


def _cases(names: list[str]) -> str:
    """"2 cases: a; b", or "7 cases" when more (the list of cases below marks each)."""
    count = f"{len(names)} case{'s' * (len(names) != 1)}"
    return count + (": " + "; ".join(inert(n) for n in names) if len(names) <= 2 else "")


def results(report: dict, intake: str | None = None) -> dict:
    """Gradescope's results.json for a report (``Report.to_dict()`` or its JSON). ``intake``:
    which files were graded, in words; by default the report's own ``intake``."""
    seed = report.get("seed")
    exercises = report.get("exercises", [])
    shown, total = shown_points([ex.get("score", 0.0) for ex in exercises])
    tests = []
    visible, details = _Budget(), Budget(DETAILS_BYTES, DETAILS_EXERCISE_BYTES)
    for ex, score in zip(exercises, shown):
        max_score = float(ex.get("max_score", POINTS.get(ex["id"], 0)))
        tests.append({"name": ex["id"], "score": score, "max_score": max_score,
                      "status": "passed" if ex.get("status") == "passed" else "failed",
                      "output": _clean(visible_output(ex, score, visible), seed), "output_format": FORMAT,
                      "visibility": "visible"})
        failing = [c for c in ex.get("cases", []) if not c.get("passed")]
        if failing:
            details.exercise()  # the learner's words within a budget; a hidden case's values never
            detail = "\n".join(f"{inert(c['name'])}: {render(c.get('feedback') or 'failed', 'text', details)}"
                               for c in failing)
            tests.append({"name": f"{ex['id']}: details of the failing cases", "score": 0.0, "max_score": 0.0,
                          "status": "failed", "output": _clean(detail, seed), "output_format": FORMAT,
                          "visibility": DETAILS_VISIBILITY})
    max_total = sum(float(ex.get("max_score", 0)) for ex in exercises)
    output = f"{points(total)}/{points(max_total)} points."
    if report.get("error"):
        output += f" The grader could not grade everything: {_cut(report['error'], 300)}"
    if intake is None:
        intake = _intake(report.get("intake") or {})
    if intake:
        output += f"\n{_cut(intake, 1000)}"
    output += ("\nEach exercise's cases are drawn at random and hidden; their values, and the full messages "
               "of your code's errors, show once grades are published.")
    return {"score": total, "execution_time": report.get("wall_time", 0.0), "output": _clean(output, seed),
            "output_format": FORMAT, "test_output_format": FORMAT, "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def refused(why: str, exercises: list[str] | None = None) -> dict:
    """Gradescope's results.json for a submission refused whole (no exercise file in it, its
    files over the grader's caps, a file its reader could not parse): every exercise a test at
    0, and why, as the learner's to fix. ``why`` names the learner's files: shown inert."""
    why = _cut(why, 300)
    tests = [{"name": e, "score": 0.0, "max_score": float(POINTS[e]), "status": "failed",
              "output": "Not graded: nothing in the submission could be graded (see above).",
              "output_format": FORMAT, "visibility": "visible"} for e in exercises or POINTS]
    return {"score": 0.0, "execution_time": 0.0, "output": f"Nothing could be graded: {why}",
            "output_format": FORMAT, "test_output_format": FORMAT, "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def _cut(text, limit: int) -> str:
    """Inert ``text`` cut to ``limit`` bytes of UTF-8."""
    return cut_bytes(inert(str(text)), "text", limit)[0]


def _intake(intake: dict) -> str:
    text = ("Graded: " + "; ".join(intake["taken"])) if intake.get("taken") else ""
    if intake.get("ignored"):
        text += ". Not graded: " + "; ".join(intake["ignored"])
    return text


def _clean(text: str, seed) -> str:
    text = str(text)
    if seed is not None and str(seed) in text and len(str(seed)) > 2:
        text = text.replace(str(seed), "…")
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder.classroom.write.gradescope", description=__doc__.splitlines()[0])
    p.add_argument("report", type=Path)
    p.add_argument("results", type=Path)
    p.add_argument("--submission", type=Path, help="the submission, to say which files were graded")
    args = p.parse_args(argv)
    report = json.loads(args.report.read_text())
    intake = None
    if args.submission:
        try:
            intake = load(args.submission).intake()
        except SubmissionError as err:
            intake = str(err)
        intake = intake.replace(str(args.submission) + "/", "").replace(str(args.submission), "your submission")
    data = results(report, intake)
    write_atomic(args.results, json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
