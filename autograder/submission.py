# Long on purpose: one reading of hostile bytes, top to bottom (find, list, choose, name the misnamed), its
# private _Tree and _File handed from step to step; split, the safety argument below would span files.
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

Choosing among several copies of a module: a copy in a folder named ``mha_exercises`` first,
then the shallowest; folders that are not the learner's (``solutions/``, ``autograder/``,
virtual environments, caches) are never searched. A module file that is still the course's
unfilled stub gives way to a notebook that defines its exercises.

Safety: zip members are read into memory by name, never extracted (a ``../`` name cannot
write anywhere, and is ignored); symbolic links, in a folder or a zip, are never followed
(one could point at the grader's own files); sizes are checked before reading, each file's
and the whole submission's (``MAX_TOTAL``, zips inside it and notebooks included). The reading
itself runs in a forked process under memory, CPU and time limits (:mod:`.limited`): a file
built to make a parser recurse, allocate or spin refuses that one submission, with a message
saying why, and costs the grader nothing.
"""
from __future__ import annotations

import difflib
import hashlib
import io
import os
import posixpath
import re
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .notebooks import MAX_NOTEBOOK, extract_notebooks
from .spec import MODULE_OF

MODULES = tuple(dict.fromkeys(MODULE_OF.values()))  # attention, masking, ..., efficient
MAX_SOURCE = 1 * 2**20  # bytes per module: exercise modules are a few kB
MAX_ZIP_MEMBERS = 1000
MAX_FILES = 5000  # entries looked at in a folder tree: a repository with its history is far below
MAX_NESTED_ZIP = 20 * 2**20  # bytes of a zip inside the submission, read into memory
MAX_TOTAL = 64 * 2**20  # bytes read from one submission in all: its zips, modules and notebooks together
# Folders that never hold the learner's own exercise code (a repository tree has them).
NOT_THEIRS = frozenset({"solutions", "autograder", "tests", "lab", "bench", "scripts", "site-packages",
                        "node_modules", "_build", "build", "dist", "__pycache__", ".ipynb_checkpoints",
                        "__MACOSX", "venv", ".venv", "env"})
PREFERRED_FOLDER = "mha_exercises"


class SubmissionError(Exception):
    """The submission cannot be graded at all (the grader exits with status 2)."""

    def __init__(self, message: str):
        from .inert import inert

        # It names the learner's files (a zip member may be named anything): inert for every
        # place it is printed (the terminal, Gradescope's output, check()).
        super().__init__(inert(message))


def _limited():
    from . import limited

    return limited


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


@dataclass
class _File:
    """A file of the submission, not yet read: its path inside it and how to read it."""

    path: str  # posix, relative to the submission's top
    size: int
    read: object  # () -> bytes

    @property
    def parts(self) -> list[str]:
        return self.path.split("/")


@dataclass
class _Tree:
    files: list[_File] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    read: int = 0  # bytes read into memory so far

    def spend(self, size: int, what: str) -> None:
        """Count ``size`` more bytes read; SubmissionError once the submission's total is over MAX_TOTAL."""
        self.read += size
        if self.read > MAX_TOTAL:
            raise SubmissionError(f"the submission's files add up to more than {MAX_TOTAL // 2**20} MB (at {what}); "
                                  "hand in only the exercise modules or the chapter notebooks")


def load(path: str | Path, seconds: float | None = None) -> Submission:
    """The submission at ``path``; SubmissionError when it does not exist, is unreadable, holds
    no exercise file, or could not be read within the limits (``seconds``: wall and CPU time,
    default ``limited.READ_SECONDS``)."""
    if _only_modules(Path(path)):
        try:  # nothing here parses learner bytes: the byte caps bound it, and a fork would cost more
            return read(path)
        except (OSError, RecursionError, MemoryError) as err:
            raise SubmissionError(f"the grader refused this submission: {type(err).__name__}: {err}") from None
    limited = _limited()
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
    tree = _Tree()
    if p.is_symlink() and not p.is_dir():
        raise SubmissionError(f"{str(path)!r} is a symbolic link: hand in the file itself")
    if p.is_dir():
        _walk(p, tree)
    elif p.is_file() and p.suffix.lower() == ".zip":
        _zip_members(p.name, p.read_bytes if p.stat().st_size <= MAX_NESTED_ZIP else None,
                     p.stat().st_size, "", tree, top=True)
    elif p.is_file():
        tree.files.append(_File(p.name, p.stat().st_size, p.read_bytes))
    else:
        raise SubmissionError(f"{str(path)!r} is neither a directory nor a file")
    return _choose(str(p), tree)


# ------------------------------------------------------------------------- listing files

def _walk(top: Path, tree: _Tree) -> None:
    seen = 0
    for folder, dirs, files in os.walk(top, followlinks=False):
        rel = Path(folder).relative_to(top).as_posix()
        rel = "" if rel == "." else rel + "/"
        kept = []
        for d in sorted(dirs):
            if (Path(folder) / d).is_symlink():
                tree.ignored.append(f"{rel}{d}/ (a symbolic link, not followed)")
            elif d in NOT_THEIRS or d.startswith("."):
                if d not in ("__pycache__", ".ipynb_checkpoints", "__MACOSX", ".git") and _has_code(Path(folder) / d):
                    tree.ignored.append(f"{rel}{d}/ (not the learner's exercise code)")
            else:
                kept.append(d)
        dirs[:] = kept
        for name in sorted(files):
            seen += 1
            if seen > MAX_FILES:
                tree.ignored.append(f"everything after the first {MAX_FILES} files")
                return
            f = Path(folder) / name
            if name.startswith("."):
                continue
            st = f.lstat()
            if stat.S_ISLNK(st.st_mode):
                if name.endswith((".py", ".ipynb", ".zip")):
                    tree.ignored.append(f"{rel}{name} (a symbolic link, not followed)")
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if name.lower().endswith(".zip"):
                _zip_members(rel + name, (lambda f=f: f.read_bytes()) if st.st_size <= MAX_NESTED_ZIP else None,
                             st.st_size, rel + name + "/", tree)
            else:
                tree.files.append(_File(rel + name, st.st_size, lambda f=f: f.read_bytes()))


def _has_code(folder: Path) -> bool:
    try:
        return any(f.suffix in (".py", ".ipynb") for f in folder.iterdir())
    except OSError:
        return False


def _zip_members(name: str, read, size: int, prefix: str, tree: _Tree, top: bool = False) -> None:
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
    for info in infos:
        raw = info.filename.replace("\\", "/")
        member = posixpath.normpath(raw)
        if info.is_dir():
            continue
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
                _zip_members(prefix + member, (lambda z=z, i=info: z.read(i)) if info.file_size <= MAX_NESTED_ZIP
                             else None, info.file_size, prefix + member + "/", tree)
            continue
        tree.files.append(_File(prefix + member, info.file_size, lambda z=z, i=info: z.read(i)))


# --------------------------------------------------------------------------- choosing

def _rank(f: _File) -> tuple:
    folders = f.parts[:-1]
    return (PREFERRED_FOLDER not in folders, len(folders), f.path)


def _choose(where: str, tree: _Tree) -> Submission:
    modules: dict[str, list[_File]] = {}
    notebooks: dict[str, list[_File]] = {}
    other: list[str] = []
    renamed: list[_File] = []
    for f in tree.files:
        base = f.parts[-1]
        if base.endswith(".py") and base[:-3] in MODULES:
            modules.setdefault(base[:-3], []).append(f)
        elif base.lower().endswith(".ipynb"):
            notebooks.setdefault(base, []).append(f)
        elif _expected_module(base):
            renamed.append(f)
        else:
            other.append(f.path)
    ignored = list(tree.ignored)
    misnamed = _take_misnamed(renamed, modules, ignored)
    sources, taken, origin = {}, [], {}
    for module in MODULES:
        if module not in modules:
            continue
        best, *rest = sorted(modules[module], key=_rank)
        sources[module] = _text(_read(best, MAX_SOURCE, tree), best.path)
        origin[module] = best.path
        ignored += [f"{f.path} (another copy of {module}.py; {best.path} was graded)" for f in rest]

    chosen_nb = {}
    for base, copies in notebooks.items():
        best, *rest = sorted(copies, key=_rank)
        chosen_nb[best.path] = best
        ignored += [f"{f.path} (another copy of {base}; {best.path} was graded)" for f in rest]
    from_notebooks: dict[str, str] = {}
    nb_taken: list[str] = []
    if chosen_nb:
        raw = {}
        for path, f in chosen_nb.items():
            if f.size > MAX_NOTEBOOK:
                ignored.append(f"{path} (larger than {MAX_NOTEBOOK // 2**20} MB)")
                continue
            raw[path.split("/")[-1]] = _read(f, MAX_NOTEBOOK, tree)
        from_notebooks, nb_taken = extract_notebooks(raw)
    stubs_replaced = []
    for module, source in from_notebooks.items():
        if len(source) > MAX_SOURCE:  # what a notebook gives is a module too, and travels as one
            source = (f"raise ImportError('the definitions taken from the notebooks for {module}.py are larger "
                      f"than {MAX_SOURCE} bytes, so they were not graded')\n")
        if module not in sources:
            sources[module] = source
        elif _is_stub(module, sources[module]) and "raise ImportError(" not in source:
            stubs_replaced.append(module)
            sources[module] = source
            ignored.append(f"{origin.pop(module)} (still the unfilled stub; the notebook's definitions were graded)")
    taken += [f"{module}.py ({path}" + (", misnamed: graded as this module" if path.split("/")[-1] != f"{module}.py"
                                         else "") + ")" if path != f"{module}.py" else f"{module}.py"
              for module, path in origin.items()]
    taken += nb_taken
    if other:
        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        ignored.append(f"{len(other)} other file(s), not exercise modules or notebooks: {shown}")
    if not sources:
        expected = ", ".join(f"{m}.py" for m in MODULES)
        raise SubmissionError(f"no exercise files found in {where}: expected {expected} "
                              f"or the chapter notebooks (01_attention.ipynb, ...)")
    return Submission(where, sources, tuple(taken), tuple(ignored), tuple(misnamed))


# ------------------------------------------------------------------------- misnamed files

# What a download, a copy or an editor adds to a file's name: " (1)", "-1", "_2", " copy".
_ADDED = re.compile(r"(\s*\(\d+\)|[\s_-]+\d+|[\s_-]*copy(\s*\d+)?)$", re.IGNORECASE)
CLOSE = 0.8  # difflib's ratio from which a name is a close spelling of a module's


def _expected_module(base: str) -> tuple[str, bool] | None:
    """``(module, exact)`` when the file ``base`` is an exercise module under another name:
    exact when it is that name up to case, spaces and what a copy adds (``Attention.py``,
    ``heads (1).py``, ``heads-1.py``); not exact for a close spelling (``atention.py``)."""
    if not base.lower().endswith(".py") or base[:-3] in MODULES:
        return None
    stem = base[:-3].strip()
    while True:
        shorter = _ADDED.sub("", stem).strip()
        if shorter == stem:
            break
        stem = shorter
    stem = stem.replace(" ", "_").lower()
    if stem in MODULES:
        return stem, True
    close = difflib.get_close_matches(stem, MODULES, n=1, cutoff=CLOSE)
    return (close[0], False) if close else None


def _take_misnamed(files: list[_File], modules: dict[str, list[_File]], ignored: list[str]) -> list[str]:
    """Files named like a module (:func:`_expected_module`): one that is the module's name up
    to case or a copy's suffix is graded as that module when the submission has no file of
    that name; a close spelling is not (another module may be meant), it is named in a "did
    you mean" in what was not graded. Returns what the learner and the instructor are told."""
    said = []
    for f in sorted(files, key=_rank):
        module, exact = _expected_module(f.parts[-1])
        if exact and module not in modules:
            modules[module] = [f]
            said.append(f"{f.path} taken as {module}.py")
        elif exact:
            ignored.append(f"{f.path} (named like {module}.py, which the submission also has: that one was graded)")
        else:
            ignored.append(f"{f.path} (not graded: did you mean {module}.py? Name it exactly so)")
            said.append(f"{f.path}: did you mean {module}.py?")
    return said


def _read(f: _File, limit: int, tree: _Tree) -> bytes:
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


def _text(data: bytes, name: str) -> str:
    if len(data) > MAX_SOURCE:
        raise SubmissionError(f"{name} is larger than {MAX_SOURCE} bytes")
    # Undecodable bytes stay visible as replacement characters: Python then reports a
    # syntax error for that module (its exercises score 0), the grader itself goes on.
    return data.decode("utf-8", errors="replace")


def _is_stub(module: str, source: str) -> bool:
    from . import stubs

    return source.strip() == stubs.source(module).strip()
