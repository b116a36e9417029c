"""The course's unfilled stubs: the learner package ``mha_exercises/``, installed beside
``autograder/`` (a checkout and an installed wheel both put it there).

Stub code is what every learner starts from: a module still equal to its stub gives way to a
notebook (:mod:`.submission`), and stub definitions link nobody in ``--similarity``. Both
need the stubs themselves, so a grader without them says so (:class:`StubsMissing`) instead
of quietly treating stub code as the learner's own.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

FOLDER = Path(__file__).resolve().parent.parent / "mha_exercises"


class StubsMissing(RuntimeError):
    """The grader's installation lacks the course's stubs."""


@lru_cache(maxsize=None)
def source(module: str) -> str:
    """The stub of exercise module ``module`` (``attention``, ...), as shipped to learners."""
    f = FOLDER / f"{module}.py"
    try:
        return f.read_text(encoding="utf-8")
    except OSError as err:
        raise StubsMissing(f"the course's stub {f} cannot be read ({err.strerror or err}): stub code could not "
                           "be told from the learners' own; reinstall the course package") from None
