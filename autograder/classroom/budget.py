"""How much learner text each of a learner's files in a batch's output may hold.

Learner text (:class:`autograder.inert.LearnerText`: file names, ids and names from an export,
the words of their code's errors, notes) reaches a learner's own files and the class files
beside everyone else's. Each file grants each learner at most its share below, whatever the
learner sends; the shares add up to ``LEARNER_CHARS``, the most that all of one learner's
outputs together hold (``tests/test_hostile_class.py`` counts it across every file written).
Shares are BYTES of UTF-8 after each format's escaping (``inert.LearnerText``), not characters.
"""
from __future__ import annotations

from ..inert import Budget

SHARES = {
    "feedback": 1200,  # feedback/<learner>.md (its .html renders the same text)
    "grades.csv": 300,  # the learner's row: ids, the error's first line
    "canvas.csv": 200,  # the identifying columns
    "summary.md": 200,  # what went wrong, with the learner's file names
    "history.csv": 100,  # the learner's id
    "held.csv": 300,  # a held submission's own name, its submitters' ids, why it is held
}
LEARNER_CHARS = sum(SHARES.values())
CELL = 120  # characters of one id or name in a class file


def share(output: str) -> Budget:
    """A fresh budget for one learner in ``output``."""
    return Budget(SHARES[output])
