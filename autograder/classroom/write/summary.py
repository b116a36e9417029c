"""The class summary of a batch: where the class stands and where it struggles.

From the reports (one per submission) and the gradebook's rows (one per learner): how many
learners and how many submissions (a group's is one for several), the mean before penalties
and after penalties and adjustments, the submissions that could not be graded, timed out,
failed to import or had misnamed files, the common mistakes across the class as mistakes
("softmax without subtracting the max first (exp overflows ...): 3 of 42 submissions", most
common first: what to re-teach; each diagnosis in full, so that two mistakes that begin alike
stay apart), a histogram of the totals, and per exercise the share that passed it, the mean
score and its most common mistakes (counted once per submission). Rendered as a rich table
(terminal, on stdout), Markdown (``summary.md``) and a PNG (``summary.png``).
"""
from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ...inert import LearnerText, learner, markdown
from ...said import render
from ...scoring import round_points
from ...spec import POINTS
from ..budget import share

TOP_MISTAKES = 3
BINS = 10  # histogram bars, each a tenth of the maximum total


@dataclass
class ExerciseStats:
    id: str
    max_score: float
    passed: int = 0
    attempted: int = 0
    total_score: float = 0.0
    statuses: Counter = field(default_factory=Counter)
    mistakes: Counter = field(default_factory=Counter)  # diagnosis -> learners


@dataclass
class ClassStats:
    learners: int  # learners with a row (the roster's, or the submitters)
    max_total: float
    totals: list[float]  # per submission, as graded (before penalties and adjustments)
    histogram: list[tuple[float, float, int]]  # (from, to, submissions); the last bin includes its upper end
    exercises: list[ExerciseStats]
    errors: int  # submissions the grader itself could not grade
    submissions: int = 0
    graded_learners: int = 0  # learners with a submission (a group's members each)
    finals: list[float] = field(default_factory=list)  # per learner with a submission, after penalty and adjustments
    late: int = 0  # learners penalised for lateness
    adjusted: int = 0  # learners with an instructor's adjustment
    # what went wrong -> (submission, detail: LearnerText, the learner's file names or a refusal)
    problems: dict[str, list[tuple[str, LearnerText]]] = field(default_factory=dict)
    mistakes: list[tuple[str, str, int]] = field(default_factory=list)  # (mistake, exercise, submissions)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.totals) if self.totals else 0.0

    @property
    def median(self) -> float:
        return statistics.median(self.totals) if self.totals else 0.0

    @property
    def mean_final(self) -> float:
        return statistics.fmean(self.finals) if self.finals else 0.0


# What can go wrong with a whole submission or an exercise, as the summary lists it.
REFUSED = "could not be graded (refused, or the grader was stopped)"
TIMED_OUT = "timed out (an exercise ran past its time)"
IMPORT = "import errors (a module failed to import)"
CRASHED = "crashed (the learner's process died or ran out of memory)"
MISNAMED = "misnamed files (taken under the expected name, or named in a \"did you mean\")"


def mistake(diagnosis: str) -> str:
    """A diagnosis as the mistake it names: "your output matches softmax without subtracting
    the max first (exp overflows ...)" -> "softmax without subtracting the max first"."""
    text = re.sub(r"^your (output|code|result)s? (matches|match)\s+", "", diagnosis.strip(), flags=re.IGNORECASE)
    text = re.sub(r"^your\s+", "", text, flags=re.IGNORECASE)  # "your mask is off by one" -> "mask is off by one"
    text = text.split(": ")[0]  # after a colon comes the advice: the feedback has it
    last = re.search(r"\s+\(([^()]*)\)\s*$", text)  # an explanation in parentheses: the feedback has it too
    if last and len(re.findall(r"[A-Za-z]{2,}", last.group(1))) >= 4:  # not "(dim=1)", "(B, H, d, L)", "(d_k)"
        text = text[:last.start()]
    return text or diagnosis


def named(diagnosis: str) -> str:
    """A diagnosis in full, as the mistake it names: "your output matches softmax without
    subtracting the max first (exp overflows ...)" -> "softmax without subtracting the max
    first (exp overflows ...)"; "your mask is off by one: it hides the diagonal (j < i); ..."
    keeps which of the two off-by-ones it is."""
    text = re.sub(r"^your (output|code|result)s? (matches|match)\s+", "", diagnosis.strip(), flags=re.IGNORECASE)
    return re.sub(r"^your\s+", "", text, flags=re.IGNORECASE) or diagnosis


