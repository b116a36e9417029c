"""The caps a submission is read within, and :class:`SubmissionError`, the refusal of one that
cannot be graded at all.

Sizes are checked before anything is read, each file's and the whole submission's: a zip
inside the submission over its cap is left out and named in what was not graded; a module
over its cap, or a submission whose files add up to more than ``MAX_TOTAL``, is refused.
What a reading looks at is bounded as well: folders ``MAX_DEPTH`` deep, ``MAX_FILES`` entries,
paths of ``MAX_PATH`` characters (a longer one is not looked at), and what it says about the
files (``MAX_LISTED`` lines of ``MAX_SHOWN`` characters), so a zip of a few hundred kB cannot
make megabytes of "not graded" text.
"""
from __future__ import annotations

from ..inert import inert

MAX_SOURCE = 1 * 2**20  # bytes per module: exercise modules are a few kB
MAX_ZIP_MEMBERS = 1000
MAX_FILES = 5000  # entries looked at in a folder tree: a repository with its history is far below
MAX_NESTED_ZIP = 20 * 2**20  # bytes of a zip inside the submission, read into memory
MAX_TOTAL = 64 * 2**20  # bytes read from one submission in all: its zips, modules and notebooks together
MAX_DEPTH = 32  # folders deep a walk looks: mha_exercises/ in a repository is 2 or 3 levels down
MAX_PATH = 512  # characters of a path inside a submission looked at: an honest one is far below
MAX_LISTED = 20  # files named in what was (not) graded; the rest are counted
MAX_SHOWN = 160  # characters of one file's line in what was (not) graded


class SubmissionError(Exception):
    """The submission cannot be graded at all (the grader exits with status 2)."""

    def __init__(self, message: str):
        # It names the learner's files (a zip member may be named anything): inert for every
        # place it is printed (the terminal, Gradescope's output, check()).
        super().__init__(inert(message))
