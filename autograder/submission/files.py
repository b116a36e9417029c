"""A submission's files, listed without being read: a folder walked, a zip's members by name
(never extracted, no link followed: the package's docstring says why), and what was left out
of the listing and why. A :class:`File` is read only once chosen, by :func:`read_file`, which
counts its bytes, as :func:`zip_members` counts a zip's, against the submission's total.
"""
from __future__ import annotations

import io
import os
import posixpath
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..inert import excerpt
from .limits import (MAX_DEPTH, MAX_FILES, MAX_NESTED_ZIP, MAX_PATH, MAX_SHOWN, MAX_TOTAL, MAX_ZIP_MEMBERS,
                     SubmissionError)

# Folders that never hold the learner's own exercise code (a repository tree has them).
NOT_THEIRS = frozenset({"solutions", "autograder", "tests", "lab", "bench", "scripts", "site-packages",
                        "node_modules", "_build", "build", "dist", "__pycache__", ".ipynb_checkpoints",
                        "__MACOSX", "venv", ".venv", "env"})


@dataclass
class File:
    """A file of the submission, not yet read: its path inside it and how to read it."""

    path: str  # posix, relative to the submission's top
    size: int
    read: object  # () -> bytes

    @property
    def parts(self) -> list[str]:
        return self.path.split("/")


@dataclass
class Tree:
    """What the listing found: the files, what it left out (and why), the bytes read so far."""

    files: list[File] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    read: int = 0  # bytes read into memory so far

    def spend(self, size: int, what: str) -> None:
        """Count ``size`` more bytes read; SubmissionError once the submission's total is over MAX_TOTAL."""
        self.read += size
        if self.read > MAX_TOTAL:
            raise SubmissionError(f"the submission's files add up to more than {MAX_TOTAL // 2**20} MB (at {what}); "
                                  "hand in only the exercise modules or the chapter notebooks")


def folders(top, note, *, depth: int = MAX_DEPTH):
    """``os.walk(top)`` top-down without following links, and without recursion (Python's own
    recurses once per level: 1,200 nested folders raise RecursionError), each folder's names
    sorted: yields ``(folder, rel, dirs, files)``, ``rel`` the folder's path from ``top``
    ("" or ending in "/"); the caller may prune ``dirs`` in place. Folders deeper than
    ``depth`` are not looked into, and ``note`` says so once."""
    stack = [(str(top), "", 0)]
    deep = False
    while stack:
        folder, rel, level = stack.pop()
        try:
            with os.scandir(folder) as entries:
                listed = [(e.name, _is_dir(e), e.is_symlink()) for e in entries]
        except OSError:
            continue  # unreadable, or its path too long for the kernel: nothing in it is looked at
        dirs = sorted(n for n, is_dir, _ in listed if is_dir)  # a link to a folder too, as os.walk lists it
        files = sorted(n for n, is_dir, _ in listed if not is_dir)
        links = {n for n, _, link in listed if link}
        yield folder, rel, dirs, files
        dirs = [d for d in dirs if d not in links]  # listed, never followed
        if dirs and level >= depth:
            if not deep:
                note(f"{excerpt(rel, MAX_SHOWN)} (folders more than {depth} deep are not looked into)")
                deep = True
            continue
        stack += [(os.path.join(folder, d), f"{rel}{d}/", level + 1) for d in reversed(dirs)]


