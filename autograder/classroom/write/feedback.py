"""One feedback file per learner, to hand back: ``feedback/<learner>.md`` and ``..html``.

What a learner may see of their grade: the score per exercise, its status, the judge's
summary and the named diagnoses (the known mistakes the judge recognised), the notes, which
of their files were graded, and any late penalty. Not in it: the cases' inputs and expected
values (the hidden cases stay hidden for the next cohort), paths on the grading machine, the
seed, library versions. The words of the learner's own errors are not in it either: code can
write a hidden case's inputs into an exception's message, its class's name or the file name
it reports, so a failing case's cause is said in the grader's words only (a built-in
exception's name, an exercise module's file, a line number: ``_said``). What learner text it
holds (the learner's id, file names, notes) is :class:`~autograder.inert.LearnerText`, inert
for Markdown and within the learner's share of this file (:mod:`..budget`). The HTML is the
Markdown rendered by ``markdown-it-py`` (a dependency of ``rich``), so the two files say the
same thing.
"""
from __future__ import annotations

import builtins
import html
import re

from ...inert import LearnerText, learner
from ...said import Budget as Words
from ...said import render
from ...scoring import points, sentence
from ...spec import MODULE_OF
from ...submission import MODULES
from ..budget import CELL, share
from ..intake.controls import signed

# The exception names that are Python's own, not the learner's to choose.
BUILTIN_ERRORS = frozenset(n for n, v in vars(builtins).items()
                           if isinstance(v, type) and issubclass(v, BaseException))
FILES = frozenset(f"{m}.py" for m in MODULES)
NOTE_CHARS = 200  # of one note
# The bytes of the learner's code's own words (an exception's type or message, a key it returned,
# the line of its source the grader read) the findings of one file may hold, and of one exercise:
# UTF-8 after Markdown's escaping (``said.render``), so that CJK or any other alphabet carries no
# more. Code can write a hidden case's inputs into those words: this is all it reads out.
WORDS_BYTES = 240
EXERCISE_WORDS_BYTES = 80
# A failing case's kind, in the grader's words (the kinds the learner's words come with: _said).
KIND_WORDS = {"timeout": "timed out", "memory": "ran out of memory",
              "crash": "the process running your code died",
              "not_implemented": "not attempted: the stub still raises NotImplementedError",
              "missing": "not attempted: a function it needs is missing",
              "harness": "the grader's harness failed before your code's result existed",
              "not_run": "not run: the grader stopped the exercise before this case"}


