"""A term as an instructor runs one, for tests/test_term.py and ``bench/term_class.py``: a
Canvas roster, four assignments (one or two chapters each), each handed in as Gradescope's
"Export Submissions" with its own deadline, late learners (seconds to days, some past the
cutoff), learners who skip an assignment, extensions and adjustments per assignment, and the
term file that names it all.

What each learner hands in per assignment is planted module by module: the reference solution
(its exercises score their full points) or the unfilled stub (0), the modules a solution calls
solved with it; each file also carries the planted scores as comments (``classbuild.planted``),
so the stand-in grader (``classbuild.planted_grade``) and the real one give the same points.
:func:`expected` then computes every cell of the term's gradebook by the rules the guide
states (book/guides/term.md), independently of the grader's code.
"""
from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from classbuild import Entry, Person, canvas_roster, planted, write_export

from autograder.spec import COURSE, MODULE_OF, POINTS

ROOT = Path(__file__).resolve().parent.parent
ZONE = timezone(timedelta(hours=-8))
# name, chapters, deadline, late penalty (% per started day), cutoff (days), Canvas points
ASSIGNMENTS = (
    ("A1 Attention and masks", (1, 2), datetime(2026, 2, 1, 23, 59, tzinfo=ZONE), 10.0, 3.0, 20),
    ("A2 Heads", (3,), datetime(2026, 2, 15, 23, 59, tzinfo=ZONE), 5.0, None, 10),
    ("A3 The layer", (4, 5), datetime(2026, 3, 1, 23, 59, tzinfo=ZONE), 20.0, 2.0, None),
    ("A4 Efficient attention", (7,), datetime(2026, 3, 15, 23, 59, tzinfo=ZONE), 10.0, 5.0, 30),
)
NEEDS = {"attention": {"masking"}, "layer": {"attention", "masking", "heads"},
         "efficient": {"layer", "attention", "masking", "heads"}}


def exercises_of(chapters) -> list[str]:
    return [e.id for e in COURSE if e.chapter in chapters]


@dataclass
class Work:
    """One learner's part of one assignment."""
    handed: bool = False
    solved: set = field(default_factory=set)
    late: float = 0.0  # seconds after their deadline (negative: before)
    extension: datetime | None = None
    adjustments: list = field(default_factory=list)  # (exercise or "total", points, reason)


@dataclass
class Term:
    folder: Path
    term_file: Path
    people: list
    work: dict  # (login, assignment name) -> Work


def _closed(modules: set) -> set:
    out = set(modules)
    for m in modules:
        out |= NEEDS.get(m, set())
    return out


def build(folder: Path, n: int, seed: int = 1) -> Term:
    rng = random.Random(seed)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    people = [Person(f"Learner{i:03d}, Ann", f"{10000 + i}", f"9{i:05d}", f"s{i:03d}", f"s{i:03d}@uni.example")
              for i in range(n)]
    (folder / "roster.csv").write_text(canvas_roster(people))
    (folder / "controls").mkdir(parents=True, exist_ok=True)
    work = {}
    toml = ['[term]', 'name = "Multi-head attention, spring 2026"', 'roster = "roster.csv"', '']
    for number, (name, chapters, deadline, penalty, cutoff, possible) in enumerate(ASSIGNMENTS, 1):
        # every module the assignment's solutions call is handed in (solved or the stub)
        modules = sorted(_closed({MODULE_OF[e] for e in exercises_of(chapters)} | {"attention", "masking", "heads"}))
        entries = []
        ext_rows, adj_rows = ["learner,deadline"], ["learner,exercise,points,reason"]
        for k, p in enumerate(people):
            w = work[(p.login, name)] = Work()
            if rng.random() < 0.08:
                continue  # skipped this one
            w.handed = True
            w.solved = _closed({m for m in modules if rng.random() < 0.75})
            roll = rng.random()
            w.late = -rng.uniform(600, 86400)
            if roll < 0.06:
                w.late = rng.randint(1, 3599)  # seconds to an hour
            elif roll < 0.14:
                w.late = rng.uniform(3600, 4 * 86400)
            elif roll < 0.17:
                w.late = rng.uniform(5.5 * 86400, 8 * 86400)  # past every cutoff
            if w.late > 0 and k % 3 == 0:
                w.extension = deadline + timedelta(days=1 + k % 4)
                who = (p.login, p.email, p.sis_user, p.canvas_id)[k % 4]
                ext_rows.append(f"{who},{w.extension.isoformat()}")
            if (k + number) % 7 == 0:
                first = exercises_of(chapters)[0]
                w.adjustments = [("total", 2.0, "extra credit: a typo found in the notes, with thanks"),
                                 (first, -1.5, "the docstring was copied, not written")][k % 2:k % 2 + 1]
                for exercise, pts, reason in w.adjustments:
                    adj_rows.append(f'{(p.login, p.email)[k % 2]},{exercise},{pts:g},"{reason}"')
            scores = {e: float(POINTS[e]) if MODULE_OF[e] in w.solved else 0.0 for e in exercises_of(chapters)}
            files = {}
            for m in modules:
                source = ROOT / ("solutions" if m in w.solved else "mha_exercises") / f"{m}.py"
                files[f"{m}.py"] = source.read_text() + (planted(scores)[len("import numpy as np\n"):]
                                                         if m == "attention" else "")
            when = (deadline + timedelta(seconds=w.late)).astimezone(timezone.utc if k % 2 else ZONE)
            # Gradescope keeps microseconds: a whole second keeps the expected lateness exact
            entries.append(Entry(f"submission_{number}{k:05d}", [p], when.replace(microsecond=0), files))
            w.late = (when.replace(microsecond=0) - deadline).total_seconds()
        write_export(folder / "exports" / f"a{number}", entries, assignment=8046600 + number)
        (folder / "controls" / f"a{number}-extensions.csv").write_text("\n".join(ext_rows) + "\n")
        (folder / "controls" / f"a{number}-adjustments.csv").write_text("\n".join(adj_rows) + "\n")
        toml += ['[[assignment]]', f'name = "{name}"', f'chapters = {list(chapters)}',
                 f'submissions = "exports/a{number}"', f'deadline = "{deadline.isoformat()}"',
                 f'late_penalty = {penalty}']
        toml += [f'late_cutoff = {cutoff}'] if cutoff is not None else []
        toml += [f'points = {possible}'] if possible is not None else []
        toml += [f'extensions = "controls/a{number}-extensions.csv"',
                 f'adjustments = "controls/a{number}-adjustments.csv"', '']
    (folder / "term.toml").write_text("\n".join(toml))
    return Term(folder, folder / "term.toml", people, work)


