"""Which of a submission's listed files are graded, as which module, and what the learner is
told about the others.

Among several copies of a module, a copy in a folder named ``mha_exercises`` first, then the
shallowest. A module file that is still the course's unfilled stub gives way to a notebook
that defines its exercises. A file named like a module up to case or what a copy adds
(``Attention.py``, ``heads (1).py``) is graded as that module when the submission has no file
of that name; a close spelling (``atention.py``) is not, and gets a "did you mean".
"""
from __future__ import annotations

import difflib
import re

from .. import stubs
from .notebooks import MAX_NOTEBOOK, extract_notebooks
from ..spec import MODULE_OF
from .files import File, Tree, read_file
from ..inert import excerpt
from .limits import MAX_LISTED, MAX_SHOWN, MAX_SOURCE, SubmissionError

MODULES = tuple(dict.fromkeys(MODULE_OF.values()))  # attention, masking, ..., efficient
PREFERRED_FOLDER = "mha_exercises"
# What a download, a copy or an editor adds to a file's name: " (1)", "-1", "_2", " copy".
_ADDED = re.compile(r"(\s*\(\d+\)|[\s_-]+\d+|[\s_-]*copy(\s*\d+)?)$", re.IGNORECASE)
CLOSE = 0.8  # difflib's ratio from which a name is a close spelling of a module's


def choose(where: str, tree: Tree) -> tuple[dict[str, str], tuple, tuple, tuple]:
    """``(sources, taken, ignored, misnamed)`` of a :class:`~autograder.submission.Submission`
    from the files of ``tree``; SubmissionError when none of them is an exercise file."""
    modules: dict[str, list[File]] = {}
    notebooks: dict[str, list[File]] = {}
    other: list[str] = []
    renamed: list[File] = []
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
        sources[module] = _text(read_file(best, MAX_SOURCE, tree), best.path)
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
            raw[path.split("/")[-1]] = read_file(f, MAX_NOTEBOOK, tree)
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
        shown = ", ".join(excerpt(o, MAX_SHOWN // 2) for o in other[:5])
        shown += f" and {len(other) - 5} more" if len(other) > 5 else ""
        ignored.append(f"{len(other)} other file(s), not exercise modules or notebooks: {shown}")
    if not sources:
        expected = ", ".join(f"{m}.py" for m in MODULES)
        raise SubmissionError(f"no exercise files found in {where}: expected {expected} "
                              f"or the chapter notebooks (01_attention.ipynb, ...)")
    return sources, listed(taken), listed(ignored), listed(misnamed)


def listed(lines: list[str]) -> tuple[str, ...]:
    """What the learner and the instructor are told about files, bounded whatever the files'
    names and number: ``MAX_LISTED`` lines of at most ``MAX_SHOWN`` characters, then a count."""
    shown = [excerpt(line, MAX_SHOWN) for line in lines[:MAX_LISTED]]
    if len(lines) > MAX_LISTED:
        shown.append(f"and {len(lines) - MAX_LISTED} more line(s) about other files")
    return tuple(shown)


def _rank(f: File) -> tuple:
    folders = f.parts[:-1]
    return (PREFERRED_FOLDER not in folders, len(folders), f.path)


# ------------------------------------------------------------------------- misnamed files

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


def _take_misnamed(files: list[File], modules: dict[str, list[File]], ignored: list[str]) -> list[str]:
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
            ignored.append(f"{f.path} (did you mean {module}.py? Name it exactly so)")
            said.append(f"{f.path}: did you mean {module}.py?")
    return said


# ------------------------------------------------------------------------- a module's text

def _text(data: bytes, name: str) -> str:
    if len(data) > MAX_SOURCE:
        raise SubmissionError(f"{name} is larger than {MAX_SOURCE} bytes")
    # Undecodable bytes stay visible as replacement characters: Python then reports a
    # syntax error for that module (its exercises score 0), the grader itself goes on.
    return data.decode("utf-8", errors="replace")


def _is_stub(module: str, source: str) -> bool:
    return source.strip() == stubs.source(module).strip()
