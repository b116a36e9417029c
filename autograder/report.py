"""The grade, three ways: a terminal table (rich), a JSON report, a Gradescope results.json
(written by ``classroom/write/gradescope.py``, the one writer of it).

Learner text in a report is inert from the start (``inert.py``: no escape sequence or other
control reaches a terminal or a file); the terminal table prints it as rich ``Text``, never as
markup, so "[green]100/100[/]" in an exception's message reads as those characters.

Only the grader's process writes reports, and it writes them last, atomically (a temporary
file renamed over the target): whatever the learner's code wrote at those paths while it ran
is replaced, and a reader never sees half a file.
"""
from __future__ import annotations

import dataclasses
import json
import math
import textwrap
from dataclasses import dataclass, field

from .atomic import write_atomic  # noqa: F401  the one copy, for its writers (cli, selfcheck)
from .inert import inert
from .isolation import confine
from .said import Budget, render
from .scoring import points, shown_points
from .spec import ExerciseResult

# How each status reads in the table, and its colour.
STYLE = {"passed": "green", "partial": "yellow", "failed": "red", "not attempted": "dim",
         "error": "magenta", "timed out": "magenta"}


@dataclass
class Report:
    exercises: list[ExerciseResult]
    score: float
    max_score: float
    seed: int
    grader_version: str
    submission: str
    submission_sha256: str  # sha256 over the sorted module sources
    versions: dict = field(default_factory=dict)  # python, numpy, torch
    wall_time: float = 0.0  # seconds
    graded_at: str = ""  # UTC, ISO 8601
    # What confined the learner's code (isolation.confine.status): confined, layers, why.
    confinement: dict = field(default_factory=lambda: _confinement())
    # What the submission's files were: {"taken": [...], "ignored": [...]} (submission.load).
    intake: dict = field(default_factory=dict)

    def __post_init__(self):
        # The submission's file names are the learner's (a zip member may be named anything).
        self.submission = inert(self.submission)
        self.intake = {k: [inert(name) for name in v] if isinstance(v, list) else v for k, v in self.intake.items()}

    def to_dict(self) -> dict:
        return _finite(dataclasses.asdict(self))

    def shown(self) -> tuple[list[float], float]:
        """Each exercise's score and the total as every writer shows them (``scoring.shown_points``)."""
        return shown_points([r.score for r in self.exercises])


# ------------------------------------------------------------------------------ terminal

def table(report: Report, *, width: int | None = None):
    """A rich Table: one row per exercise, the failing cases' feedback in the last column."""
    from rich.table import Table
    from rich.text import Text

    t = Table(title=Text(f"mha-grade: {report.submission}"), title_justify="left", show_lines=False,
              expand=False, width=width)
    t.add_column("exercise", no_wrap=True)
    t.add_column("score", justify="right", no_wrap=True)
    t.add_column("status", no_wrap=True)
    t.add_column("feedback", overflow="fold")
    shown, total = report.shown()
    for r, score in zip(report.exercises, shown):
        t.add_row(Text(r.id), f"{points(score)}/{points(r.max_score)}",
                  Text(r.status, style=STYLE.get(r.status, "")), Text(feedback(r)))
    t.add_section()
    t.add_row(Text("total", style="bold"), Text(f"{points(total)}/{points(report.max_score)}",
                                                style="bold"), "", "")
    return t


def feedback(result: ExerciseResult, *, max_cases: int = 1, budget: Budget | None = None) -> str:
    """The judge's summary, then other failing cases that say something new, then the notes:
    rendered for a terminal (``said.render``: the learner's words within ``budget``, the report's
    for this exercise by default; a case's values shown, as this terminal is the instructor's or,
    on practice cases, the learner's own)."""
    budget = (budget or Budget()).exercise()
    if result.status == "not attempted" and result.cases:  # the same reason for every case
        return render("\n".join([result.cases[0].feedback, *(f"note: {n}" for n in result.notes)]),
                      "terminal", budget, values=True)
    lines = [result.feedback] if result.feedback else []
    shown = 0
    for c in result.cases:
        if shown == max_cases:
            break
        said = c.feedback if c.diagnosis is None else c.diagnosis
        if c.passed or not c.feedback or any(said.lower() in line.lower() for line in lines):
            continue  # the same failure in many cases (an import error) is said once
        lines.append(f"{c.name}: {c.feedback}")
        shown += 1
    lines += [f"note: {n}" for n in result.notes]
    return render("\n".join(lines), "terminal", budget, values=True)


# Below this many columns the table's feedback column is too narrow for words such as
# `mha_exercises/attention.py` (rich folds them mid-word): one block per exercise instead.
WIDE = 110


def print_rows(report: Report, console) -> None:
    """The table's content for a narrow terminal: a line per exercise (id, score, status), then its
    feedback below it, indented and wrapped between words only."""
    from rich.text import Text

    console.print(f"mha-grade: {report.submission}", soft_wrap=True)
    name_width = max([len(r.id) for r in report.exercises] + [len("total")])
    width = max(console.width - 4, 20)
    shown, total = report.shown()
    for r, score in zip(report.exercises, shown):
        line = Text(f"{r.id:<{name_width}}  {points(score) + '/' + points(r.max_score):>8}  ")
        line.append(r.status, style=STYLE.get(r.status, ""))
        console.print(line, soft_wrap=True)
        for paragraph in feedback(r).splitlines():
            for row in textwrap.wrap(paragraph, width, break_long_words=False, break_on_hyphens=False):
                console.print("    " + row, soft_wrap=True, markup=False, highlight=False)
    total = f"{points(total)}/{points(report.max_score)}"
    console.print(Text(f"{'total':<{name_width}}  {total:>8}", style="bold"), soft_wrap=True)


def print_table(report: Report, console=None) -> None:
    from rich.console import Console
    from rich.text import Text

    console = console or Console()
    if console.width < WIDE:
        print_rows(report, console)
    else:
        console.print(table(report))
    if report.intake.get("taken"):
        console.print(Text("graded: " + "; ".join(map(inert, report.intake["taken"]))))
    if report.intake.get("ignored"):
        console.print(Text("not graded: " + "; ".join(map(inert, report.intake["ignored"]))))
    console.print(f"seed {report.seed} · submission sha256 {report.submission_sha256[:12]} · "
                  f"grader {report.grader_version} · {report.wall_time:.2f} s", style="dim")
    warning = confinement_warning(report.confinement)
    if warning:
        console.print(warning, style="bold red")
    elif report.confinement:
        console.print("learner code confined by the kernel: " + ", ".join(report.confinement["layers"]),
                      style="dim")


def confinement_warning(confinement: dict) -> str | None:
    """The loud line when the learner's code ran without the kernel's confinement."""
    if not confinement or confinement.get("confined"):
        return None
    return ("WARNING: the learner's code was NOT confined by the kernel here ("
            f"{confinement.get('why')}): it could read and write whatever the grader's user can, "
            "and reach the network.")


def _confinement() -> dict:
    return confine.status()


# ------------------------------------------------------------------------------ files

def to_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, allow_nan=False)


def _finite(value):
    """JSON without NaN or Infinity (not valid JSON): non-finite numbers become strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
