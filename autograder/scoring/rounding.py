"""Points as every reader sees them: the one rounding rule of every file that shows points
and the one way of writing them (``7``, ``3.5``, ``3.43``). No NumPy here: the learner's
``check()`` formats its verdict with :func:`points` too."""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def points(x: float) -> str:
    """Points as every reader sees them (the terminal, check(), Gradescope, the gradebook, the
    feedback files): :func:`round_points` of ``x``, without trailing zeros: ``7``, ``3.5``,
    ``3.43``. So a number reads the same wherever it is shown, and as the files hold it."""
    return f"{round_points(x):.2f}".rstrip("0").rstrip(".")


def round_points(x: float, places: int = 2) -> float:
    """The one rounding rule of every file that shows points (grades, Canvas, feedback, the
    class summary): to ``places`` decimals, halves away from zero, from the number as printed
    (``repr``), so 2.675 gives 2.68 where ``round`` gives 2.67. A total shown beside its parts
    is :func:`shown_total` of them, never the unrounded sum rounded: the parts then add up to
    it in every file."""
    step = Decimal(1).scaleb(-places)
    return float(Decimal(repr(float(x))).quantize(step, ROUND_HALF_UP)) + 0.0  # + 0.0: no "-0"


def shown_total(parts, places: int = 2) -> float:
    """The total of parts as shown: the sum of the rounded parts (exact at ``places``)."""
    return round_points(sum(round_points(p, places) for p in parts), places)


def shown_points(scores) -> tuple[list[float], float]:
    """Parts and total as every score a person reads shows them (terminal, Gradescope,
    gradebook, feedback): :func:`round_points` of each part, and :func:`shown_total`, so the
    shown parts always add up to the shown total.

    ``shown_points([3.3333333, 4.4444444, 5.0]) == ([3.33, 4.44, 5.0], 12.77)``"""
    scores = list(scores)
    return [round_points(s) for s in scores], shown_total(scores)