def summarize(reports: dict[str, dict], rows: list[dict] | None = None, loaded: dict | None = None) -> ClassStats:
    """Statistics of a class from ``{submission: report dict}``; ``rows``: the gradebook's
    rows (learners, final scores); ``loaded``: the submissions as read (misnamed files)."""
    by_id: dict[str, ExerciseStats] = {}
    totals, errors, max_total = [], 0, 0.0
    problems: dict[str, list[tuple[str, LearnerText]]] = {}
    none = LearnerText("", "nothing")
    mistakes: Counter = Counter()
    for name, report in sorted(reports.items()):
        totals.append(float(report.get("score", 0.0)))
        max_total = max(max_total, float(report.get("max_score", 0.0)))
        errors += bool(report.get("error"))
        if report.get("error"):
            why = str(report["error"]).splitlines()[0].split(":")[0]  # the reason, without the list after it
            problems.setdefault(REFUSED, []).append((name, LearnerText(why, "the grader's refusal")))
        statuses = {ex.get("status") for ex in report.get("exercises", [])}
        # by the kind of error the grader recorded for a case, not by the words that tell the learner
        kinds = {(c.get("cause") or {}).get("kind") for ex in report.get("exercises", []) for c in ex.get("cases", [])}
        if "timed out" in statuses:
            problems.setdefault(TIMED_OUT, []).append((name, none))
        if not report.get("error") and "error" in statuses:
            problems.setdefault(IMPORT if "import" in kinds else CRASHED, []).append((name, none))
        for ex in report.get("exercises", []):
            s = by_id.setdefault(ex["id"], ExerciseStats(ex["id"], float(ex.get("max_score", 0.0))))
            status = ex.get("status", "error")
            s.statuses[status] += 1
            s.passed += status == "passed"
            s.attempted += status != "not attempted"
            s.total_score += float(ex.get("score", 0.0))
            for diagnosis in {c.get("diagnosis") for c in ex.get("cases", []) if c.get("diagnosis")}:
                s.mistakes[diagnosis] += 1
                mistakes[(named(diagnosis), ex["id"])] += 1  # in full: two mistakes never share a line
    for name, sub in sorted((loaded or {}).items()):
        if getattr(sub, "misnamed", ()):
            detail = LearnerText("; ".join(sub.misnamed), "file names")
            problems.setdefault(MISNAMED, []).append((name, detail))
    max_total = max_total or sum(s.max_score for s in by_id.values()) or 100.0
    width = max_total / BINS
    histogram = []
    for i in range(BINS):
        lo, hi = i * width, (i + 1) * width
        last = i == BINS - 1
        histogram.append((lo, hi, sum(lo <= t < hi or (last and t == hi) for t in totals)))
    order = [e for e in POINTS if e in by_id] + sorted(set(by_id) - set(POINTS))
    handed = [r for r in rows or [] if r.get("report") is not None]
    return ClassStats(len(rows) if rows is not None else len(reports), max_total, totals, histogram,
                      [by_id[e] for e in order], errors, submissions=len(reports),
                      graded_learners=len(handed) if rows is not None else len(reports),
                      finals=[float(r["final"]) for r in handed] if rows is not None else list(totals),
                      late=sum(r.get("status") == "late" and bool(r.get("late")) for r in handed),
                      adjusted=sum(bool(r.get("adjustments")) for r in rows or []),
                      problems=problems,
                      mistakes=sorted(((m, e, k) for (m, e), k in mistakes.items()), key=lambda t: (-t[2], t[0])))


def _fixed(x: float, places: int = 2) -> str:
    """A mean of points, rounded as every shown score is (halves up): 10.625 is 10.63 here as
    in grades.csv, not float formatting's 10.62."""
    return f"{round_points(x, places):.{places}f}"


def _share(k: int, n: int) -> str:
    return f"{100 * k / n:.0f}%" if n else "-"


def _mistakes(s: ExerciseStats, n: int, fmt: str = "markdown") -> str:
    """The most common diagnoses, through the one renderer (``said.render``): a case's value in
    one is left out, as the cases are hidden."""
    return "; ".join(f"{render(mistake(d), 'text' if fmt == 'markdown' else fmt)} ({k}/{n})" for d, k in s.mistakes.most_common(TOP_MISTAKES))


