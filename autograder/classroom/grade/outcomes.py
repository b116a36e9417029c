"""What grading one submission came to (an :class:`Outcome`): its report as JSON data, or,
when the grader could not grade it, a report whose every exercise says why in a sentence of
the grader's, never a traceback or a path of the instructor's (those go to ``Outcome.error``).
"""
from __future__ import annotations

import errno
from dataclasses import asdict, dataclass, is_dataclass

from ... import __version__
from ...spec import POINTS


@dataclass
class Outcome:
    learner: str
    report: dict
    seconds: float
    skipped: bool = False
    error: str | None = None  # why the grader itself failed on this submission
    cpu: float = 0.0  # CPU seconds of the grader and its learner-side processes


def report_dict(report) -> dict:
    """The pipeline's Report as plain JSON data."""
    if isinstance(report, dict):
        return report
    for method in ("to_dict", "as_dict"):
        if hasattr(report, method):
            return getattr(report, method)()
    if is_dataclass(report):
        return asdict(report)
    raise TypeError(f"cannot turn a {type(report).__name__} into a report dict")


def error_report(learner: str, message: str, exercises: list[str] | None, seed: int) -> dict:
    """What a learner gets when the grader could not grade their submission at all."""
    ids = exercises or list(POINTS)
    return {
        "submission": learner, "score": 0.0, "max_score": float(sum(POINTS[e] for e in ids)),
        "error": message, "seed": seed, "grader_version": __version__,
        "exercises": [{"id": e, "status": "error", "score": 0.0, "max_score": float(POINTS[e]),
                       "cases": [], "feedback": message, "notes": []} for e in ids],
    }


def exhausted(err: BaseException) -> str | None:
    """What the machine ran out of, when that is why ``err`` was raised (its causes included):
    a fork or a thread refused (EAGAIN), memory, open files, disk space; None otherwise."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, MemoryError):
            return "memory"
        if isinstance(err, OSError):
            what = {errno.EAGAIN: "processes or threads", errno.ENOMEM: "memory", errno.EMFILE: "open files",
                    errno.ENFILE: "open files", errno.ENOSPC: "disk space"}.get(err.errno)
            if what:
                return what
        if isinstance(err, RuntimeError) and "can't start new thread" in str(err):
            return "processes or threads"
        err = err.__cause__ or err.__context__
    return None


def failure(err: BaseException, tries: int) -> str:
    """The learner's sentence for a grader that raised, ``tries`` times in all: what failed,
    without its message (which may name the instructor's files)."""
    what = exhausted(err)
    cause = (f"the grading machine ran out of {what}" if what else "the grader failed") + f" ({type(err).__name__})"
    return (f"{cause} while grading this submission, in {tries} tries: it was not graded; "
            "the instructor has the details, and the next run grades it again")
