"""What a batch reads before it grades: the class folder's submissions (and its Gradescope
export, if it is one), the roster, each submission's graded sources and, with
``--similarity``, the groups of near-identical code.

None of it needs torch or the grader, so ``mha-grade batch`` does it in a process forked
before torch is imported (:mod:`.ahead`), on the core the import leaves idle; called in
process otherwise. It writes nothing: a command refused later has left no trace.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import gradebook, gradescope_export

SKIP = ("__pycache__", ".ipynb_checkpoints", "__MACOSX")


class BatchError(Exception):
    """An unusable command: one line that names the problem (exit status 2, nothing written)."""


def find_submissions(directory: Path) -> dict[str, Path]:
    """Learner id -> submission path: every sub-directory, ``.zip`` and ``.ipynb`` of DIR."""
    found = {}
    for p in sorted(Path(directory).iterdir()):
        if p.name.startswith(".") or p.name in SKIP or p.is_symlink():
            continue
        if p.is_dir():
            found[p.name] = p
        elif p.suffix.lower() in (".zip", ".ipynb") and p.is_file():
            found[p.stem] = p
    return found


def content_hash(path: Path) -> str:
    """The hash of what the grader reads from ``path`` (its graded sources), or of the reason
    it reads nothing."""
    from ..submission import SubmissionError, load

    try:
        return load(path).sha256
    except SubmissionError as err:
        return "unreadable:" + hashlib.sha256(str(err).encode()).hexdigest()


def check_command(directory: Path, out: Path, jobs: int,
                  warn=lambda message: None) -> tuple[dict[str, Path], gradescope_export.Export | None]:
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
    submissions = find_submissions(root or directory)
    if not submissions:
        raise BatchError(f"no submissions in {directory}: expected one folder, .zip or .ipynb per learner")
    export = gradescope_export.read_export(root, submissions, warn) if root else None
    return (export.submissions if export else submissions), export


def read_seconds(timeout: float) -> float:
    """Seconds to read (and fingerprint) one submission in a batch whose ``--timeout`` is ``timeout``."""
    from ..limited import READ_SECONDS

    return min(timeout, READ_SECONDS)


@dataclass
class Prepared:
    """Everything :func:`prepare` read, and the command it was read for (``asked``)."""
    asked: tuple
    submissions: dict[str, Path]
    export: gradescope_export.Export | None
    learners: list | None  # the roster's, or None without --roster
    loaded: dict = field(default_factory=dict)  # learner -> Submission
    refused: dict[str, str] = field(default_factory=dict)  # learner -> why nothing can be graded
    similar: object = None  # similarity.SimilarityResult with --similarity
    fingerprints: dict = field(default_factory=dict)  # new ones, for similarity.save
    warnings: list[str] = field(default_factory=list)  # said while reading, in order


def asked(directory: Path, out: Path, jobs: int, roster: Path | None, similarity: bool) -> tuple:
    """What a :class:`Prepared` depends on: a batch uses one only if made for its own command."""
    return (str(Path(directory).resolve()), str(Path(out).resolve()), jobs,
            str(Path(roster).resolve()) if roster else None, bool(similarity))


def prepare(directory: Path, out: Path, jobs: int, roster: Path | None, similarity: bool,
            warn: Callable[[str], None], seconds: float | None = None) -> Prepared:
    """Read the class; raises BatchError or RosterError for a command that cannot be right.

    Each submission is read, and fingerprinted with ``similarity``, in a process of its own
    under memory, CPU and time limits (``seconds`` each, default ``limited.READ_SECONDS``;
    the batch passes no more than its ``--timeout``): one that fails is refused alone, with
    a message saying why, and the rest of the class is read.
    """
    from ..submission import SubmissionError, load

    said: list[str] = []

    def note(message: str) -> None:
        said.append(message)
        warn(message)

    submissions, export = check_command(directory, out, jobs, note)
    learners = gradebook.read_roster(roster) if roster else None
    ready = Prepared(asked(directory, out, jobs, roster, similarity), submissions, export, learners,
                     warnings=said)
    for learner, path in submissions.items():
        try:
            ready.loaded[learner] = load(path, seconds)
        except SubmissionError as err:
            ready.refused[learner] = str(err).replace(str(path), learner)
    if similarity:
        from . import similarity as sim
        from ..stubs import StubsMissing

        finder = sim.Similarity(Path(out) / ".similarity", warn=note, seconds=seconds)
        try:
            found = finder.code_all({sub.sha256: sub.sources for sub in ready.loaded.values()})
        except StubsMissing as err:
            raise BatchError(f"--similarity: {err}") from None
        code, left_out = {}, {}
        for learner, sub in ready.loaded.items():
            if isinstance(found[sub.sha256], sim.Unfingerprinted):
                left_out[learner] = str(found[sub.sha256])
                note(f"{learner}: left out of --similarity: {left_out[learner]}")
            else:
                code[learner] = found[sub.sha256]
        ready.similar = finder.run(code, left_out)
        ready.fingerprints = finder.new
    return ready
