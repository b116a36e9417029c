"""The trusted grader. It lives outside the learner-editable package ``mha_exercises``.

Each folder holds one audience, and the pipeline reads top-down through them:

* ``classroom/`` (instructors, not shipped): the command line ``mha-grade`` (``cli.py``; also
  ``python -m autograder``), batch grading, the class summary, similarity;
* ``grading/`` (secret): the runner, the judge (reference outputs and diagnoses), the
  reference namespace, the checks of ``exercises/`` and the warm service's grading mode;
* this folder (public): load a submission (``submission/``, notebooks included), the
  exercises' points (``spec.py``), reports (``report.py``), the learner's self-check on
  stored public cases (``selfcheck.py``) and the warm service behind ``check()``;
* ``isolation/`` (public, the learner side): the learner's code in a confined process
  (``sandbox.py`` on the grader's side, ``worker.py`` on the learner's), plain data over
  ``protocol.py``, the ``drivers/`` that run one case, and the fresh image a grader re-executes
  into before it reads its options (``reexec.py``).

Which folder may import which is a contract, checked by ``lint-imports`` (``.importlinter``).
"""
__version__ = "0.1.0"

# The release boundary, as a rule: everything but these ships to learners (the release
# builder, its test and the learner-side import blocker all read this tuple).
SECRET = ("solutions", "autograder.grading", "autograder.classroom")
# Where the answers are: a process holding any of these must never become a learner's process.
REFERENCES = ("solutions", "autograder.grading")
# All of ours that the learner's process itself may import (the rest is refused there).
LEARNER_SIDE = ("autograder.isolation", "autograder.spec", "autograder.inert", "autograder.said")  # spec imports inert, said


def within(name: str, prefixes) -> bool:
    """Whether the dotted module ``name`` is one of ``prefixes`` or inside one."""
    return any(name == p or name.startswith(p + ".") for p in prefixes)
