"""The warm service's grading mode: what ``autograder/service/`` grades with when the
reference solutions are installed. The service loads this module by name
(``service.GRADING``), so that public code imports nothing of ``grading/`` (``.importlinter``);
a learner release has no ``grading/`` and the service runs the self-check instead.
"""
from . import judge, runner  # noqa: F401  the judge's imports paid at start, not at the first check
from .cache import warm as _warm
from .exercises import EXERCISES  # noqa: F401  what the service warms, one exercise at a time

grade_submission = runner.grade_submission


def warm(exercise) -> None:
    """One exercise's cases and reference outputs (seed 0, as ``check()`` grades), ahead of
    its first check."""
    _warm(exercise, 0, runner.exercise_cases(exercise, 0))
