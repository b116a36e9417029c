"""Reading a submission: the learner's exercise modules, as source text, and what was taken.

A submission is whatever a learner hands in: a folder, a ``.zip``, a notebook, or a folder
holding a zip (Gradescope's upload of one file). The exercise modules (``attention.py``,
``masking.py``, ...) and chapter notebooks (``01_attention.ipynb``, ...) are found anywhere
inside it: at the top, in ``hw3/`` or ``mha_exercises/``, or in a whole repository tree;
everything else is ignored. The grader only ever *reads* it: the sources travel as text to
the learner's isolated process, which executes them there. ``Submission.taken`` and
``Submission.ignored`` say, in words a learner can check, which files were graded and which
were not; a module missing from the submission counts as "not attempted" for its exercises,
and a submission with no exercise file at all is refused (:class:`SubmissionError`).

Safety: zip members are read into memory by name, never extracted (a ``../`` name cannot
write anywhere, and is ignored); symbolic links, in a folder or a zip, are never followed
(one could point at the grader's own files); sizes are checked before reading, each file's
and the whole submission's (``MAX_TOTAL``, zips inside it and notebooks included). The reading
itself runs in a forked process under memory, CPU and time limits (:mod:`autograder.limited`):
a file built to make a parser recurse, allocate or spin refuses that one submission, with a
message saying why, and costs the grader nothing.

In reading order: the caps and the refusal (``limits.py``), the files listed without being
read, from folders and zips (``files.py``), which of them are graded and as which module
(``choice.py``: among copies, a folder named ``mha_exercises`` first, then the shallowest; a
module still the unfilled stub gives way to a notebook, whose code cells ``notebooks.py``
extracts), then :func:`load` here. What other
modules use is importable from ``autograder.submission``.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .. import limited
from .choice import MODULES, choose  # noqa: F401  (MODULES and the caps: what the reader's users need)
from .files import File, Tree, walk, zip_members
from .limits import MAX_FILES, MAX_NESTED_ZIP, MAX_SOURCE, MAX_TOTAL, SubmissionError  # noqa: F401


@dataclass(frozen=True)
class Submission:
    path: str
    sources: dict[str, str]  # module name -> source text, only the modules present
    taken: tuple[str, ...] = ()  # "attention.py (from hw3/attention.py)", ...
    ignored: tuple[str, ...] = ()  # files not graded, and why
    misnamed: tuple[str, ...] = ()  # "Attention.py taken as attention.py", "atention.py: did you mean attention.py?"

    @property
    def sha256(self) -> str:
        """A content hash over the sorted module sources: which code this grade is for."""
        h = hashlib.sha256()
        for name in sorted(self.sources):
            h.update(f"{name}\0{len(self.sources[name])}\0".encode())
            h.update(self.sources[name].encode())
        return h.hexdigest()

    def intake(self) -> str:
        """One paragraph for a report: what was graded, what was not."""
        text = "Graded: " + "; ".join(self.taken)
        if self.ignored:
            text += ". Not graded: " + "; ".join(self.ignored)
        return text


def load(path: str | Path, seconds: float | None = None) -> Submission:
    """The submission at ``path``; SubmissionError when it does not exist, is unreadable, holds
    no exercise file, or could not be read within the limits (``seconds``: wall and CPU time,
    default ``limited.READ_SECONDS``)."""
    if _only_modules(Path(path)):
        try:  # nothing here parses learner bytes: the byte caps bound it, and a fork would cost more
            return read(path)
        except (OSError, RecursionError, MemoryError) as err:
            raise SubmissionError(f"the grader refused this submission: {type(err).__name__}: {err}") from None
    try:
        data = limited.call(_load_data, str(path), what="reading the submission", expected=SubmissionError,
                            seconds=limited.READ_SECONDS if seconds is None else seconds)
    except limited.Refused as err:
        raise SubmissionError(f"the grader refused this submission: {err}") from None
    try:
        return Submission(data["path"], dict(data["sources"]), tuple(data["taken"]), tuple(data["ignored"]),
                          tuple(data["misnamed"]))
    except (KeyError, TypeError, ValueError):
        raise SubmissionError("the grader refused this submission: reading it gave a malformed answer") from None


def _only_modules(top: Path) -> bool:
    """Whether ``top`` is a folder holding no notebook and no zip, in no more than ``MAX_FILES``
    entries (its reading then parses nothing and lists little), in a look that stops there."""
    if top.is_symlink() or not top.is_dir():
        return False
    seen, folders = 0, [top]
    while folders:
        try:
            entries = os.scandir(folders.pop())
        except OSError:
            return False
        with entries:
            for entry in entries:
                seen += 1
                name = entry.name.lower()
                if seen > MAX_FILES or name.endswith((".ipynb", ".zip")):
                    return False
                if entry.is_dir(follow_symlinks=False):  # all of them: the reading looks into some that it skips
                    folders.append(Path(entry.path))
    return True


def _load_data(path: str) -> dict:
    s = read(path)
    return {"path": s.path, "sources": s.sources, "taken": list(s.taken), "ignored": list(s.ignored),
            "misnamed": list(s.misnamed)}


def read(path: str | Path) -> Submission:
    """What :func:`load` reads, in this process and without its limits (the byte caps hold)."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise SubmissionError(f"no submission at {str(path)!r}: give a directory of exercise modules or a .zip")
    tree = Tree()
    if p.is_symlink() and not p.is_dir():
        raise SubmissionError(f"{str(path)!r} is a symbolic link: hand in the file itself")
    if p.is_dir():
        walk(p, tree)
    elif p.is_file() and p.suffix.lower() == ".zip":
        zip_members(p.name, p.read_bytes if p.stat().st_size <= MAX_NESTED_ZIP else None,
                    p.stat().st_size, "", tree, top=True)
    elif p.is_file():
        tree.files.append(File(p.name, p.stat().st_size, p.read_bytes))
    else:
        raise SubmissionError(f"{str(path)!r} is neither a directory nor a file")
    return Submission(str(p), *choose(str(p), tree))