def _score(row: dict, maximum) -> str:
    """The final as the gradebook gets it: scaled to the assignment's points when given, the
    raw points beside (``11.11 / 20`` then ``(10 / 18 points graded)``)."""
    raw = f"{points(row['final'])} / {points(maximum)}"
    if row.get("possible") is None or points(row["possible"]) == points(maximum):
        return f"**Score: {raw}**"
    return f"**Score: {points(row['scaled'])} / {points(row['possible'])}** ({raw} points graded)"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def to_markdown(who: LearnerText, report: dict | None, row: dict, assignment: str) -> str:
    """``who``: the learner's id; ``row``: the learner's gradebook row (``parts``, ``score``,
    ``final``, ``late``, ``adjustments``, ``status``): the numbers shown are the row's, so they
    add up as grades.csv's do."""
    budget = share("feedback")
    lines = [f"# {assignment}: feedback for {learner(who).markdown(budget, CELL)}", ""]
    adjustments = row.get("adjustments") or []
    if row.get("status") == "held":  # the reason names other learners' ids: the instructor's, not said here
        lines += ["**Score: not given yet**", "", "Your submission is held: the ids it was handed in under match "
                  "another submission's, and your instructor decides whose it is. Nothing was graded into "
                  "anyone's row.", ""]
        return "\n".join(lines)
    if report is None:
        lines += [_score(row, row.get('max_total', 100))
                  + (f" (adjusted {signed(row['adjusted'])})" if row.get("adjusted") else ""), "",
                  "No submission was received" + (" yet: the deadline has not passed." if
                                                  row.get("status") == "not yet due" else "."), ""]
        return "\n".join(lines + _adjustments(adjustments, row))
    parts = row.get("parts") or {e["id"]: e["score"] for e in report.get("exercises", [])}
    changed = [f"graded {points(row['score'])}"] if row.get("late") or row.get("adjusted") else []
    if row.get("late"):
        changed.append(row["late"])
    if row.get("adjusted"):
        changed.append(f"adjusted {signed(row['adjusted'])}")
    lines += [_score(row, report.get('max_score', 100))
              + (f" ({'; '.join(changed)})" if changed else ""), ""]
    if report.get("error"):
        error = LearnerText(str(report["error"]).split("\n")[0], "the grader's refusal, naming the learner's")
        lines += [f"The grader could not grade this submission: {error.markdown(budget)}", ""]
    intake = report.get("intake") or {}
    if intake.get("taken"):
        lines += ["Graded from: " + _files(intake["taken"], budget) + "."]
        if intake.get("ignored"):
            lines += ["", "Not graded: " + _files(intake["ignored"], budget) + "."]
        lines += [""]
    lines += ["| exercise | score | status | what the grader found |", "|---|---:|---|---|"]
    changes = {}  # exercise -> points the instructor's adjustments changed it by
    for a in adjustments:
        if a.exercise in parts:
            changes[a.exercise] = changes.get(a.exercise, 0.0) + (row.get("effective") or {}).get(id(a), a.points)
    misnamed = _misnamed(intake.get("ignored") or ())
    words = Words(WORDS_BYTES, EXERCISE_WORDS_BYTES)
    for ex in report.get("exercises", []):
        words.exercise()
        status = ex["status"]
        if status == "not attempted" and MODULE_OF.get(ex["id"]) in misnamed:  # attempted, under another name
            named = LearnerText(misnamed[MODULE_OF[ex["id"]]], "a file's name in the submission")
            status = f"not graded: no {MODULE_OF[ex['id']]}.py (see {named.markdown(budget, CELL)} above)"
        status += (f" (graded {points(ex['score'])}, adjusted {signed(changes[ex['id']])})"
                                 if changes.get(ex["id"]) else "")
        lines.append(f"| `{ex['id']}` | {points(parts.get(ex['id'], ex['score']))}/{points(ex['max_score'])} "
                     f"| {status} | {'<br>'.join(_shown(f, words) for f in _findings(ex)) or '-'} |")
    lines.append(f"| **total** | **{points(row['score'])}/{points(report.get('max_score', 100))}** | | |")
    lines += [""] + _adjustments(adjustments, row)
    lines += ["Cases are drawn at random and kept hidden; the self-check in the course "
              "(`check(...)`) uses practice cases of the same kinds.", ""]
    return "\n".join(lines)


def _misnamed(ignored) -> dict[str, str]:
    """Module -> the file a "did you mean" named for it (``submission/choice.py``'s words)."""
    found = {}
    for said in ignored:
        hit = re.match(r"(.+) \(did you mean (\w+)\.py\?", said)
        if hit:
            found.setdefault(hit.group(2), hit.group(1))
    return found


def _adjustments(adjustments, row: dict) -> list[str]:
    """The instructor's adjustments, each with its reason (an exercise's is in its row's score)."""
    if not adjustments:
        return []
    lines = ["Adjusted by your instructor:", ""]
    for a in adjustments:
        where = "the total" if a.exercise == "total" else f"`{a.exercise}`"
        effective = (row.get("effective") or {}).get(id(a), a.points)
        if a.exercise != "total" and row.get("report") is None:
            where += " (no submission: nothing to adjust there)"
        elif effective != a.points:
            where += f" (an exercise's points stay between 0 and its maximum: {signed(effective)})"
        lines.append(f"- {signed(a.points)} {'point' if abs(a.points) == 1 else 'points'} on {where}: "
                     f"{_cell(a.reason)}")
    return lines + [""]


