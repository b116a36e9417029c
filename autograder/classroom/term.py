"""``mha-grade term TERM.toml --out OUT``: a term's assignments graded, and one gradebook for the term.

The term file (TOML, read by the standard library's ``tomllib``) names the roster and lists
the assignments, each with its exercises (by id, or by chapter), its class folder, its
deadline and late policy, its points in Canvas, and its own extensions and adjustments::

    [term]
    name = "Multi-head attention, spring 2026"
    roster = "roster.csv"
    timezone = "America/Los_Angeles"

    [[assignment]]
    name = "A1 Attention"
    chapters = [1, 2]
    submissions = "exports/a1"
    deadline = "2026-02-08T23:59-08:00"
    late_penalty = 10
    late_cutoff = 3
    points = 20
    extensions = "controls/a1-extensions.csv"

Paths are relative to the term file. A deadline or extension written without a zone is read
in the term's ``timezone`` (IANA); without one, it is refused naming its line. Two
assignments may not share a name: Canvas names a column by it. Each assignment is a batch (:mod:`.batch`) into
``OUT/<its folder>/`` (its name, made a file name): its grades, feedback, summary and history,
its own kept roster and controls, and what the next run needs; a rerun grades only what
changed (a submission, the grader, the options: the batch's own rule). The term's gradebook
then follows from the assignments' ``grades.csv`` and ``canvas.csv``:

* ``OUT/term.csv``: a row per learner per assignment: the final score (scaled to the
  assignment's ``points`` when given: final x points / the exercises' total, rounded as every
  shown score), the points possible, the status, the late penalty and the adjustment, as the
  assignment's ``grades.csv`` says them, and the raw points beside;
* ``OUT/canvas.csv``: Canvas's import layout with one column per assignment, its points
  possible under the header.

Mid-term, the gradebook is right as it stands: a learner whose deadline (or extension) has
not passed gets a blank in Canvas (an import leaves the cell as it was) and ``not yet due``
in ``term.csv``; an assignment whose folder of submissions does not exist yet and whose
deadline has not passed is skipped with a line, its cells ``not yet due``; one not graded
yet (``--only``) keeps its column blank, ``not graded`` in ``term.csv``. A held submission
(:mod:`.intake`) leaves its learners' cells blank, ``held`` in ``term.csv``, and the term's
exit status is 3 once every file is written. A learner who has left the roster keeps the
rows their earlier work earned in ``term.csv``, their status saying so.

With ``--shard i/N`` every assignment grades its part only (:mod:`.shards`) and no term file
is written; ``--merge`` gathers each assignment's parts and writes the term's files. The batches run in
this process: the seed (``--seed-file``) reaches them without ever being on a command line. A term
file that cannot be used, or an assignment refused, is one line on stderr and exit status 2,
the term's files left as they were.
"""
from __future__ import annotations

import argparse
import csv
import io
import re
import sys
import tomllib
from datetime import datetime, timezone
from pathlib import Path

from ..scoring import points
from ..spec import COURSE, POINTS
from . import batch, files
from .intake.roster import CANVAS_ID_COLUMNS, RosterError, read_roster, same
from .intake import times

TERM_KEYS = {"name", "roster", "timezone"}
ASSIGNMENT_KEYS = {"name", "exercises", "chapters", "submissions", "deadline", "late_penalty", "late_cutoff",
                   "points", "extensions", "adjustments", "folder"}
GRADEBOOK = "term.csv"
CANVAS = "canvas.csv"


class TermError(ValueError):
    """A term file that cannot be used: one line naming the file and the assignment."""