# ------------------------------------------------------------------------ what to expect

def half_up(x) -> Decimal:
    return Decimal(x).quantize(Decimal("0.01"), ROUND_HALF_UP)


def shown(x) -> str:
    return f"{half_up(x):f}".rstrip("0").rstrip(".")


def expected(term: Term) -> dict:
    """``{(login, assignment): (final as Canvas gets it, points possible, status)}``."""
    cells = {}
    for p in term.people:
        for name, chapters, deadline, penalty, cutoff, possible in ASSIGNMENTS:
            w = term.work[(p.login, name)]
            exercises = exercises_of(chapters)
            maximum = sum(Decimal(POINTS[e]) for e in exercises)
            status, final = "no submission", Decimal(0)
            if w.handed:
                parts = {e: Decimal(POINTS[e]) if MODULE_OF[e] in w.solved else Decimal(0) for e in exercises}
                for exercise, pts, _ in w.adjustments:
                    if exercise != "total":
                        adjusted = parts[exercise] + Decimal(str(pts))
                        parts[exercise] = min(Decimal(POINTS[exercise]), max(Decimal(0), adjusted))
                total = sum(parts.values())
                late = w.late - ((w.extension - deadline).total_seconds() if w.extension else 0)
                status, final = "graded", total
                if late > 0:
                    status = "late"
                    if cutoff is not None and late / 86400 > cutoff:
                        final = Decimal(0)
                    else:
                        final = half_up(total * (1 - Decimal(str(min(100.0, math.ceil(late / 86400) * penalty))) / 100))
            extra = [Decimal(str(pts)) for exercise, pts, _ in w.adjustments if exercise == "total"]
            if extra:
                final = max(Decimal(0), final + sum(extra))
            score = shown(final * possible / maximum) if possible else shown(final)
            cells[(p.login, name)] = (score, shown(possible if possible else maximum), status)
    return cells


def check(term: Term, out: Path) -> list[str]:
    """Every cell of ``OUT/term.csv`` and ``OUT/canvas.csv`` against :func:`expected`: what differs."""
    want, wrong = expected(term), []
    with open(Path(out) / "term.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    seen = set()
    for row in rows:
        key = (row["learner"], row["assignment"])
        seen.add(key)
        if key not in want:
            wrong.append(f"term.csv: a row for {key}, who is not in the term")
            continue
        got = (row["final"], row["points_possible"], row["status"])
        if got != want[key]:
            wrong.append(f"term.csv {key}: {got}, planted {want[key]}")
    wrong += [f"term.csv: no row for {key}" for key in sorted(set(want) - seen)]
    with open(Path(out) / "canvas.csv", newline="") as f:
        canvas = list(csv.DictReader(f))
    names = [a[0] for a in ASSIGNMENTS]
    possible = {n: want[(term.people[0].login, n)][1] for n in names}
    if [canvas[0][n] for n in names] != [possible[n] for n in names]:
        wrong.append(f"canvas.csv's Points Possible {[canvas[0][n] for n in names]}, planted {possible}")
    by_login = {row["SIS Login ID"]: row for row in canvas[1:]}
    if list(by_login) != [p.login for p in term.people]:
        wrong.append("canvas.csv does not list the roster's learners, in its order, once each")
    for p in term.people:
        row = by_login.get(p.login, {})
        ids = [row.get(c) for c in ("Student", "ID", "SIS User ID", "Section")]
        if ids != [p.name, p.canvas_id, p.sis_user, p.section]:
            wrong.append(f"canvas.csv {p.login}: ids {ids}")
        for n in names:
            if row.get(n) != want[(p.login, n)][0]:
                wrong.append(f"canvas.csv {p.login} {n}: {row.get(n)!r}, planted {want[(p.login, n)][0]!r}")
    return wrong
