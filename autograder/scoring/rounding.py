"""Points as every reader sees them: the one rounding rule of every file that shows points
and the one way of writing them. No NumPy here: the learner's
``check()`` formats its verdict with :func:`points` too."""
from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def points(x: float) -> str:
    """Points as a report shows them: ``7`` or ``3.43``."""
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.2f}"


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
