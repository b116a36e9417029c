"""Reading a submission: the learner's exercise modules, as source text.

A submission is a directory holding the exercise modules (``attention.py``, ``masking.py``,
...) or a ``.zip`` of one. The grader only ever *reads* it: the sources travel as text to
the learner's isolated process, which executes them there. A module missing from the
submission counts as "not attempted" for its exercises.

Other formats join through :data:`READERS`: a function from a path to ``{module: source}``
(``autograder/notebooks.py`` registers one for ``.ipynb`` notebooks).
"""
from __future__ import annotations

import hashlib
import posixpath
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .notebooks import MAX_NOTEBOOK, modules_from_notebooks, read_notebook
from .spec import MODULE_OF

MODULES = tuple(dict.fromkeys(MODULE_OF.values()))  # attention, masking, ..., efficient
MAX_SOURCE = 1 * 2**20  # bytes per module: exercise modules are a few kB
MAX_ZIP_MEMBERS = 1000


class SubmissionError(Exception):
    """The submission cannot be read at all (the grader exits with status 2)."""


@dataclass(frozen=True)
class Submission:
    path: str
    sources: dict[str, str]  # module name -> source text, only the modules present

    @property
    def sha256(self) -> str:
        """A content hash over the sorted module sources: which code this grade is for."""
        h = hashlib.sha256()
        for name in sorted(self.sources):
            h.update(f"{name}\0{len(self.sources[name])}\0".encode())
            h.update(self.sources[name].encode())
        return h.hexdigest()


def load(path: str | Path) -> Submission:
    """The submission at ``path``; SubmissionError when it does not exist or is unreadable."""
    p = Path(path)
    if not p.exists():
        raise SubmissionError(f"no submission at {str(path)!r}: give a directory of exercise modules or a .zip")
    for suffix, reader in READERS.items():
        if p.is_file() and p.name.lower().endswith(suffix):
            return Submission(str(p), reader(p))
    if p.is_dir():
        return Submission(str(p), read_directory(p))
    raise SubmissionError(f"{str(path)!r} is neither a directory nor one of {', '.join(READERS)}")


def read_directory(directory: Path) -> dict[str, str]:
    sources = {}
    links = [f.name for f in directory.iterdir() if f.is_symlink() and f.suffix in (".py", ".ipynb")]
    if links:  # read here, by the grader: a link could name the reference solutions
        raise SubmissionError(f"{directory}: {', '.join(sorted(links))}: symbolic links are not accepted; "
                              "submit the files themselves")
    for name in MODULES:
        f = directory / f"{name}.py"
        if f.is_file():
            sources[name] = _text(f.read_bytes(), f"{name}.py")
    notebooks = {f.name: f.read_bytes() for f in sorted(directory.glob("*.ipynb")) if f.is_file()}
    return _with_notebooks(sources, notebooks)


def read_zip(path: Path) -> dict[str, str]:
    """The exercise modules of a zip, found at its top or in one folder (``mha_exercises/``).

    Members are read into memory by name, never extracted, so a ``../`` name cannot write
    anywhere; sizes are checked before reading (a zip bomb is refused, not inflated).
    """
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            if len(infos) > MAX_ZIP_MEMBERS:
                raise SubmissionError(f"{path}: more than {MAX_ZIP_MEMBERS} files")
            by_module: dict[str, list[zipfile.ZipInfo]] = {}
            for info in infos:
                name = posixpath.normpath(info.filename.replace("\\", "/"))
                if info.is_dir() or name.startswith(("../", "/")) or "__MACOSX" in name:
                    continue
                folder, base = posixpath.split(name)
                if base.endswith(".py") and base[:-3] in MODULES and folder.count("/") < 1:
                    by_module.setdefault(base[:-3], []).append(info)
                elif base.endswith(".ipynb") and folder.count("/") < 1 and ".ipynb_checkpoints" not in name:
                    by_module.setdefault(base, []).append(info)  # a notebook, read below
            # The shallowest copy of each module wins (a zip of the folder or of its files).
            sources, notebooks = {}, {}
            for module, candidates in by_module.items():
                info = min(candidates, key=lambda i: i.filename.count("/"))
                if module.endswith(".ipynb"):
                    if info.file_size > MAX_NOTEBOOK:
                        raise SubmissionError(f"{path}: {info.filename} is larger than {MAX_NOTEBOOK} bytes")
                    with z.open(info) as f:
                        notebooks[module] = f.read(MAX_NOTEBOOK + 1)
                    continue
                if info.file_size > MAX_SOURCE:
                    raise SubmissionError(f"{path}: {info.filename} is larger than {MAX_SOURCE} bytes")
                with z.open(info) as f:
                    sources[module] = _text(f.read(MAX_SOURCE + 1), info.filename)
            return _with_notebooks(sources, notebooks)
    except (zipfile.BadZipFile, OSError) as err:
        raise SubmissionError(f"{path}: not a readable zip ({err})") from None


def _text(data: bytes, name: str) -> str:
    if len(data) > MAX_SOURCE:
        raise SubmissionError(f"{name} is larger than {MAX_SOURCE} bytes")
    # Undecodable bytes stay visible as replacement characters: Python then reports a
    # syntax error for that module (its exercises score 0), the grader itself goes on.
    return data.decode("utf-8", errors="replace")


def _with_notebooks(sources: dict[str, str], notebooks: dict[str, bytes]) -> dict[str, str]:
    """Module files first; chapter notebooks (autograder/notebooks.py) supply the modules missing."""
    if notebooks:
        for module, source in modules_from_notebooks(notebooks).items():
            sources.setdefault(module, source)
    return sources


# Suffix -> reader for file submissions.
READERS: dict[str, Callable[[Path], dict[str, str]]] = {".zip": read_zip, ".ipynb": read_notebook}
