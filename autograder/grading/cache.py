"""The reference's outputs and the drawn cases, kept on disk between grading runs.

A grading run compares the learner's outputs with the reference's on the same cases; with
the same grader, seed and library versions those reference outputs are the same every
time, and computing them is most of the grader's own work (a few hundred milliseconds, most
of it chapter 6's model). So they are stored, per exercise and seed, under a key that
changes with anything they depend on (:func:`key`: the one hash of what a grade depends on,
``autograder/depends.py``), and each stored output is used only for a case whose driver and
inputs hash the same. The cases themselves are
stored too (:func:`cases`: chapter 6's draw reads the lab's weights and data), each file
naming the exercise, seed and drawing function it holds.

Where: ``$MHA_GRADE_CACHE``, else ``$XDG_CACHE_HOME/mha-grade`` or ``~/.cache/mha-grade``,
a directory of the grader's user with mode 0700 (on Gradescope, root's: the learner's
unprivileged process cannot read it). ``MHA_GRADE_CACHE=off`` turns it off; a directory
that is not private is not used. Files hold plain data in the learner protocol's format
(``isolation/protocol.py``) after its SHA-256: nothing is unpickled, and a file that is
damaged or unreadable is recomputed.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from .. import depends
from ..isolation import protocol
from ..spec import Case
from . import judge

KEEP = 8  # grader versions whose outputs stay on disk (a few hundred kB each)
_KEY: list = []  # computed once per process
_WARMED: dict = {}  # id(cases) -> cases: already looked up in this process


def directory() -> Path | None:
    """The cache directory, created private; None when turned off or not private."""
    chosen = os.environ.get("MHA_GRADE_CACHE", "")
    if chosen.lower() in ("off", "0", "no"):
        return None
    base = Path(chosen) if chosen else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mha-grade"
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = base.stat()
    except OSError:
        return None
    if hasattr(os, "geteuid") and (st.st_uid != os.geteuid() or st.st_mode & 0o077):
        return None  # someone else's, or readable by others: not a place for expected outputs
    return base


def key() -> str:
    """A hash of everything the reference outputs depend on: what a grade depends on
    (``depends.fingerprint``, the same hash the warm service restarts on), once per process."""
    if not _KEY:
        _KEY.append(depends.fingerprint("grade")[:32])
    return _KEY[0]


def cases(exercise, seed: int, draw) -> list:
    """The exercise's grading cases for ``seed``: from disk when stored, else ``draw()``-n now
    and stored (chapter 6's draw reads the lab's weights and data: 60 ms of a grade)."""
    where, version = directory(), key()
    # The drawing function by name: one of the checks' own (whose source ``key`` covers), never
    # a stand-in (a test's lambda) that would read or leave the real cases' file.
    drawer = f"{getattr(exercise.cases, '__module__', '')}.{getattr(exercise.cases, '__qualname__', '<?>')}"
    if where is None or "<" in drawer or not drawer.startswith(__package__ + ".exercises."):
        return draw()
    path = where / version / f"{seed}-{exercise.id}-cases.bin"
    identity = [exercise.id, seed, drawer]
    stored = _read(path, "cases")
    if stored is not None and stored.get("for") == identity:  # not another's file renamed
        try:
            return [Case(name, driver, inputs, weight, rtol, atol, tuple(properties), timeout, rung, features)
                    for name, driver, inputs, weight, rtol, atol, properties, timeout, rung, features
                    in stored["cases"]]
        except (TypeError, ValueError):  # not the layout written below: drawn again
            pass
    drawn = draw()
    rows = [[c.name, c.driver, c.inputs, c.weight, c.rtol, c.atol, list(c.properties), c.timeout, c.rung,
             dict(c.features)] for c in drawn]
    if _same(protocol.decode(protocol.encode(rows)[8:]), rows):
        _write(path, {"for": identity, "cases": rows})
    return drawn


def warm(exercise, seed: int, cases: list) -> None:
    """Put the reference outputs of ``cases`` in the judge's memory: from disk when stored,
    else computed now and stored for the next run."""
    if _WARMED.get(id(cases)) is cases:
        return
    _WARMED[id(cases)] = cases
    where, version = directory(), key()
    if where is None:
        return
    path = where / version / f"{seed}-{exercise.id}.bin"
    digests = [_digest(c) for c in cases]
    stored = _read(path, "outputs")
    if stored is not None and stored.get("digests") == digests:
        for case, output in zip(cases, stored["outputs"]):
            judge.keep_reference_output(case, output)
        return
    try:
        outputs = [judge.reference_output(c) for c in cases]
    except Exception:  # noqa: BLE001  the judge reports it for this exercise
        return
    if all(_same(protocol.decode(protocol.encode(o)[8:]), o) for o in outputs):
        _write(path, {"digests": digests, "outputs": outputs})


def forget_warmed() -> None:
    """Forget which case lists were looked up: the next :func:`warm` reads the disk again."""
    _WARMED.clear()


def _digest(case) -> str:
    return hashlib.sha256(protocol.encode([case.driver, case.inputs])).hexdigest()


def _read(path: Path, field: str):
    try:
        data = path.read_bytes()
        if hashlib.sha256(data[32:]).digest() != data[:32]:
            return None  # damaged (or edited): recomputed
        value = protocol.decode(data[40:])
    except (OSError, protocol.Garbage, ValueError):
        return None
    return value if isinstance(value, dict) and isinstance(value.get(field), list) else None


def _write(path: Path, value) -> None:
    try:
        frame = protocol.encode(value)
        if not path.parent.exists():
            _prune(path.parent.parent)
            path.parent.mkdir(mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(frame).digest() + frame)
        os.replace(tmp, path)
    except (OSError, protocol.Garbage):
        pass  # a cache that cannot be written costs only time


def _prune(where: Path, keep: int = KEEP) -> None:
    """Forget the outputs of all but the ``keep - 1`` most recent other grader versions."""
    versions = sorted((p for p in where.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in versions[: max(len(versions) - keep + 1, 0)]:
        shutil.rmtree(old, ignore_errors=True)


def _same(a, b) -> bool:
    """Whether the stored form reads back as the same data, types included."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and (a == b or (a != a and b != b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(map(_same, a, b))
    return a == b or (a != a and b != b)
