"""Gradescope's "Export Submissions", graded as a class: ``mha-grade batch EXPORT_DIR``.

Unzipped, the export is one top folder (``assignment_<id>_export/``) holding a folder per
submission, ``submission_<id>/``, with the files as uploaded, and ``submission_metadata.yml``,
which says whose each folder is and when it came::

    submission_123:
      :submitters:
      - :name: Ada Lovelace
        :sid: '100'
        :email: ada@example.edu
      :created_at: 2026-03-01 22:58:05.746365000 Z
      :score: 17.5

(Ruby symbols as keys: ``yaml.safe_load`` reads ``:submitters:`` as the string
``":submitters"``; a group submission lists several submitters.) A submission is then named
by its submitters' student ids (an email where the sid is empty; a group's joined by ``+``),
every submitter gets a row of ``grades.csv`` with the group's report, the roster matches
sids or emails, and ``:created_at:`` is the submission time of the late policy.

A metadata file that cannot be read or that does not fit the folders beside it (a folder it
does not list, or lists but is not there; a submitter without sid and email; a time that is
not one) stops the batch: one line naming the file and the
problem, exit status 2, nothing written (a damaged download would otherwise name every
learner by a folder and date every submission by its file times, zeroing a roster). With
``--names-from-folders`` the instructor accepts that: one warning, and the folders keep their
own names. A folder laid out as an export (``assignment_<id>_export/``, or ``submission_<id>/``
folders) without its metadata is the same error: it is never graded as a learner named
``assignment_<id>_export``.

The export is the folder the instructor names, or the one folder it holds and nothing else
(the top folder of the unzipped download): a folder among others (a learner's, beside their
classmates' zips) is a submission, whatever it holds, never the export.

One learner's several submissions (the same sid and email in two folders: a resubmission) are
one: the newest by ``:created_at:`` counts, the older are kept in :attr:`Export.older` and
named in the history. Where learners type their own sid, two *different* submitters may give
one id (another's sid, email or file name, or a group's joined name): every submission
involved is held (:attr:`Export.held`, with the reason), graded into nobody's row; the rest
of the class is graded.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

import yaml

from ... import limited
from ...inert import excerpt
from ..intake.roster import Learner, same
from ..intake.times import gradescope_time

METADATA = "submission_metadata.yml"
_EXPORT_FOLDER = re.compile(r"assignment_\d+_export")
_SUBMISSION_FOLDER = re.compile(r"submission_\d+")
_SAFE = set("-_.@+")
NAME_CHARS = 100  # characters of an id kept in a file name (a file name holds 255 bytes)
MAX_METADATA = 256 * 2**20  # bytes of submission_metadata.yml: thousands with :results: are tens of MB
PARSE_SECONDS = 120.0  # to parse it: a few MB take well under a second with libyaml
PARSE_MB = 4096  # memory its parse may add: PyYAML's tables hold ~10 times the file


class ExportError(ValueError):
    """What does not fit in the metadata (one line, without the file's name)."""


@dataclass
class Export:
    root: Path
    submissions: dict[str, Path] = field(default_factory=dict)  # name (the submitters' ids) -> folder
    submitters: dict[str, list[Learner]] = field(default_factory=dict)  # name -> who handed it in
    created: dict[str, datetime] = field(default_factory=dict)  # name -> Gradescope's :created_at:
    notes: list[str] = field(default_factory=list)  # what the instructor should know of it
    older: dict[str, list] = field(default_factory=dict)  # name -> [(folder, created)] it replaces
    held: dict[str, tuple] = field(default_factory=dict)  # folder -> (its submitters, why it is held)


def only_folder(directory: Path, skip=()) -> Path | None:
    """The one folder ``directory`` holds when it holds no other submission (no other folder,
    ``.zip`` or notebook; hidden entries and ``skip`` aside): the top folder of an unzipped
    download. A folder beside other submissions (a learner's, among their classmates' zips)
    is never it."""
    entries = [p for p in Path(directory).iterdir() if not p.name.startswith(".") and p.name not in skip
               and (p.is_dir() or p.suffix.lower() in (".zip", ".ipynb"))]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return None


def export_root(directory: Path, skip=()) -> Path | None:
    """The folder holding ``submission_metadata.yml``: DIR itself, or the one folder it holds
    and nothing else (the export's top folder, as unzipping it gives)."""
    directory = Path(directory)
    if (directory / METADATA).is_file():
        return directory
    top = only_folder(directory, skip)
    if top is not None and (top / METADATA).is_file():
        return top
    return None


def export_without_metadata(directory: Path, skip=()) -> Path | None:
    """The folder of ``directory`` that is laid out as Gradescope's export (DIR itself or its
    only folder: named ``assignment_<id>_export`` or holding ``submission_<id>`` folders) but
    has no ``submission_metadata.yml``; None when there is none."""
    directory = Path(directory)
    top = only_folder(directory, skip)
    for folder in [directory] + ([top] if top is not None else []):
        if (folder / METADATA).exists():
            return None
        try:
            inside = [p.name for p in folder.iterdir() if p.is_dir()]
        except OSError:
            continue
        if _EXPORT_FOLDER.fullmatch(folder.name) or any(_SUBMISSION_FOLDER.fullmatch(n) for n in inside):
            return folder
    return None


def read_export(root: Path, folders: dict[str, Path], warn, strict: bool = True) -> Export | None:
    """The export of ``root``, whose submission folders are ``folders`` (by folder name).
    Metadata that cannot be used raises ExportError naming the file when ``strict``; else it
    is said in a warning and None is returned (the folders keep their names)."""
    file = Path(root) / METADATA
    try:
        size = file.stat().st_size
        if size > MAX_METADATA:  # measured before a byte is parsed: the parse holds it several times over
            raise ExportError(f"{size // 2**20} MB, more than the {MAX_METADATA // 2**20} MB a class's "
                              "metadata is read up to")
        # Parsed in a process of its own under limits (limited.call): libyaml and the building of
        # the tables recurse once per level, and a file nested deep enough crashes the process
        # that parses it (a segmentation fault at 100,000 levels), which must not be the batch.
        try:
            data = limited.call(_parsed, str(file), what=f"reading {METADATA}", seconds=PARSE_SECONDS,
                                memory_mb=PARSE_MB, expected=ExportError)
        except limited.Refused as err:
            raise ExportError(str(err)) from None
        export = _export(Path(root), data, folders)
        for note in export.notes:
            warn(f"{file}: {note}")
        return export
    except (OSError, ExportError) as err:
        why = " ".join(str(err).split()) if isinstance(err, ExportError) else \
            f"unreadable ({type(err).__name__}: {' '.join(str(err).split())[:160]})"
        if strict:
            raise ExportError(f"{file}: {why}; the submissions cannot be named by their submitters, so "
                              "nothing was graded or written (download the export again, or pass "
                              "--names-from-folders to grade each folder under its own name)") from None
        warn(f"{file}: {why}; the submissions are named by their folders instead")
        return None


def _parsed(path: str):
    """What the batch uses of the metadata at ``path``, as JSON data (in the child of
    ``limited.call``): per folder its submitters' name, sid and email, and its time as text."""
    try:
        # yaml.safe_load's loader, in C where PyYAML has it: with each submission's :results:,
        # a class's metadata is megabytes, which the pure-Python parser takes seconds to read
        with open(path, encoding="utf-8") as f:
            data = yaml.load(f.read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError) as err:
        raise ExportError(f"unreadable ({type(err).__name__}: {' '.join(str(err).split())[:160]})") from None
    if not isinstance(data, dict):
        return data if isinstance(data, (str, int, float, bool, type(None))) else []
    kept = {}
    for folder, entry in data.items():
        if not isinstance(entry, dict):
            kept[str(folder)] = None
            continue
        people = entry.get(":submitters")
        if isinstance(people, list):
            people = [{k: _plain(p.get(k)) for k in (":name", ":sid", ":email")} if isinstance(p, dict)
                      else None for p in people]
        else:
            people = None
        kept[str(folder)] = {":submitters": people, ":created_at": _plain(entry.get(":created_at"))}
    return kept


def _plain(value):
    """A scalar of the metadata as JSON data (a time as ISO text, which gradescope_time reads)."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (dict, list)):
        return None
    return value


def _export(root: Path, data, folders: dict[str, Path]) -> Export:
    if not isinstance(data, dict) or not data:
        raise ExportError("not a table of submission folders")
    unlisted = sorted(set(folders) - set(map(str, data)))
    if unlisted:
        raise ExportError(f"does not list {_some(unlisted)}")
    export, entries = Export(root), []
    for folder, entry in data.items():
        folder = str(folder)
        if folder not in folders:
            raise ExportError(f"lists {folder}, which is not a submission folder beside it")
        if not isinstance(entry, dict):
            raise ExportError(f"{folder}: not a table of :submitters: and :created_at:")
        people = entry.get(":submitters")
        if not isinstance(people, list) or not people:
            raise ExportError(f"{folder}: no :submitters:")
        learners = [_submitter(folder, p) for p in people]
        try:
            created = gradescope_time(entry.get(":created_at"))
        except ValueError as err:
            raise ExportError(f"{folder}: :created_at: {err}") from None
        entries.append((folder, learners, created))
    # One learner's (or group's) several submissions: the newest counts, the older are named.
    newest: dict[tuple, tuple] = {}
    replaced: dict[tuple, list] = {}
    for folder, learners, created in sorted(entries, key=lambda e: (e[2], e[0])):
        key = tuple(sorted((same(w.canvas.get("SIS User ID", "")), tuple(sorted(map(same, w.aliases))))
                           for w in learners))
        if key in newest:
            replaced.setdefault(key, []).append(newest[key][::2])
        newest[key] = (folder, learners, created)
    kept = sorted(newest.items(), key=lambda item: item[1][0])
    # Two different submitters giving one id (a sid, an email, a file name): held, each of them.
    holders: dict[str, list[str]] = {}
    for _, (folder, learners, _) in kept:
        for who in learners:
            for alias in dict.fromkeys(map(same, who.aliases)):
                holders.setdefault(alias, []).append(folder)
        holders.setdefault("name:" + safe_name("+".join(w.id for w in learners)), []).append(folder)
    for alias, where in holders.items():
        if len(where) > 1:
            what = (f"would have the file name {alias[5:]}" if alias.startswith("name:") else
                    f"give the id {excerpt(alias, 40)}")
            for folder in where:
                if folder not in export.held:
                    others = ", ".join(f for f in where if f != folder)
                    export.held[folder] = (None, f"{folder} and {others} {what}: which is whose is yours to say")
    for key, (folder, learners, created) in kept:
        if folder in export.held:
            export.held[folder] = (learners, export.held[folder][1])
            continue
        name = safe_name("+".join(learner.id for learner in learners))
        export.submissions[name] = folders[folder]
        export.submitters[name] = learners
        export.created[name] = created
        if key in replaced:
            export.older[name] = replaced[key]
            export.notes.append(f"{folder} replaces {', '.join(f for f, _ in replaced[key])} (the same "
                                f"submitter{'s' if len(learners) > 1 else ''}, newer): the newest counts")
    return export


def safe_name(name: str) -> str:
    """``name`` as a file name of the class files (reports, feedback): itself when it is one
    already; otherwise its characters a file name must not hold replaced by ``_``, cut to
    ``NAME_CHARS``, and a hash of the whole id added. Distinct ids never share a file (``100 1``
    is ``100_1-<hash>``, beside a learner whose id is ``100_1``), and an id always has the same
    file name, whoever else is in the class."""
    safe = "".join(c if c.isalnum() or c in _SAFE else "_" for c in name).lstrip(".")
    if safe == name and 0 < len(name) <= NAME_CHARS:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{safe[:NAME_CHARS] or '_'}-{digest}"


def renamed(names) -> list[str]:
    """What the run says of the ids in ``names`` whose file names are not the ids themselves."""
    return [f"{excerpt(n, 40)} as {safe_name(n)}" for n in names if safe_name(n) != n]


def _submitter(folder: str, person) -> Learner:
    if not isinstance(person, dict):
        raise ExportError(f"{folder}: a submitter is not a table of :name:, :sid: and :email:")

    def text(key: str) -> str:
        value = person.get(key)
        return "" if value is None or isinstance(value, (dict, list)) else str(value).strip()

    sid, email, name = text(":sid"), text(":email"), text(":name")
    if not (sid or email):
        raise ExportError(f"{folder}: submitter {name or '(no name)'} has neither :sid: nor :email:")
    return Learner(sid or email, {"Student": name or sid or email, "SIS User ID": sid or email},
                   tuple(i for i in (sid, email) if i))


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
