"""The class's gradebook: who is in the class, when they handed in, and what the LMS imports.

* **Roster** (``--roster FILE``): one learner id per line, or a gradebook CSV exported from
  Canvas (its ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID`` and ``Section`` columns;
  a submission is matched to a row by any of the three ids, or, from a Gradescope export, by
  its submitter's sid or email). Every learner on it gets a row, "no submission" when nothing
  was handed in.
* **Lateness** (``--deadline``, ``--late-penalty``, ``--late-cutoff``): the submission time is
  Gradescope's ``created_at``, from the class's export (``submission_metadata.yml``, read by
  :mod:`.gradescope_export`) or from the ``submission_metadata.json`` in a learner's folder,
  otherwise the newest modification time of the submission's files. A penalty of P percent of
  the score per started day late, and/or a cutoff after which the score is 0.
* **Canvas CSV** (``canvas.csv``): Canvas's gradebook import layout: the identifying columns
  (``Student, ID, SIS User ID, SIS Login ID, Section``), one column named for the assignment,
  and a ``Points Possible`` row under the header. Canvas creates the assignment on import
  when no column of that name exists yet.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path


def points(x: float) -> str:
    """Points as the class files show them (a gradebook cell, a feedback line): ``3.5``, ``7``."""
    return f"{float(x):.2f}".rstrip("0").rstrip(".")

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
    if "SIS User ID" in first or first.startswith("Student,"):
        for row in csv.DictReader(io.StringIO(text)):
            name = (row.get("Student") or "").strip()
            if not name or name.startswith("Points Possible") or name == "Student, Test":
                continue  # Canvas's second row, and its test student
            ids = [(row.get(c) or "").strip() for c in ("SIS Login ID", "SIS User ID", "ID")]
            ids = [i for i in ids if i]
            if not ids:
                raise RosterError(f"the roster {path}: {name!r} has no ID, SIS User ID or SIS Login ID")
            learners.append(Learner(ids[0], {c: (row.get(c) or "").strip() for c in CANVAS_ID_COLUMNS},
                                    tuple(ids)))
    else:
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                learners.append(Learner(line, {}, (line,)))
    if not learners:
        raise RosterError(f"the roster {path} lists no learner")
    ids = [l.id for l in learners]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise RosterError(f"the roster {path} lists {', '.join(dupes)} more than once")
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


def _same(alias: str) -> str:
    return alias.casefold() if "@" in alias else alias  # an email's case means nothing


# ------------------------------------------------------------------------------- lateness

@dataclass(frozen=True)
class LatePolicy:
    deadline: datetime  # aware
    penalty_per_day: float = 0.0  # percent of the score per started day late
    cutoff_days: float | None = None  # later than this: score 0

    def apply(self, score: float, submitted: datetime | None) -> tuple[float, float, str]:
        """``(score after the policy, days late, what happened)``."""
        if submitted is None:
            return score, 0.0, ""
        late = (submitted - self.deadline).total_seconds() / DAY
        if late <= 0:
            return score, 0.0, ""
        if self.cutoff_days is not None and late > self.cutoff_days:
            return 0.0, late, f"{late:.2f} days late, after the {self.cutoff_days:g}-day cutoff: 0 points"
        days = math.ceil(late)
        kept = max(0.0, 1.0 - days * self.penalty_per_day / 100.0)
        why = f"{late:.2f} days late: -{min(100, days * self.penalty_per_day):g}% ({days} started day(s))"
        return round(score * kept, 2), late, why


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


def submitted_at(path: Path, created_at=None) -> tuple[datetime | None, str]:
    """When ``path`` was handed in, and where that time comes from: ``created_at`` when the
    class's export gives it, else the one of the folder's ``submission_metadata.json``, else
    the newest file time."""
    path = Path(path)
    if created_at is not None:
        return gradescope_time(created_at), "submission_metadata.yml"
    meta = path / "submission_metadata.json" if path.is_dir() else None
    if meta and meta.is_file():
        try:
            return gradescope_time(json.loads(meta.read_text())["created_at"]), "submission_metadata.json"
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable: the file times below
    if path.is_dir():
        times = [os.lstat(os.path.join(d, f)).st_mtime for d, _, fs in os.walk(path) for f in fs]
        if not times:
            return None, ""
        newest = max(times)
    else:
        newest = path.lstat().st_mtime
    return datetime.fromtimestamp(newest, timezone.utc), "file time"


# ---------------------------------------------------------------------------------- Canvas

def canvas_csv(rows: list[dict], assignment: str, points: float) -> str:
    """Canvas's import layout; ``rows``: ``{"learner": Learner, "score": float | None}``."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow([*CANVAS_ID_COLUMNS, assignment])
    w.writerow(["Points Possible", "", "", "", "", f"{points:g}"])
    for row in rows:
        learner: Learner = row["learner"]
        ids = learner.canvas or {"Student": learner.id, "SIS User ID": learner.id}
        score = row["score"]
        w.writerow([*(ids.get(c, "") for c in CANVAS_ID_COLUMNS), "" if score is None else f"{score:g}"])
    return out.getvalue()


def pseudonym(learner: str, salt: str) -> str:
    """A stable, unguessable stand-in for a learner id (``--anonymize``)."""
    return "learner-" + hashlib.sha256(f"{salt}\0{learner}".encode()).hexdigest()[:8]