def _names(names: list[str], limit: int = 30) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def to_markdown(stats: ClassStats, rename=lambda x: x) -> str:
    """``summary.md``; ``rename``: how a submission is named (``anonymous/``: a pseudonym, and
    no file names)."""
    n = stats.submissions
    who = (f"{stats.learners} learners, {stats.graded_learners} with a submission "
           f"({stats.learners - stats.graded_learners} without); {n} submissions"
           + (f" (groups hand in one for several learners)" if stats.graded_learners > n else ""))
    lines = [
        "# Class summary", "", who + ".", "",
        f"Total out of {stats.max_total:g}, per submission as graded: mean {_fixed(stats.mean)}, "
        f"median {_fixed(stats.median)}.",
        f"Per learner with a submission, after late penalties ({stats.late} learners) and adjustments "
        f"({stats.adjusted} learners): mean {_fixed(stats.mean_final)}.", "",
    ]
    lines += ["## What went wrong", ""]
    if stats.problems:
        budgets: dict = {}  # each submission's share of this file (budget.py)
        for kind in (REFUSED, TIMED_OUT, IMPORT, CRASHED, MISNAMED):
            if kind in stats.problems:
                names = [markdown(rename(x)) + (f" ({_detail(d, budgets.setdefault(x, share('summary.md')))})"
                                                if d and rename(x) == x else "")
                         for x, d in stats.problems[kind]]
                lines.append(f"- {sentence(kind)}: {len(names)} of {n} submissions: {_names(names)}")
    else:
        lines.append("Every submission was graded; none timed out, failed to import or was misnamed.")
    lines += ["", "## Common mistakes, most common first (what to re-teach)", ""]
    if stats.mistakes:
        lines += [f"{i}. {render(sentence(m), 'text')} (`{e}`): {k} of {n} submissions"
                  for i, (m, e, k) in enumerate(stats.mistakes, 1)]
    else:
        lines.append("No known mistake was recognised.")
    lines += ["", "## Totals (per submission, as graded)", "", "| total | submissions | |", "|---|---:|---|"]
    peak = max((k for *_, k in stats.histogram), default=0) or 1
    for i, (lo, hi, k) in enumerate(stats.histogram):
        bracket = "]" if i == len(stats.histogram) - 1 else ")"
        lines.append(f"| [{lo:g}, {hi:g}{bracket} | {k} | {'#' * round(20 * k / peak)} |")
    lines += ["", "## Exercises (shares of the submissions)", "",
              "| exercise | points | passed | attempted | mean score | most common mistakes |",
              "|---|---:|---:|---:|---:|---|"]
    for s in stats.exercises:
        lines.append(f"| `{s.id}` | {s.max_score:g} | {_share(s.passed, n)} | {_share(s.attempted, n)} "
                     f"| {_fixed(s.total_score / n if n else 0)} | {_mistakes(s, n) or '-'} |")
    return "\n".join(lines) + "\n"


def _detail(detail: LearnerText, budget) -> str:
    return learner(detail).markdown(budget)


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def to_table(stats: ClassStats):
    from rich.table import Table

    n = stats.submissions
    table = Table(title=f"Class summary: {stats.learners} learners, {n} submissions, mean {_fixed(stats.mean, 1)} / "
                        f"{stats.max_total:g} as graded, {_fixed(stats.mean_final, 1)} after penalties and adjustments")
    columns = (("exercise", "left"), ("points", "right"), ("passed", "right"), ("attempted", "right"),
               ("mean", "right"), ("most common mistakes", "left"))
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow="fold")
    for s in stats.exercises:
        table.add_row(s.id, f"{s.max_score:g}", _share(s.passed, n), _share(s.attempted, n),
                      _fixed(s.total_score / n if n else 0), _mistakes(s, n, "terminal") or "-")
    return table


def plot(stats: ClassStats, path: Path) -> None:
    """``summary.png``: the histogram of totals beside the pass share per exercise."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = stats.submissions
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, max(3.5, 0.35 * len(stats.exercises) + 1.5)),
                                      gridspec_kw={"width_ratios": [1, 1.3]})
    width = stats.max_total / len(stats.histogram)
    left.bar([lo for lo, _, _ in stats.histogram], [k for *_, k in stats.histogram], width=width,
             align="edge", color="#4c72b0", edgecolor="white")
    left.set(xlabel=f"total (out of {stats.max_total:g})", ylabel="submissions", xlim=(0, stats.max_total),
             title=f"Totals of {n} submissions (mean {_fixed(stats.mean, 1)})")
    left.yaxis.get_major_locator().set_params(integer=True)
    ids = [s.id for s in stats.exercises][::-1]
    passed = [100 * s.passed / n if n else 0 for s in stats.exercises][::-1]
    attempted = [100 * s.attempted / n if n else 0 for s in stats.exercises][::-1]
    right.barh(ids, attempted, color="#dddddd", label="attempted")
    right.barh(ids, passed, color="#55a868", label="passed")
    right.set(xlim=(0, 100), xlabel="% of submissions")
    right.set_title("Per exercise", loc="left")
    # Above the bars, never over them.
    right.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize="small", frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
