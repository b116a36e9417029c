"""The class's gradebook: who is in the class, when they handed in, and what the LMS imports.

* **Roster** (``--roster FILE``): one learner id per line, or a gradebook CSV exported from
  Canvas (its ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID`` and ``Section`` columns;
  a submission is matched to a row by any of the three ids, or, from a Gradescope export, by
  its submitter's sid or email). Every learner on it gets a row, "no submission" when nothing
  was handed in.
* **Lateness** (``--deadline``, ``--late-penalty``, ``--late-cutoff``): the submission time is
  Gradescope's ``created_at``, from the class's export (``submission_metadata.yml``, read by
  :mod:`.gradescope_export`), otherwise the newest modification time of the submission's
  files; never a file inside the learner's folder (theirs to write). ``grades.csv`` says which.
  A penalty of P percent of the score per started day late, and/or a cutoff after which the
  score is 0; a learner's extension (:mod:`.controls`) replaces the deadline for them. How late
  is said in days, hours, minutes and seconds as measured, the penalty's rounding beside it
  ("5 min 10 s late: -10% (1 started day at 10% a day)").
* **Canvas CSV** (``canvas.csv``): Canvas's gradebook import layout: the identifying columns
  (``Student, ID, SIS User ID, SIS Login ID, Section``), one column named for the assignment,
  and a ``Points Possible`` row under the header. Canvas creates the assignment on import
  when no column of that name exists yet.
"""
from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..inert import learner
from ..scoring import points, round_points
from ..submission.files import folders
from ..submission.limits import MAX_FILES
from .budget import CELL, share

CANVAS_ID_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
DAY = 86400.0


class RosterError(ValueError):
    pass


@dataclass
class Learner:
    id: str  # the id used in our files
    canvas: dict = field(default_factory=dict)  # the Canvas row's identifying columns, when known
    aliases: tuple[str, ...] = ()  # ids a submission folder may be named by


def read_roster(path: Path) -> list[Learner]:
    """The learners of ``path``: a Canvas gradebook export, or one id per line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise RosterError(f"the roster {path} cannot be read ({err})") from None
    first = text.splitlines()[0] if text.strip() else ""
    learners = []
    seen: dict[str, tuple[int, str]] = {}  # an id (any column) -> (line, column) of the row that has it

    def unique(value: str, line: int, column: str) -> None:
        # Every id that names a person names one: a second row with it would take the first's grade.
        if _same(value) in seen:
            first, where = seen[_same(value)]
            raise RosterError(f"the roster {path}: line {line} has the {column} {value!r} of line {first} "
                              f"({where}): one id must name one learner")
        seen[_same(value)] = (line, column)

    if "SIS User ID" in first or first.startswith("Student,"):
        reader = csv.DictReader(io.StringIO(text))
        for row in reader:
            name = (row.get("Student") or "").strip()
            if not name or name.startswith("Points Possible") or name == "Student, Test":
                continue  # Canvas's second row, and its test student
            ids = [(row.get(c) or "").strip() for c in ("SIS Login ID", "SIS User ID", "ID")]
            for column, value in zip(("SIS Login ID", "SIS User ID", "ID"), ids):
                if value and value not in ids[:("SIS Login ID", "SIS User ID", "ID").index(column)]:
                    unique(value, reader.line_num, column)
            ids = list(dict.fromkeys(i for i in ids if i))
            if not ids:
                raise RosterError(f"the roster {path}: {name!r} has no ID, SIS User ID or SIS Login ID")
            learners.append(Learner(ids[0], {c: (row.get(c) or "").strip() for c in CANVAS_ID_COLUMNS},
                                    tuple(ids)))
    else:
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if line:
                unique(line, number, "id")
                learners.append(Learner(line, {}, (line,)))
    if not learners:
        raise RosterError(f"the roster {path} lists no learner")
    return learners


def match_roster(roster: list[Learner], submitters: list[Learner]) -> tuple[dict[str, str], list[str]]:
    """``({submitter id: roster id}, [submitters not on the roster])``: a submitter is on the
    roster when any of its ids (a folder name, or a sid and an email) is one of a row's."""
    alias = {_same(a): l.id for l in roster for a in l.aliases}
    matched, strangers = {}, []
    for who in submitters:
        found = [alias[_same(a)] for a in who.aliases if _same(a) in alias]
        if found:
            matched[who.id] = found[0]
        else:
            strangers.append(who.id)
    return matched, strangers


def class_people(roster: list[Learner] | None, claims: dict[str, list[Learner]]):
    """``(people, owner, strangers)``: every learner who gets a row (the roster's in its
    order, then the submitters not on it; without a roster, the submitters by id), each
    submitter's id in the class files (``owner``: the roster's id where they are on it), and
    the submitters not on the roster."""
    submitters = [who for name in sorted(claims) for who in claims[name]]
    if roster is None:
        return sorted(submitters, key=lambda who: who.id), {who.id: who.id for who in submitters}, []
    owner, strangers = match_roster(roster, submitters)
    owner.update({s: s for s in strangers})
    return list(roster) + [who for who in submitters if who.id in strangers], owner, strangers


