"""A term's controls over a class's grades: extensions and adjustments, each a CSV the
instructor keeps.

* **Extensions** (``--extensions FILE``): a learner's own deadline, as Canvas's per-student
  "assign to" due dates are: columns ``learner`` and ``deadline`` (``due_at`` as Canvas's API
  names it is read too), ISO 8601; without a zone, in the course's time zone (``--tz``,
  ``timezone`` in a term file), refused without one. The late policy then counts
  from it.
* **Adjustments** (``--adjustments FILE``): points added or taken by hand after grading,
  with the reason the learner reads in their feedback, as nbgrader's manual grades and extra
  credit: columns ``learner``, ``exercise`` (an exercise id, or ``total``), ``points``
  (signed) and ``reason``. An exercise's adjustment changes that exercise's points (kept
  between 0 and its maximum) before any late penalty; a ``total`` one is added to the final
  score after it (extra credit may pass the maximum).

Each file is CSV with exactly that header (``learner,deadline``;
``learner,exercise,points,reason``) and that many fields in every row: a reason holding a
comma is in double quotes; a row with a field too many or too few is refused with its line.

``learner`` is any id the roster or the submission gives the learner (Canvas's SIS Login ID,
SIS User ID or ID; Gradescope's sid or email; a folder's name). A file that cannot be read,
a row that names no learner of the class, an unknown exercise (or one the assignment does
not grade), a number or a time that is not one: one line naming the file and row, exit
status 2, nothing written.

The batch keeps a copy of each in its output folder (``extensions.csv``, ``adjustments.csv``)
and reads that copy when the option is not given: a rerun never drops them silently.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ... import scoring
from ..intake.roster import same
from ..intake.times import parse_time

EXTENSIONS = "extensions.csv"
ADJUSTMENTS = "adjustments.csv"
TOTAL = "total"


class ControlsError(ValueError):
    """A controls file that cannot be used (one line naming the file and the row)."""


@dataclass(frozen=True)
class Adjustment:
    learner: str  # the learner's id in the class files
    exercise: str  # an exercise id, or TOTAL
    points: float
    reason: str
    line: int = 0  # of the adjustments file: a refusal names it


def _rows(path: Path, needed: tuple[str, ...], aliases: dict[str, str] | None = None) -> list[tuple[int, dict]]:
    """The rows of a CSV whose header is exactly ``needed`` (in that order, any case; an
    ``aliases`` name may stand for one) and whose every row has that many fields: a reason
    with a comma is in double quotes, and a row with a field too many is refused, never read
    as another column's value."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise ControlsError(f"{path} cannot be read ({err})") from None
    reader = csv.reader(io.StringIO(text), strict=True)
    rows, header = [], None
    try:
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue  # blank lines are not rows
            if header is None:
                header = [(aliases or {}).get(f.strip().lower(), f.strip().lower()) for f in fields]
                if header != list(needed):
                    missing = [c for c in needed if c not in header]
                    raise ControlsError(
                        f"{path}, line {reader.line_num}: the header is {','.join(fields)!s}; it must be "
                        f"{','.join(needed)}" + (f" (no column {', '.join(missing)})" if missing else ""))
                continue
            if len(fields) != len(needed):
                raise ControlsError(
                    f"{path}, line {reader.line_num}: {len(fields)} fields where the header has {len(needed)} "
                    f"({','.join(needed)}); a field holding a comma goes in double quotes")
            rows.append((reader.line_num, {c: f.strip() for c, f in zip(needed, fields)}))
    except csv.Error as err:
        raise ControlsError(f"{path}, line {reader.line_num}: not CSV ({err})") from None
    if header is None:
        raise ControlsError(f"{path}: empty; its header must be {','.join(needed)}")
    return rows


def _who(path, line: int, name: str, ids: dict[str, str]) -> str:
    found = ids.get(name) or ids.get(same(name))
    if not found:
        raise ControlsError(f"{path}, line {line}: {name or '(empty)'} is not a learner of this class "
                            "(not on the roster, and no submission is theirs)")
    return found


def read_extensions(path: Path, ids: dict[str, str], tz=None) -> dict[str, datetime]:
    """``{learner: their deadline}``; ``ids``: every id a learner may be named by -> their id;
    ``tz``: the course's time zone, for a deadline written without one (refused without it)."""
    deadlines: dict[str, datetime] = {}
    for line, row in _rows(path, ("learner", "deadline"), {"due_at": "deadline"}):
        who = _who(path, line, row["learner"], ids)
        try:
            when = parse_time(row["deadline"], tz)
        except ValueError as err:
            raise ControlsError(f"{path}, line {line}: {err}") from None
        if who in deadlines:
            raise ControlsError(f"{path}, line {line}: a second deadline for {who}")
        deadlines[who] = when
    return deadlines


def read_adjustments(path: Path, ids: dict[str, str], exercises) -> list[Adjustment]:
    adjustments = []
    for line, row in _rows(path, ("learner", "exercise", "points", "reason")):
        who = _who(path, line, row["learner"], ids)
        exercise = row["exercise"]
        if exercise.lower() == TOTAL:
            exercise = TOTAL
        elif exercise not in exercises:
            raise ControlsError(f"{path}, line {line}: {exercise or '(empty)'} is neither an exercise id nor "
                                f"{TOTAL!r}")
        try:
            points = float(row["points"])
        except ValueError:
            points = math.nan
        if not math.isfinite(points):
            raise ControlsError(f"{path}, line {line}: points {row['points']!r} is not a number")
        if not row["reason"]:
            raise ControlsError(f"{path}, line {line}: no reason (the learner reads it in their feedback)")
        adjustments.append(Adjustment(who, exercise, points, row["reason"], line))
    return adjustments


def signed(x: float) -> str:
    return ("+" if x >= 0 else "-") + scoring.points(abs(x))
