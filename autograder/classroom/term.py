"""``mha-grade term TERM.toml --out OUT``: a term's assignments graded, and one gradebook for the term.

The term file (TOML, read by the standard library's ``tomllib``) names the roster and lists
the assignments, each with its exercises (by id, or by chapter), its class folder, its
deadline and late policy, its points in Canvas, and its own extensions and adjustments::

    [term]
    name = "Multi-head attention, spring 2026"
    roster = "roster.csv"

    [[assignment]]
    name = "A1 Attention"
    chapters = [1, 2]
    submissions = "exports/a1"
    deadline = "2026-02-08T23:59-08:00"
    late_penalty = 10
    late_cutoff = 3
    points = 20
    extensions = "controls/a1-extensions.csv"

Paths are relative to the term file. Each assignment is a batch (:mod:`.batch`) into
``OUT/<its folder>/`` (its name, made a file name): its grades, feedback, summary and history,
its own kept roster and controls, and what the next run needs; a rerun grades only what
changed (a submission, the grader, the options: the batch's own rule). The term's gradebook
then follows from the assignments' ``grades.csv`` and ``canvas.csv``:

* ``OUT/term.csv``: a row per learner per assignment: the final score (scaled to the
  assignment's ``points`` when given: final x points / the exercises' total, rounded as every
  shown score), the points possible, the status, the late penalty and the adjustment, as the
  assignment's ``grades.csv`` says them;
* ``OUT/canvas.csv``: Canvas's import layout with one column per assignment, its points
  possible under the header.

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
from pathlib import Path

from ..scoring import points, round_points
from ..spec import COURSE, POINTS
from . import batch, files
from .intake.roster import CANVAS_ID_COLUMNS
from .intake import times

TERM_KEYS = {"name", "roster"}
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
    assignments = data.get("assignment")
    if not isinstance(assignments, list) or not assignments:
        raise TermError(f"{path}: no [[assignment]]")
    checked, folders = [], {}
    for number, a in enumerate(assignments, 1):
        checked.append(_assignment(path, base, number, a))
        folder = checked[-1]["folder"]
        if folder in folders:
            raise TermError(f"{path}: assignments {folders[folder]} and {number} would share the folder {folder!r}: "
                            "give one a `folder`")
        folders[folder] = number
    return term, checked


def _assignment(path: Path, base: Path, number: int, a) -> dict:
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
        times.parse_time(a["deadline"])
    except ValueError as err:
        raise TermError(f"{where}: deadline: {err}") from None
    for key in ("late_penalty", "late_cutoff", "points"):
        if key in a and (not isinstance(a[key], (int, float)) or isinstance(a[key], bool) or a[key] < 0):
            raise TermError(f"{where}: `{key}` must be a number, at least 0, not {a[key]!r}")
    if a.get("points") == 0:
        raise TermError(f"{where}: `points` must be more than 0")
    folder = str(a.get("folder") or a["name"])
    return {**a, "exercises": [e for e in POINTS if e in exercises], "folder": _folder(folder),
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
    return args + options


# --------------------------------------------------------------------------- the gradebook

def _read(path: Path) -> list[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise TermError(f"{path} cannot be read ({err}): grade that assignment again") from None


def scaled(final: str, maximum: str, possible) -> str:
    """An assignment's final as Canvas gets it: as graded, or scaled to its ``points``."""
    if possible is None:
        return final
    return points(round_points(float(final) * float(possible) / float(maximum))) if float(maximum) else "0"


def gradebook_files(out: Path, assignments: list[dict]) -> dict[str, str]:
    """``{file name: text}`` of the term's gradebook, from each assignment's class files."""
    out = Path(out)
    long = io.StringIO()
    w = csv.writer(long)
    w.writerow(["learner", "assignment", "final", "points_possible", "status", "late_penalty", "adjustment"])
    people: dict[tuple, dict[str, str]] = {}  # Canvas's identifying columns -> assignment -> score
    possible = {}
    for a in assignments:
        folder = out / a["folder"]
        for row in _read(folder / "grades.csv"):
            maximum = row["max_total"]
            possible[a["name"]] = points(a["points"]) if "points" in a else maximum
            w.writerow([row["learner"], a["name"], scaled(row["final"], maximum, a.get("points")),
                        possible[a["name"]], row["status"], row["late_penalty"], row["adjustment"]])
        canvas = _read(folder / "canvas.csv")[1:]  # the row under the header: Points Possible
        for row in canvas:
            ids = tuple(row.get(c, "") for c in CANVAS_ID_COLUMNS)
            graded = row.get(a["name"], "")
            people.setdefault(ids, {})[a["name"]] = "" if graded == "" else scaled(
                graded, _maximum(folder), a.get("points"))
    wide = io.StringIO()
    w = csv.writer(wide)
    names = [a["name"] for a in assignments]
    w.writerow([*CANVAS_ID_COLUMNS, *names])
    w.writerow(["Points Possible", "", "", "", "", *(possible.get(n, "") for n in names)])
    for ids, scores in people.items():
        w.writerow([*ids, *(scores.get(n, "") for n in names)])
    return {GRADEBOOK: long.getvalue(), CANVAS: wide.getvalue()}


def _maximum(folder: Path) -> str:
    rows = _read(folder / "canvas.csv")
    return rows[0][list(rows[0])[-1]] if rows else "0"  # the Points Possible row's score


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
    for flag in ("--force", "--quiet", "--unconfined", "--similarity"):
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
    options = [flag for flag in ("--force", "--quiet", "--unconfined", "--similarity")
               if getattr(args, flag[2:])]
    for flag, value in (("--seed", args.seed), ("--jobs", args.jobs), ("--run-as", args.run_as),
                        ("--shard", args.shard), ("--progress-json", args.progress_json)):
        if value is not None:
            options += [flag, str(value)]
    for a in assignments:
        if args.only and a["name"] not in args.only:
            continue
        print(f"mha-grade term: {a['name']} ({len(a['exercises'])} exercises) -> {args.out / a['folder']}",
              file=sys.stderr)
        command = batch_args(term, a, args.out, options)
        status = batch.merge_main(command) if args.merge else batch.main(command)
        if status:
            print(f"mha-grade term: {a['name']}: stopped (exit status {status}); the term's gradebook is "
                  "unchanged", file=sys.stderr)
            return status
    if args.shard:
        return 0
    try:
        written = gradebook_files(args.out, assignments)
    except TermError as err:
        print(f"mha-grade term: {err}", file=sys.stderr)
        return 2
    for name, text in written.items():
        files.write_atomic(args.out / name, text)
    print(f"{len(assignments)} assignments -> {args.out / GRADEBOOK}, {args.out / CANVAS}")
    return 0
