"""What a grade depends on besides the submission, and the one hash of it (:func:`fingerprint`).

Three things must notice when a grade could change: the warm service behind ``check()``
restarts (``service/``), the reference outputs kept on disk are stored under a new key
(``grading/cache.py``), and a class's batch grades everything again
(``classroom/batch.py``). All three take the hash from here, so they cannot disagree.

A grade depends on the grader's code (``autograder/`` but ``classroom/``, the instructor's
tools, which grade nothing), on what it grades against (``grade``: the reference solutions
and the lab code and weights chapter 6 uses; ``selfcheck``: the stored public cases of a
learner release), and on the interpreter and the numerical libraries. Standard library only:
the learner's kernel imports it (``service.grade``).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import platform
from pathlib import Path

from . import __version__

HERE = Path(__file__).resolve().parent
KINDS = ("grade", "selfcheck")
LIBRARIES = ("numpy", "torch")
_NOT_GRADING = ("classroom", "__pycache__")  # folders of autograder/ a grade never runs


def files(kind: str) -> list[tuple[str, Path | None]]:
    """``(name, path)`` of every file a grade of ``kind`` depends on, in a fixed order; the path
    None for a package that is not installed (its absence is part of the hash)."""
    if kind not in KINDS:
        raise ValueError(f"no grader kind {kind!r}; known: {', '.join(KINDS)}")
    found = [(f"autograder/{p.relative_to(HERE).as_posix()}", p) for p in sorted(HERE.rglob("*.py"))
             if not _grades_nothing(p)]
    if kind == "selfcheck":
        return found + [(f"autograder/public_cases/{p.name}", p) for p in sorted((HERE / "public_cases").glob("*"))
                        if p.is_file()]
    for package in ("solutions", "lab"):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            found.append((f"{package}/", None))
            continue
        top = Path(next(iter(spec.submodule_search_locations)))
        found += [(f"{package}/{p.relative_to(top).as_posix()}", p) for p in sorted(top.rglob("*"))
                  if p.is_file() and "__pycache__" not in p.parts]
    return found


def _grades_nothing(path: Path) -> bool:
    return any(part in _NOT_GRADING for part in path.relative_to(HERE).parts)


def fingerprint(kind: str) -> str:
    """The hash of everything a grade of ``kind`` depends on besides the submission: the
    files of :func:`files` (names and bytes), the grader's version, Python's, the machine's
    and the numerical libraries' (a new torch may round differently)."""
    versions = [__version__, platform.python_version(), platform.machine()]
    for library in LIBRARIES:
        try:
            versions.append(importlib.metadata.version(library))
        except importlib.metadata.PackageNotFoundError:
            versions.append("-")
    h = hashlib.sha256("\0".join([kind, *versions, ""]).encode())
    for name, path in files(kind):
        try:
            data = path.read_bytes() if path is not None else b"\0missing"
        except OSError:
            data = b"\0unreadable"
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()