def _same(alias: str) -> str:
    return alias.casefold() if "@" in alias else alias  # an email's case means nothing


# ------------------------------------------------------------------------------- lateness

@dataclass(frozen=True)
class LatePolicy:
    deadline: datetime  # aware
    penalty_per_day: float = 0.0  # percent of the score per started day late
    cutoff_days: float | None = None  # later than this: score 0

    def apply(self, score: float, submitted: datetime | None,
              deadline: datetime | None = None) -> tuple[float, float, str]:
        """``(score after the policy, days late, what happened)``; ``deadline``: the learner's
        own (an extension), else the class's. The score after it is rounded as every shown
        score is (:func:`autograder.scoring.round_points`)."""
        deadline = deadline or self.deadline
        if submitted is None:
            return score, 0.0, ""
        seconds = (submitted - deadline).total_seconds()
        if seconds <= 0:
            return score, 0.0, ""
        late = seconds / DAY
        words = late_words(seconds)
        if self.cutoff_days is not None and late > self.cutoff_days:
            return 0.0, late, f"{words} late, after the {self.cutoff_days:g}-day cutoff: 0 points"
        days = math.ceil(late)
        percent = min(100.0, days * self.penalty_per_day)
        if not percent:
            return score, late, f"{words} late: no penalty"
        why = (f"{words} late: -{percent:g}% ({days} started {'day' if days == 1 else 'days'} at "
               f"{self.penalty_per_day:g}% a day{', at most 100%' if percent == 100 else ''})")
        return round_points(score * (1.0 - percent / 100.0)), late, why


def late_words(seconds: float) -> str:
    """How late, as measured, to the second: "5 min 10 s", "1 day 30 s", "3 days 2 h" (every
    unit that is not 0; the fraction of a second dropped). The penalty's own rounding (started
    days) is said beside it, never folded into it."""
    whole = int(seconds)
    if whole < 1:
        return "less than 1 s"
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} day{'' if days == 1 else 's'}"] if days else []
    parts += [f"{n} {unit}" for n, unit in ((hours, "h"), (minutes, "min"), (secs, "s")) if n]
    return " ".join(parts)


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; without a time zone it is taken as UTC (and said so in --help)."""
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not a date and time (give e.g. 2026-03-01T23:59+01:00)") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def gradescope_time(value) -> datetime:
    """Gradescope's ``created_at``: an ISO 8601 text (``submission_metadata.json``) or, as
    ``yaml.safe_load`` reads the export's ``2026-03-01 22:58:05.746365000 Z``, a datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a date and time")
    return parse_time(value.replace(" Z", "Z"))


# Where a submission time comes from, as grades.csv and the report say it.
FROM_EXPORT = "submission_metadata.yml"
FROM_FILES = "file time"


def submitted_at(path: Path, created_at=None) -> tuple[datetime | None, str]:
    """When ``path`` was handed in, and where that time comes from: ``created_at`` when the
    class's export gives it (the instructor's file), else the newest time of the submission's
    files (the documented fallback, looked at within the walk's limits). Never a file inside
    the learner's folder: a ``submission_metadata.json`` there is the learner's to write, and
    a time it states is no fact."""
    path = Path(path)
    if created_at is not None:
        return gradescope_time(created_at), FROM_EXPORT
    try:
        if path.is_dir() and not path.is_symlink():
            newest = _newest(path)
            if newest is None:
                return None, ""
        else:
            newest = path.lstat().st_mtime
    except OSError:
        return None, ""
    return datetime.fromtimestamp(newest, timezone.utc), FROM_FILES


def _newest(folder: Path) -> float | None:
    """The newest modification time of the files in ``folder``, within the submission walk's
    limits (depth, entries: ``submission.files.folders``)."""
    newest, seen = None, 0
    for where, _, _, names in folders(folder, lambda note: None):
        for name in names:
            seen += 1
            if seen > MAX_FILES:
                return newest
            try:
                t = os.lstat(os.path.join(where, name)).st_mtime
            except OSError:
                continue
            newest = t if newest is None else max(newest, t)
    return newest


# ---------------------------------------------------------------------------------- Canvas

def canvas_csv(rows: list[dict], assignment: str, maximum: float) -> str:
    """Canvas's import layout; ``rows``: ``{"ids": {column: LearnerText}, "score": float | None}``
    (the identifying columns: a Gradescope ``:name:`` or sid is the learner's to write, so each
    cell is escaped for a spreadsheet, within the learner's share of this file), the scores as
    every class file shows them (:func:`points`)."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow([*CANVAS_ID_COLUMNS, assignment])
    w.writerow(["Points Possible", "", "", "", "", points(maximum)])
    for row in rows:
        budget = share("canvas.csv")
        ids = row["ids"]
        score = row["score"]
        w.writerow([*(learner(ids[c]).csv(budget, CELL) if c in ids else "" for c in CANVAS_ID_COLUMNS),
                    "" if score is None else points(score)])
    return out.getvalue()


def pseudonym(learner: str, salt: str) -> str:
    """A stable, unguessable stand-in for a learner id (``--anonymize``)."""
    return "learner-" + hashlib.sha256(f"{salt}\0{learner}".encode()).hexdigest()[:8]