def _is_dir(entry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def walk(top: Path, tree: Tree) -> None:
    """The files under the folder ``top`` into ``tree``, a zip's members for each zip among them."""
    seen = 0
    for folder, rel, dirs, files in folders(top, tree.ignored.append):
        kept = []
        for d in dirs:
            if (Path(folder) / d).is_symlink():
                tree.ignored.append(f"{rel}{d}/ (a symbolic link, not followed)")
            elif d in NOT_THEIRS or d.startswith("."):
                if d not in ("__pycache__", ".ipynb_checkpoints", "__MACOSX", ".git") and _has_code(Path(folder) / d):
                    tree.ignored.append(f"{rel}{d}/ (not the learner's exercise code)")
            elif len(rel) + len(d) >= MAX_PATH:
                tree.ignored.append(f"{excerpt(rel + d, MAX_SHOWN)}/ (a path longer than {MAX_PATH} "
                                    "characters, not looked into)")
            else:
                kept.append(d)
        dirs[:] = kept
        for name in files:
            seen += 1
            if seen > MAX_FILES:
                tree.ignored.append(f"everything after the first {MAX_FILES} files")
                return
            f = Path(folder) / name
            if name.startswith("."):
                continue
            try:
                st = f.lstat()
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                if name.endswith((".py", ".ipynb", ".zip")):
                    tree.ignored.append(f"{rel}{name} (a symbolic link, not followed)")
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if name.lower().endswith(".zip"):
                zip_members(rel + name, (lambda f=f: f.read_bytes()) if st.st_size <= MAX_NESTED_ZIP else None,
                            st.st_size, rel + name + "/", tree)
            else:
                tree.files.append(File(rel + name, st.st_size, lambda f=f: f.read_bytes()))


def _has_code(folder: Path) -> bool:
    try:
        return any(f.suffix in (".py", ".ipynb") for f in folder.iterdir())
    except OSError:
        return False


def zip_members(name: str, read, size: int, prefix: str, tree: Tree, top: bool = False) -> None:
    """The members of a zip (the submission itself, or a zip inside it; one level deep)."""
    if read is None:
        tree.ignored.append(f"{name} (a zip larger than {MAX_NESTED_ZIP // 2**20} MB)")
        return
    tree.spend(size, name)
    try:
        z = zipfile.ZipFile(io.BytesIO(read()))
        infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        if top:
            raise SubmissionError(f"{name}: not a readable zip ({err})") from None
        tree.ignored.append(f"{name} (not a readable zip: {err})")
        return
    if len(infos) > MAX_ZIP_MEMBERS:
        if top:
            raise SubmissionError(f"{name}: more than {MAX_ZIP_MEMBERS} files")
        tree.ignored.append(f"{name} (more than {MAX_ZIP_MEMBERS} files)")
        return
    long = 0
    for info in infos:
        raw = info.filename.replace("\\", "/")
        if info.is_dir():
            continue
        if len(prefix) + len(raw) > MAX_PATH:  # counted, never copied into what the learner is told
            long += 1
            continue
        member = posixpath.normpath(raw)
        if raw.startswith("/") or member.startswith("../") or member == ".." or ":" in member.split("/")[0]:
            tree.ignored.append(f"{prefix}{raw} (a path leading outside the zip, refused)")
            continue
        if stat.S_ISLNK(info.external_attr >> 16):
            tree.ignored.append(f"{prefix}{raw} (a symbolic link, refused)")
            continue
        parts = member.split("/")
        if any(p in NOT_THEIRS or p.startswith(".") for p in parts[:-1]) or parts[-1].startswith("."):
            continue
        if member.lower().endswith(".zip"):
            if top:  # a zip inside the uploaded zip: one level is enough for any honest upload
                zip_members(prefix + member, (lambda z=z, i=info: z.read(i)) if info.file_size <= MAX_NESTED_ZIP
                            else None, info.file_size, prefix + member + "/", tree)
            continue
        tree.files.append(File(prefix + member, info.file_size, lambda z=z, i=info: z.read(i)))
    if long:
        tree.ignored.append(f"{long} file(s) of {excerpt(name, MAX_SHOWN)} under a path longer than "
                            f"{MAX_PATH} characters (not looked at)")


def read_file(f: File, limit: int, tree: Tree) -> bytes:
    """The bytes of ``f``, at most ``limit`` of them (SubmissionError past it), counted in ``tree``."""
    if f.size > limit:
        raise SubmissionError(f"{f.path} is larger than {limit} bytes")
    tree.spend(f.size, f.path)
    try:
        data = f.read()
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError) as err:
        raise SubmissionError(f"{f.path} cannot be read ({err})") from None
    if len(data) > limit:
        raise SubmissionError(f"{f.path} is larger than {limit} bytes")
    return data
