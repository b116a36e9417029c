"""Who is in the class: the roster (``--roster FILE``), one learner id per line, or a
gradebook CSV exported from Canvas (its ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``
and ``Section`` columns; a submission is matched to a row by any of the three ids, or, from a
Gradescope export, by its submitter's sid or email). Every id that names a person names one.
Every learner on it gets a row, "no submission" when nothing was handed in.

Ids are compared as Canvas compares them (:func:`same`): case and surrounding or doubled
white space mean nothing, nor do the leading zeros of an all-digit id (a spreadsheet saves
``000412345`` as ``412345``). Two rows whose ids are one by that rule are refused, naming
both lines: which one a submission is would be a guess.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

CANVAS_ID_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


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


def match_roster(roster: list[Learner], submitters: list[Learner]):
    """``({submitter id: roster id}, [submitters not on the roster], {submitter id: [roster ids]})``:
    a submitter is on the roster when any of its ids (a folder name, or a sid and an email) is
    one of a row's (compared by :func:`same`); one whose ids name several rows is ambiguous."""
    alias = {same(a): l.id for l in roster for a in l.aliases}
    matched, strangers, ambiguous = {}, [], {}
    for who in submitters:
        found = list(dict.fromkeys(alias[same(a)] for a in who.aliases if same(a) in alias))
        if len(found) > 1:
            ambiguous[who.id] = found
        if found:
            matched[who.id] = found[0]
        else:
            strangers.append(who.id)
    return matched, strangers, ambiguous


def class_people(roster: list[Learner] | None, claims: dict[str, list[Learner]]):
    """``(people, owner, strangers, ambiguous)``: every learner who gets a row (the roster's in its
    order, then the submitters not on it; without a roster, the submitters by id), each
    submitter's id in the class files (``owner``: the roster's id where they are on it), the
    submitters not on the roster, and those whose ids match several of its rows."""
    submitters = [who for name in sorted(claims) for who in claims[name]]
    if roster is None:
        unique = {who.id: who for who in submitters}
        return sorted(unique.values(), key=lambda who: who.id), {who.id: who.id for who in submitters}, [], {}
    owner, strangers, ambiguous = match_roster(roster, submitters)
    owner.update({s: s for s in strangers})
    seen = set()
    others = [who for who in submitters if who.id in strangers and not (who.id in seen or seen.add(who.id))]
    return list(roster) + others, owner, strangers, ambiguous


def same(alias: str) -> str:
    """An id as Canvas compares it: case and white space folded, an all-digit id without its
    leading zeros (what a spreadsheet makes of an SIS User ID)."""
    text = " ".join(str(alias).split()).casefold()
    return (text.lstrip("0") or "0") if text.isdigit() else text


_same = same