# The values of a hidden case in the judge's sentences ("got True, expected False", "(got 0.31,
# expected 0.29; tolerance ...)", "(expected 0)"): the feedback keeps where and how, not what.
_VALUES = (re.compile(r" \(got [^()]*, expected [^()]*\)"), re.compile(r" \(expected [^()]*\)"),
           re.compile(r": got [^,;()]+?, expected [\w.+-]*\w"))


def without_values(text: str) -> str:
    for pattern in _VALUES:
        text = pattern.sub("", text)
    return text


def _files(names: list, budget) -> str:
    return "; ".join(LearnerText(n, "a file's name in the submission").markdown(budget, CELL) for n in names)


def _shown(finding, words: Words) -> str:
    """A finding as the Markdown shows it: the grader's words, values of the hidden cases left out
    ("…"), the learner's words within ``words`` (``said.render``, the one renderer)."""
    return render(finding, "markdown", words)


def _said(cause: dict) -> str:
    """A failing case's cause in the grader's words, with nothing the learner's code chose but
    a built-in exception's name, an exercise module's file and a line number."""
    kind = cause.get("kind")
    if kind in KIND_WORDS:
        return KIND_WORDS[kind]
    if kind not in ("exception", "import", "garbage"):
        return "failed"
    if kind == "garbage":
        return "returned something that is not plain data"
    name = cause.get("type") if cause.get("type") in BUILTIN_ERRORS else None
    where = ""
    if isinstance(cause.get("line"), int) and 0 < cause["line"] < 10**7:
        place = cause.get("file") if cause.get("file") in FILES else "your code"
        where = f" at {place}, line {cause['line']}"
    if kind == "import":
        return f"the module does not import ({name or 'an error'}{where})"
    return f"raised {name or 'an exception of its own class'}{where}"


# A line of the learner's code, as the judge quotes it: "(`k = q @ k.T`)". The learner has their
# code; the line the judge names comes from the learner's process, which may write anything there.
_CODE = re.compile(r" ?\(`[^`\n]*`\)")


def _grader_worded(summary: str, ex: dict) -> str:
    """The judge's summary with each failing case's own feedback (which carries the words of the
    learner's error) replaced by its cause in the grader's words, and no quoted line of code."""
    for case in ex.get("cases", []):
        said = case.get("feedback") or ""
        if case.get("passed") or case.get("diagnosis") or not said:
            continue
        cause = case.get("cause") or {}
        if cause.get("kind") == "mismatch":
            continue
        ours = _said(cause)
        summary = summary.replace(sentence(said), sentence(ours)).replace(said, ours)
    return _CODE.sub("", summary)


def _findings(ex: dict) -> list:
    said = []
    if ex.get("feedback"):
        said.append(without_values(_grader_worded(ex["feedback"], ex)))
    diagnoses = {}
    for case in ex.get("cases", []):
        if case.get("diagnosis"):
            diagnoses.setdefault(case["diagnosis"], []).append(case["name"])
    for diagnosis, cases in diagnoses.items():
        if diagnosis.lower() not in " ".join(said).lower():
            said.append(f"{diagnosis} (cases: {', '.join(cases)})")
    failed = [c["name"] for c in ex.get("cases", []) if not c.get("passed") and not c.get("diagnosis")]
    if failed and ex.get("status") in ("partial", "failed"):
        said.append("failing cases: " + ", ".join(failed))
    said += [f"note: {n}" for n in ex.get("notes", [])]  # the grader's notes (the learner's words in slots)
    return said


def to_html(markdown: str, assignment: str, who: LearnerText) -> str:
    """The page of ``markdown``, titled for ``who`` (rendered from the Markdown, whose learner
    text is already inert and escaped: markdown-it writes it as text, with raw HTML off)."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    title = f"{html.escape(assignment)}: feedback for {learner(who).html(cap=CELL)}"
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>"
            "<style>body{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top}"
            "</style></head>\n<body>\n" + body + "</body></html>\n")


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` without any of ``secrets`` (absolute paths of the grading machine, the seed)."""
    # Short strings ("/" as a working folder, a seed of a few digits) would also match honest text.
    for s in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(s, "…")
    return text
