"""One feedback file per learner, to hand back: ``feedback/<learner>.md`` and ``.html``.

What a learner may see of their grade: the score per exercise, its status, the judge's
summary and the named diagnoses (the known mistakes the judge recognised), the notes, which
of their files were graded, and any late penalty. Not in it: the cases' inputs and expected
values (the hidden cases stay hidden for the next cohort), paths on the grading machine, the
seed, library versions. The HTML is the Markdown rendered by ``markdown-it-py`` (a
dependency of ``rich``), so the two files say the same thing.
"""
from __future__ import annotations

import html
import re

from ..inert import markdown
from ..scoring import points
from ..spec import MODULE_OF
from .controls import signed


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def to_markdown(learner: str, report: dict | None, row: dict, assignment: str) -> str:
    """``row``: the learner's gradebook row (``parts``, ``score``, ``final``, ``late``,
    ``adjustments``, ``status``): the numbers shown are the row's, so they add up as
    grades.csv's do."""
    lines = [f"# {assignment}: feedback for {learner}", ""]
    adjustments = row.get("adjustments") or []
    if report is None:
        lines += [f"**Score: {points(row['final'])} / {points(row.get('max_total', 100))}**"
                  + (f" (adjusted {signed(row['adjusted'])})" if row.get("adjusted") else ""), "",
                  "No submission was received.", ""]
        return "\n".join(lines + _adjustments(adjustments, row))
    parts = row.get("parts") or {e["id"]: e["score"] for e in report.get("exercises", [])}
    changed = [f"graded {points(row['score'])}"] if row.get("late") or row.get("adjusted") else []
    if row.get("late"):
        changed.append(row["late"])
    if row.get("adjusted"):
        changed.append(f"adjusted {signed(row['adjusted'])}")
    lines += [f"**Score: {points(row['final'])} / {points(report.get('max_score', 100))}**"
              + (f" ({'; '.join(changed)})" if changed else ""), ""]
    if report.get("error"):
        lines += [f"The grader could not grade this submission: {markdown(report['error'].splitlines()[0])}", ""]
    intake = report.get("intake") or {}
    if intake.get("taken"):
        lines += ["Graded from: " + "; ".join(map(markdown, intake["taken"])) + "."]
        if intake.get("ignored"):
            lines += ["", "Not graded: " + "; ".join(map(markdown, intake["ignored"])) + "."]
        lines += [""]
    lines += ["| exercise | score | status | what the grader found |", "|---|---:|---|---|"]
    changes = {}  # exercise -> points the instructor's adjustments changed it by
    for a in adjustments:
        if a.exercise in parts:
            changes[a.exercise] = changes.get(a.exercise, 0.0) + (row.get("effective") or {}).get(id(a), a.points)
    misnamed = _misnamed(intake.get("ignored") or ())
    for ex in report.get("exercises", []):
        status = ex["status"]
        if status == "not attempted" and MODULE_OF.get(ex["id"]) in misnamed:  # attempted, under another name
            status = f"not graded: no {MODULE_OF[ex['id']]}.py (see {markdown(misnamed[MODULE_OF[ex['id']]])} above)"
        status += (f" (graded {points(ex['score'])}, adjusted {signed(changes[ex['id']])})"
                                 if changes.get(ex["id"]) else "")
        lines.append(f"| `{ex['id']}` | {points(parts.get(ex['id'], ex['score']))}/{points(ex['max_score'])} "
                     f"| {status} | {'<br>'.join(markdown(f) for f in _findings(ex)) or '-'} |")
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


def _findings(ex: dict) -> list[str]:
    said = []
    if ex.get("feedback"):
        said.append(without_values(ex["feedback"]))
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
    said += [f"note: {n}" for n in ex.get("notes", [])]
    return said


def to_html(markdown: str, title: str) -> str:
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top}"
            "</style></head>\n<body>\n" + body + "</body></html>\n")


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` without any of ``secrets`` (absolute paths of the grading machine, the seed)."""
    # Short strings ("/" as a working folder, a seed of a few digits) would also match honest text.
    for s in sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True):
        text = text.replace(s, "…")
    return text
