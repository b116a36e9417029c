"""What a batch reads before it grades: the class folder's submissions (and its Gradescope
export, if it is one), the roster, each submission's graded sources and, with
``--similarity``, the groups of near-identical code.

None of it needs torch or the grader, so ``mha-grade batch`` does it in a process forked
before torch is imported (:mod:`..ahead`), on the core the import leaves idle; called in
process otherwise. It writes nothing: a command refused later has left no trace.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...limited import READ_SECONDS
from ...spec import POINTS
from ...stubs import StubsMissing
from ...submission import SubmissionError, load
from . import controls, gradescope_export, times
from .roster import Learner, RosterError, class_people, read_roster, same
from .. import similarity as sim

SKIP = ("__pycache__", ".ipynb_checkpoints", "__MACOSX")
ROSTER = "roster.csv"  # the roster used, kept in OUT and read again when a rerun gives none


class BatchError(Exception):
    """An unusable command: one line that names the problem (exit status 2, nothing written)."""


def find_submissions(directory: Path) -> dict[str, Path]:
    """Learner id -> submission path: every sub-directory, ``..zip`` and ``..ipynb`` of DIR."""
    found = {}
    for p in sorted(Path(directory).iterdir()):
        if p.name.startswith(".") or p.name in SKIP or p.is_symlink():
            continue
        if p.is_dir():
            found[p.name] = p
        elif p.suffix.lower() in (".zip", ".ipynb") and p.is_file():
            # ada/ beside ada.zip: two submissions, the second named by its whole file name
            found[p.stem if p.stem not in found else p.name] = p
    return found


def content_hash(path: Path) -> str:
    """The hash of what the grader reads from ``path`` (its graded sources), or of the reason
    it reads nothing."""
    try:
        return load(path).sha256
    except SubmissionError as err:
        return "unreadable:" + hashlib.sha256(str(err).encode()).hexdigest()


def check_command(directory: Path, out: Path, jobs: int, warn=lambda message: None,
                  names_from_folders: bool = False) -> tuple[dict[str, Path], gradescope_export.Export | None]:
    """The submissions of ``directory`` (and its Gradescope export, if it is one), or
    BatchError naming why the command cannot be right."""
    directory, out = Path(directory), Path(out)
    if jobs < 1:
        raise BatchError(f"--jobs must be at least 1, not {jobs}")
    if directory.suffix.lower() == ".zip" and directory.is_file():
        raise BatchError(f"{directory} is a zip: unzip it and give its folder (Gradescope's export unzips to "
                         "assignment_<id>_export/, with submission_metadata.yml)")
    if not directory.is_dir():
        raise BatchError(f"{directory} is not a directory of submissions")
    d, o = directory.resolve(), out.resolve()
    if o == d or d in o.parents:
        raise BatchError(f"the output folder {out} is inside the class folder {directory}: "
                         "its files would be read as submissions; choose another --out")
    if o in d.parents:
        raise BatchError(f"the class folder {directory} is inside the output folder {out}; choose another --out")
    root = gradescope_export.export_root(directory, SKIP)
    bare = None if root else gradescope_export.export_without_metadata(directory, SKIP)
    if bare is not None and not names_from_folders:
        raise BatchError(f"{bare} is laid out as Gradescope's export but has no "
                         f"{gradescope_export.METADATA}: its submissions cannot be named by their submitters "
                         "(unzip the whole export, or pass --names-from-folders to grade each folder under its "
                         "own name)")
    if bare is not None and bare != directory:
        root = bare  # its folders are the submissions, never the export's own folder as one learner
    submissions = find_submissions(root or directory)
    if not submissions:
        raise BatchError(f"no submissions in {directory}: expected one folder, .zip or .ipynb per learner")
    try:
        export = gradescope_export.read_export(root, submissions, warn, strict=not names_from_folders) \
            if root and bare is None else None
    except gradescope_export.ExportError as err:
        raise BatchError(str(err)) from None
    return (export.submissions if export else submissions), export


def read_seconds(timeout: float) -> float:
    """Seconds to read (and fingerprint) one submission in a batch whose ``--timeout`` is ``timeout``."""
    return min(timeout, READ_SECONDS)


@dataclass
class Prepared:
    """Everything :func:`prepare` read, and the command it was read for (``asked``).

    Every table is keyed by the submission's identity: its submitters' ids in the class files
    (the roster's id where there is a roster; a group's joined by ``+``), the one name of that
    submission in grades, feedback, reports and similarity. ``own`` keeps the name it came
    with (Gradescope's sids or emails, or its folder's name), shown beside it."""
    asked: tuple
    submissions: dict[str, Path]
    export: gradescope_export.Export | None
    learners: list | None  # the roster's, or None without --roster
    loaded: dict = field(default_factory=dict)  # learner -> Submission
    refused: dict[str, str] = field(default_factory=dict)  # learner -> why nothing can be graded
    similar: object = None  # similarity.SimilarityResult with --similarity
    fingerprints: dict = field(default_factory=dict)  # new ones, for similarity.save
    warnings: list[str] = field(default_factory=list)  # said while reading, in order
    claims: dict = field(default_factory=dict)  # submission -> [roster.Learner who handed it in]
    people: list = field(default_factory=list)  # every learner with a row: the roster's, then the others
    owner: dict[str, str] = field(default_factory=dict)  # a submitter's own id -> their id in the class files
    own: dict[str, str] = field(default_factory=dict)  # submission -> the name it came with
    extensions: dict = field(default_factory=dict)  # learner -> their deadline
    adjustments: list = field(default_factory=list)  # controls.Adjustment
    controls: dict[str, str] = field(default_factory=dict)  # file name -> text to keep in OUT
    # Submissions whose identity is ambiguous (an id two submitters give, a roster alias matching
    # two submissions, two with one file name): graded into nobody's row. {"submission": its own
    # name, "submitters": [their ids as given], "reason": why}; and person id -> why, for their row.
    held: list[dict] = field(default_factory=list)
    held_people: dict[str, str] = field(default_factory=dict)
    older: dict[str, list] = field(default_factory=dict)  # submission -> [(folder, created)] it replaces


def asked(directory: Path, out: Path, jobs: int, roster: Path | None, similarity: bool,
          names_from_folders: bool = False, extensions: Path | None = None,
          adjustments: Path | None = None, tz: str | None = None) -> tuple:
    """What a :class:`Prepared` depends on: a batch uses one only if made for its own command."""
    def path(p):
        return str(Path(p).resolve()) if p else None

    return (str(Path(directory).resolve()), str(Path(out).resolve()), jobs, path(roster), bool(similarity),
            bool(names_from_folders), path(extensions), path(adjustments), tz)


def prepare(directory: Path, out: Path, jobs: int, roster: Path | None, similarity: bool,
            warn: Callable[[str], None], names_from_folders: bool = False, extensions: Path | None = None,
            adjustments: Path | None = None, seconds: float | None = None, tz: str | None = None) -> Prepared:
    """Read the class; raises BatchError or RosterError for a command that cannot be right.

    Each submission is read, and fingerprinted with ``similarity``, in a process of its own
    under memory, CPU and time limits (``seconds`` each, default ``limited.READ_SECONDS``;
    the batch passes no more than its ``--timeout``): one that fails is refused alone, with
    a message saying why, and the rest of the class is read.
    """
    said: list[str] = []

    def note(message: str) -> None:
        said.append(message)
        warn(message)

    found, export = check_command(directory, out, jobs, note, names_from_folders)
    kept = Path(out) / ROSTER
    if roster is None and kept.is_file():  # the roster of the last run, as the controls are
        roster = kept
        note(f"roster: the one kept from the last run ({kept}); pass --roster FILE to change it")
    learners = read_roster(roster) if roster else None
    claims = {name: (export.submitters[name] if export else [Learner(name, {}, (name,))])
              for name in found}
    held_claims = {folder: who for folder, (who, _) in (export.held.items() if export else ())}
    people, owner, strangers, ambiguous = class_people(learners, {**claims, **held_claims})
    reasons = {folder: why for folder, (_, why) in (export.held.items() if export else ())}
    reasons.update(_ambiguous(claims, ambiguous))
    identity, clashes = _identities({n: w for n, w in claims.items() if n not in reasons}, owner)
    reasons.update(clashes)
    held = {n: w for n, w in {**claims, **held_claims}.items() if n in reasons}
    claims = {n: w for n, w in claims.items() if n not in reasons}
    found = {n: p for n, p in found.items() if n not in reasons}
    mine = {owner[who.id] for people_ in claims.values() for who in people_}
    roster_ids = {p.id for p in learners} if learners else set()
    held_people = {owner[who.id]: reasons[n] for n, w in held.items() for who in w
                   if owner[who.id] in roster_ids}
    # a stranger whose only submission is held has no row: the held list names them
    people = [p for p in people if p.id in roster_ids or p.id in mine]
    strangers = [s for s in strangers if s in mine]
    if strangers:
        note(f"not on the roster, graded but left out of canvas.csv: {', '.join(strangers)}")
    for n in sorted(held):
        note(f"held, graded into nobody's row: {n}: {reasons[n]}")
    odd = gradescope_export.renamed(sorted({p.id for p in people} | {"+".join(owner[w.id] for w in c)
                                                                    for c in claims.values()}))
    if odd:  # two ids alike but for such characters ("100 1", "100_1") each keep a file of their own
        note(f"{len(odd)} id(s) cannot be file names as they are; their files are named: "
             + "; ".join(odd[:10]) + (f" and {len(odd) - 10} more" if len(odd) > 10 else ""))
    ready = Prepared(asked(directory, out, jobs, roster, similarity, names_from_folders, extensions, adjustments,
                           tz),
                     {identity[n]: p for n, p in found.items()}, _renamed(export, identity), learners,
                     warnings=said, claims={identity[n]: w for n, w in claims.items()}, people=people, owner=owner,
                     own={identity[n]: n for n in found},
                     held=[{"submission": n, "submitters": [w.id for w in held[n]], "reason": reasons[n]}
                           for n in sorted(held)],
                     held_people=held_people,
                     older={identity[n]: o for n, o in (export.older.items() if export else ()) if n in identity})
    if roster is not None:
        ready.controls[ROSTER] = _kept_text(roster)
    _controls(ready, Path(out), extensions, adjustments, note, times.zone(tz))
    for learner, path in ready.submissions.items():
        try:
            ready.loaded[learner] = load(path, seconds)
        except SubmissionError as err:
            ready.refused[learner] = str(err).replace(str(path), learner)
    if similarity:
        finder = sim.Similarity(Path(out) / ".similarity", warn=note, seconds=seconds)
        try:
            prints = finder.code_all({sub.sha256: sub.sources for sub in ready.loaded.values()})
        except StubsMissing as err:
            raise BatchError(f"--similarity: {err}") from None
        code, left_out = {}, {}
        for learner, sub in ready.loaded.items():
            if isinstance(prints[sub.sha256], sim.Unfingerprinted):
                left_out[learner] = str(prints[sub.sha256])
                note(f"{learner}: left out of --similarity: {left_out[learner]}")
            else:
                code[learner] = prints[sub.sha256]
        ready.similar = finder.run(code, left_out)
        ready.fingerprints = finder.new
    return ready


def _kept_text(roster: Path) -> str:
    try:
        return Path(roster).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:  # read a moment ago: gone since
        raise RosterError(f"the roster {roster} cannot be read ({err})") from None


def _identities(claims: dict[str, list], owner: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(names, held)``: submission -> its name in the class files (its submitters' ids there,
    joined by ``+``); and submission -> why it is held. Two submissions that would be one
    learner's (matched by the roster's ids), or that would have one file name, are held, both:
    which one counts is the instructor's call, not the batch's."""
    named, mine, held = {}, {}, {}
    for name in sorted(claims):
        for person in dict.fromkeys(owner[who.id] for who in claims[name]):
            mine.setdefault(person, []).append(name)
        named[name] = gradescope_export.safe_name("+".join(owner[who.id] for who in claims[name]))
    for person, names in mine.items():
        if len(names) > 1:
            for name in names:
                held.setdefault(name, f"{person} is a submitter of {' and '.join(names)} (matched by the "
                                      "roster's ids): which one counts is yours to say")
    files: dict[str, list[str]] = {}
    for name, file in named.items():
        files.setdefault(file, []).append(name)
    for names in files.values():
        if len(names) > 1:
            for name in names:
                held.setdefault(name, f"{' and '.join(names)} would share the file name {named[name]}: "
                                      "which is whose is yours to say")
    return {n: f for n, f in named.items() if n not in held}, held