def read_term(path: Path) -> tuple[dict, list[dict]]:
    """``(term, assignments)`` of a term file, each assignment checked and its paths resolved."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise TermError(f"the term file {path} cannot be read ({err})") from None
    except tomllib.TOMLDecodeError as err:
        raise TermError(f"the term file {path} is not TOML: {err}") from None
    unknown = sorted(set(data) - {"term", "assignment"})
    if unknown:
        raise TermError(f"{path}: unknown table(s) {', '.join(unknown)} (a term file has [term] and [[assignment]])")
    term = data.get("term", {})
    if not isinstance(term, dict) or set(term) - TERM_KEYS:
        raise TermError(f"{path}: [term] may hold {', '.join(sorted(TERM_KEYS))} only")
    base = path.parent
    if "roster" in term:
        term = {**term, "roster": base / str(term["roster"])}
    try:
        zone = times.zone(term.get("timezone"))
    except ValueError as err:
        raise TermError(f"{path}: [term] timezone: {err}") from None
    assignments = data.get("assignment")
    if not isinstance(assignments, list) or not assignments:
        raise TermError(f"{path}: no [[assignment]]")
    checked, folders, names = [], {}, {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, a in enumerate(assignments, 1):
        checked.append(_assignment(path, base, number, a, zone, lines))
        folder, name = checked[-1]["folder"], " ".join(checked[-1]["name"].split()).casefold()
        if folder in folders:
            raise TermError(f"{path}: assignments {folders[folder]} and {number} would share the folder {folder!r}: "
                            "give one a `folder`")
        if name in names:
            raise TermError(f"{path}: assignments {names[name]} and {number} are both named {a['name']!r}: Canvas "
                            "names a column by it, so one would hold the other's scores; give each its own name")
        folders[folder], names[name] = number, number
    return term, checked


def _line(lines: list[str], key: str, value: str) -> str:
    """`line N` of the term file where ``key = "value"`` is written (for a refusal), or ''."""
    for n, text in enumerate(lines, 1):
        if text.split("=", 1)[0].strip() == key and value in text:
            return f", line {n}"
    return ""


def _assignment(path: Path, base: Path, number: int, a, zone=None, lines=()) -> dict:
    where = f"{path}, assignment {number}"
    if not isinstance(a, dict):
        raise TermError(f"{where}: not a table")
    unknown = sorted(set(a) - ASSIGNMENT_KEYS)
    if unknown:
        raise TermError(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(ASSIGNMENT_KEYS))})")
    for key in ("name", "submissions", "deadline"):
        if not isinstance(a.get(key), str) or not a[key].strip():
            raise TermError(f"{where}: `{key}` is missing (a text)")
    where = f"{path}, assignment {a['name']!r}"
    exercises = list(a.get("exercises", []))
    unknown = [e for e in exercises if e not in POINTS]
    if unknown:
        raise TermError(f"{where}: unknown exercise(s) {', '.join(map(str, unknown))}")
    chapters = a.get("chapters", [])
    known = sorted({e.chapter for e in COURSE})
    if any(c not in known for c in chapters):
        raise TermError(f"{where}: chapters are {', '.join(map(str, known))}, not {chapters}")
    exercises += [e.id for e in COURSE if e.chapter in chapters and e.id not in exercises]
    if not exercises:
        raise TermError(f"{where}: no exercise: give `exercises` or `chapters`")
    try:
        deadline = times.parse_time(a["deadline"], zone)
    except ValueError as err:
        raise TermError(f"{where}{_line(list(lines), 'deadline', a['deadline'])}: deadline: {err}") from None
    for key in ("late_penalty", "late_cutoff", "points"):
        if key in a and (not isinstance(a[key], (int, float)) or isinstance(a[key], bool) or a[key] < 0):
            raise TermError(f"{where}: `{key}` must be a number, at least 0, not {a[key]!r}")
    if a.get("points") == 0:
        raise TermError(f"{where}: `points` must be more than 0")
    folder = str(a.get("folder") or a["name"])
    return {**a, "exercises": [e for e in POINTS if e in exercises], "folder": _folder(folder), "due": deadline,
            "submissions": base / a["submissions"],
            **{k: base / a[k] for k in ("extensions", "adjustments") if k in a}}


def _folder(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "assignment"


def batch_args(term: dict, a: dict, out: Path, options: list[str]) -> list[str]:
    """The ``mha-grade batch`` command line of assignment ``a``."""
    args = [str(a["submissions"]), "--out", str(Path(out) / a["folder"]), "--assignment", a["name"],
            "--deadline", a["deadline"]]
    for e in a["exercises"]:
        args += ["-e", e]
    if "late_penalty" in a:
        args += ["--late-penalty", f"{a['late_penalty']!r}"]
    if "late_cutoff" in a:
        args += ["--late-cutoff", f"{a['late_cutoff']!r}"]
    for key in ("extensions", "adjustments"):
        if key in a:
            args += [f"--{key}", str(a[key])]
    if "roster" in term:
        args += ["--roster", str(term["roster"])]
    if "timezone" in term:
        args += ["--tz", str(term["timezone"])]
    if "points" in a:
        args += ["--points", f"{a['points']!r}"]
    return args + options


# --------------------------------------------------------------------------- the gradebook

def _read(path: Path) -> list[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise TermError(f"{path} cannot be read ({err}): grade that assignment again") from None


def gradebook_files(out: Path, assignments: list[dict], roster: list | None = None,
                    now: datetime | None = None) -> dict[str, str]:
    """``{file name: text}`` of the term's gradebook, from each assignment's class files (each
    batch wrote them scaled to the assignment's ``points``); an assignment without them yet
    gives blank cells (``not yet due`` before its deadline, ``not graded`` after). ``roster``:
    the term's learners (a row of a learner no longer on it says so)."""
    out = Path(out)
    now = now or datetime.now(timezone.utc)
    long = io.StringIO()
    w = csv.writer(long)
    w.writerow(["learner", "assignment", "final", "points_possible", "status", "late_penalty", "adjustment",
                "raw_final", "raw_possible"])
    people: dict[tuple, dict[str, str]] = {}  # Canvas's identifying columns -> assignment -> score
    possible = {}
    on_roster = {same(x) for who in roster or () for x in who.aliases}
    for a in assignments:
        folder = out / a["folder"]
        if not (folder / "grades.csv").is_file() or not (folder / "canvas.csv").is_file():
            status = "not yet due" if a["due"] > now else "not graded"
            possible[a["name"]] = points(a["points"]) if "points" in a else ""
            for who in roster or ():
                w.writerow([who.id, a["name"], "", possible[a["name"]], status, "", "", "", ""])
                people.setdefault(tuple((who.canvas or {}).get(c, "") for c in CANVAS_ID_COLUMNS), {})
            continue
        for row in _read(folder / "grades.csv"):
            maximum = row["max_total"]
            possible[a["name"]] = row.get("points_possible") or maximum
            status = row["status"]
            if roster is not None and same(row["learner"]) not in on_roster:
                status += " (not on the roster)"
            w.writerow([row["learner"], a["name"], row.get("canvas", row["final"]), possible[a["name"]], status,
                        row["late_penalty"], row["adjustment"], row["final"], maximum])
        for row in _read(folder / "canvas.csv")[1:]:  # the row under the header: Points Possible
            ids = tuple(row.get(c, "") for c in CANVAS_ID_COLUMNS)
            people.setdefault(ids, {})[a["name"]] = row.get(a["name"], "")
    wide = io.StringIO()
    w = csv.writer(wide)
    names = [a["name"] for a in assignments]
    w.writerow([*CANVAS_ID_COLUMNS, *names])
    w.writerow(["Points Possible", "", "", "", "", *(possible.get(n, "") for n in names)])
    for ids, scores in people.items():
        w.writerow([*ids, *(scores.get(n, "") for n in names)])
    return {GRADEBOOK: long.getvalue(), CANVAS: wide.getvalue()}


# ------------------------------------------------------------------------------------ CLI

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mha-grade term", description=(
        "Grade (or regrade what changed in) every assignment of a term file, each into OUT/<assignment>/, "
        "and write the term's gradebook: OUT/term.csv (per learner per assignment) and OUT/canvas.csv (one "
        "column per assignment)."))
    p.add_argument("term", type=Path, metavar="TERM.toml")
    p.add_argument("--out", type=Path, required=True, metavar="OUT")
    p.add_argument("--only", action="append", metavar="NAME", help="grade only this assignment (repeatable); "
                   "the term's gradebook is written from every assignment's files")
    step = p.add_mutually_exclusive_group()
    step.add_argument("--shard", metavar="i/N", help="every assignment: grade part i of N only (batch --shard)")
    step.add_argument("--merge", action="store_true", help="every assignment: gather its parts (mha-grade merge)")
    seed = p.add_mutually_exclusive_group()
    seed.add_argument("--seed", type=int, help="seed of every assignment (default: each folder's own, drawn once)")
    seed.add_argument("--seed-file", type=Path, metavar="PATH",
                      help="read that seed from this file (a Secret's, say): never on a command line, where another "
                           "process could read it")
    for flag in ("--force", "--quiet", "--unconfined", "--similarity", "--allow-fewer"):
        p.add_argument(flag, action="store_true", help=f"passed to every batch ({flag} there)")
    p.add_argument("--jobs", "-j", type=int, help="passed to every batch")
    p.add_argument("--run-as", metavar="USER", help="passed to every batch")
    p.add_argument("--progress-json", metavar="FILE", help="passed to every batch (appended to FILE)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        term, assignments = read_term(args.term)
    except TermError as err:
        print(f"mha-grade term: {err}", file=sys.stderr)
        return 2
    if args.seed_file:
        try:
            args.seed = int(args.seed_file.read_text().strip())
        except (OSError, ValueError) as err:
            print(f"mha-grade term: --seed-file {args.seed_file}: not a readable whole number ({err})", file=sys.stderr)
            return 2
    names = [a["name"] for a in assignments]
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        print(f"mha-grade term: --only {', '.join(unknown)}: the assignments are {', '.join(names)}", file=sys.stderr)
        return 2
    options = [flag for flag in ("--force", "--quiet", "--unconfined", "--similarity", "--allow-fewer")
               if getattr(args, flag[2:].replace("-", "_"))]
    for flag, value in (("--seed", args.seed), ("--jobs", args.jobs), ("--run-as", args.run_as),
                        ("--shard", args.shard), ("--progress-json", args.progress_json)):
        if value is not None:
            options += [flag, str(value)]
    now, partial = datetime.now(timezone.utc), 0
    for a in assignments:
        if args.only and a["name"] not in args.only:
            continue
        folder = Path(a["submissions"])
        if a["due"] > now and not (folder.is_dir() and any(not p.name.startswith(".") for p in folder.iterdir())):
            print(f"mha-grade term: {a['name']}: not yet due ({a['deadline']}) and no submissions yet "
                  f"({folder} {'is empty' if folder.is_dir() else 'does not exist'}): skipped, its cells blank",
                  file=sys.stderr)
            continue
        print(f"mha-grade term: {a['name']} ({len(a['exercises'])} exercises) -> {args.out / a['folder']}",
              file=sys.stderr)
        command = batch_args(term, a, args.out, options)
        status = batch.merge_main(command) if args.merge else batch.main(command)
        if status == batch.PARTIAL:  # every file written; some submissions held: the term goes on
            partial = status
            continue
        if status:
            print(f"mha-grade term: {a['name']}: stopped (exit status {status}); the term's gradebook is "
                  "unchanged", file=sys.stderr)
            return status
    if args.shard:
        return partial
    try:
        roster = read_roster(term["roster"]) if "roster" in term else None
        written = gradebook_files(args.out, assignments, roster, now)
    except (TermError, RosterError) as err:
        print(f"mha-grade term: {err}", file=sys.stderr)
        return 2
    for name, text in written.items():
        files.write_atomic(args.out / name, text)
    print(f"{len(assignments)} assignments -> {args.out / GRADEBOOK}, {args.out / CANVAS}")
    if partial:
        print(f"mha-grade term: some submissions are held (each assignment's held.csv): their cells are blank "
              f"(exit status {partial})", file=sys.stderr)
    return partial
