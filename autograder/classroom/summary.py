"""The class summary of a batch: where the class stands and where it struggles.

From the learners' reports: a histogram of the totals, and per exercise the share of the
class that passed it, the mean score, and the most common diagnosed mistakes (the known
bugs the judge recognised, counted once per learner). Rendered as a rich table (terminal),
Markdown (``summary.md``) and a PNG (``summary.png``).
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..spec import POINTS

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
    learners: int
    max_total: float
    totals: list[float]
    histogram: list[tuple[float, float, int]]  # (from, to, learners); the last bin includes its upper end
    exercises: list[ExerciseStats]
    errors: int  # submissions the grader itself could not grade

    @property
    def mean(self) -> float:
        return statistics.fmean(self.totals) if self.totals else 0.0

    @property
    def median(self) -> float:
        return statistics.median(self.totals) if self.totals else 0.0


def summarize(reports: dict[str, dict]) -> ClassStats:
    """Statistics of a class from ``{learner: report dict}``."""
    by_id: dict[str, ExerciseStats] = {}
    totals, errors, max_total = [], 0, 0.0
    for report in reports.values():
        totals.append(float(report.get("score", 0.0)))
        max_total = max(max_total, float(report.get("max_score", 0.0)))
        errors += bool(report.get("error"))
        for ex in report.get("exercises", []):
            s = by_id.setdefault(ex["id"], ExerciseStats(ex["id"], float(ex.get("max_score", 0.0))))
            status = ex.get("status", "error")
            s.statuses[status] += 1
            s.passed += status == "passed"
            s.attempted += status != "not attempted"
            s.total_score += float(ex.get("score", 0.0))
            for diagnosis in {c.get("diagnosis") for c in ex.get("cases", []) if c.get("diagnosis")}:
                s.mistakes[diagnosis] += 1
    max_total = max_total or sum(s.max_score for s in by_id.values()) or 100.0
    width = max_total / BINS
    histogram = []
    for i in range(BINS):
        lo, hi = i * width, (i + 1) * width
        last = i == BINS - 1
        histogram.append((lo, hi, sum(lo <= t < hi or (last and t == hi) for t in totals)))
    order = [e for e in POINTS if e in by_id] + sorted(set(by_id) - set(POINTS))
    return ClassStats(len(reports), max_total, totals, histogram, [by_id[e] for e in order], errors)


def _share(k: int, n: int) -> str:
    return f"{100 * k / n:.0f}%" if n else "-"


def _mistakes(s: ExerciseStats, n: int) -> str:
    return "; ".join(f"{d} ({k}/{n})" for d, k in s.mistakes.most_common(TOP_MISTAKES))


def to_markdown(stats: ClassStats) -> str:
    n = stats.learners
    lines = [
        "# Class summary", "",
        f"{n} learners; total out of {stats.max_total:g}: mean {stats.mean:.1f}, median {stats.median:.1f}"
        + (f"; {stats.errors} submission(s) the grader could not grade" if stats.errors else "") + ".", "",
        "## Totals", "", "| total | learners | |", "|---|---:|---|",
    ]
    peak = max((k for *_, k in stats.histogram), default=0) or 1
    for i, (lo, hi, k) in enumerate(stats.histogram):
        bracket = "]" if i == len(stats.histogram) - 1 else ")"
        lines.append(f"| [{lo:g}, {hi:g}{bracket} | {k} | {'#' * round(20 * k / peak)} |")
    lines += ["", "## Exercises", "",
              "| exercise | points | passed | attempted | mean score | most common diagnosed mistakes |",
              "|---|---:|---:|---:|---:|---|"]
    for s in stats.exercises:
        lines.append(f"| `{s.id}` | {s.max_score:g} | {_share(s.passed, n)} | {_share(s.attempted, n)} "
                     f"| {s.total_score / n if n else 0:.2f} | {_mistakes(s, n) or '-'} |")
    return "\n".join(lines) + "\n"


def to_table(stats: ClassStats):
    from rich.table import Table

    n = stats.learners
    table = Table(title=f"Class summary: {n} learners, mean {stats.mean:.1f} / {stats.max_total:g}, "
                        f"median {stats.median:.1f}")
    columns = (("exercise", "left"), ("points", "right"), ("passed", "right"), ("attempted", "right"),
               ("mean", "right"), ("most common diagnosed mistakes", "left"))
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow="fold")
    for s in stats.exercises:
        table.add_row(s.id, f"{s.max_score:g}", _share(s.passed, n), _share(s.attempted, n),
                      f"{s.total_score / n if n else 0:.2f}", _mistakes(s, n) or "-")
    return table


def plot(stats: ClassStats, path: Path) -> None:
    """``summary.png``: the histogram of totals beside the pass share per exercise."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = stats.learners
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, max(3.5, 0.35 * len(stats.exercises) + 1.5)),
                                      gridspec_kw={"width_ratios": [1, 1.3]})
    width = stats.max_total / len(stats.histogram)
    left.bar([lo for lo, _, _ in stats.histogram], [k for *_, k in stats.histogram], width=width,
             align="edge", color="#4c72b0", edgecolor="white")
    left.set(xlabel=f"total (out of {stats.max_total:g})", ylabel="learners", xlim=(0, stats.max_total),
             title=f"Totals of {n} learners (mean {stats.mean:.1f})")
    left.yaxis.get_major_locator().set_params(integer=True)
    ids = [s.id for s in stats.exercises][::-1]
    passed = [100 * s.passed / n if n else 0 for s in stats.exercises][::-1]
    attempted = [100 * s.attempted / n if n else 0 for s in stats.exercises][::-1]
    right.barh(ids, attempted, color="#dddddd", label="attempted")
    right.barh(ids, passed, color="#55a868", label="passed")
    right.set(xlim=(0, 100), xlabel="% of learners")
    right.set_title("Per exercise", loc="left")
    # Above the bars, never over them.
    right.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize="small", frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