def _ambiguous(claims: dict[str, list], ambiguous: dict[str, list[str]]) -> dict[str, str]:
    """Submission -> why it is held, for a submitter whose ids match several learners of the roster."""
    held = {}
    for name, who_ in claims.items():
        for who in who_:
            if who.id in ambiguous:
                held.setdefault(name, f"{who.id}'s ids match {' and '.join(ambiguous[who.id])} on the roster: "
                                      "whose it is is yours to say")
    return held


def _renamed(export, identity: dict[str, str]):
    if export is None:
        return None
    # the held submissions have no name in the class files: they are in none of them
    return gradescope_export.Export(export.root, {identity[n]: p for n, p in export.submissions.items()
                                                  if n in identity},
                                    {identity[n]: w for n, w in export.submitters.items() if n in identity},
                                    {identity[n]: t for n, t in export.created.items() if n in identity})


def _controls(ready: Prepared, out: Path, extensions: Path | None, adjustments: Path | None, note, tz=None) -> None:
    """The extensions and adjustments: the files given, else the copies kept in OUT."""
    ids = {}
    submitters = [(who, ready.owner[who.id]) for people in ready.claims.values() for who in people]
    for who, person in [(p, p.id) for p in ready.people] + submitters:  # the roster's ids, then the submitters'
        for alias in (*who.aliases, who.id):
            ids.setdefault(alias, person)
            ids.setdefault(same(alias), person)
    for given, kept, read in ((extensions, controls.EXTENSIONS, lambda f: controls.read_extensions(f, ids, tz)),
                              (adjustments, controls.ADJUSTMENTS, lambda f: controls.read_adjustments(f, ids, POINTS))):
        path = Path(given) if given else out / kept
        if not given and not path.is_file():
            continue
        try:
            value = read(path)
            text = path.read_text(encoding="utf-8-sig")
        except (controls.ControlsError, OSError, UnicodeDecodeError) as err:
            hint = ("; no --roster was given and OUT keeps none, so only the submitters are learners of this "
                    "class: pass --roster" if ready.learners is None and "not a learner" in str(err) else "")
            raise BatchError(str(err) + hint) from None
        if not given:
            note(f"{kept[:-4]}: {len(value)} kept from the last run ({path}); edit that file, or pass "
                 f"--{kept[:-4]} FILE")
        if kept == controls.EXTENSIONS:
            ready.extensions = value
        else:
            ready.adjustments = value
        ready.controls[kept] = text
