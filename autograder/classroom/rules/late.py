"""Lateness (``--deadline``, ``--late-penalty``, ``--late-cutoff``): a penalty of P percent of
the score per started day late, and/or a cutoff after which the score is 0; a learner's
extension (:mod:`..intake.controls`) replaces the deadline for them. How late is said in days,
hours, minutes and seconds as measured, the penalty's rounding beside it
("5 min 10 s late: -10% (1 started day at 10% a day)").
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from ...scoring import round_points

DAY = 86400.0


@dataclass(frozen=True)
class LatePolicy:
    deadline: datetime  # aware
    penalty_per_day: float = 0.0  # percent of the score per started day late
    cutoff_days: float | None = None  # later than this: score 0

    def apply(self, score: float, submitted: datetime | None,
              deadline: datetime | None = None) -> tuple[float, float, str]:
        """``(score after the policy, days late, what happened)``; ``deadline``: the learner's
        own (an extension), else the class's. The score after it is rounded as every shown
        score is (:func:`autograder.scoring.round_points`)."""
        deadline = deadline or self.deadline
        if submitted is None:
            return score, 0.0, ""
        seconds = (submitted - deadline).total_seconds()
        if seconds <= 0:
            return score, 0.0, ""
        late = seconds / DAY
        words = late_words(seconds)
        if self.cutoff_days is not None and late > self.cutoff_days:
            return 0.0, late, f"{words} late, after the {self.cutoff_days:g}-day cutoff: 0 points"
        days = math.ceil(late)
        percent = min(100.0, days * self.penalty_per_day)
        if not percent:
            return score, late, f"{words} late: no penalty"
        why = (f"{words} late: -{percent:g}% ({days} started {'day' if days == 1 else 'days'} at "
               f"{self.penalty_per_day:g}% a day{', at most 100%' if percent == 100 else ''})")
        return round_points(score * (1.0 - percent / 100.0)), late, why


def late_words(seconds: float) -> str:
    """How late, as measured, to the second: "5 min 10 s", "1 day 30 s", "3 days 2 h" (every
    unit that is not 0; the fraction of a second dropped). The penalty's own rounding (started
    days) is said beside it, never folded into it."""
    whole = int(seconds)
    if whole < 1:
        return "less than 1 s"
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} day{'' if days == 1 else 's'}"] if days else []
    parts += [f"{n} {unit}" for n, unit in ((hours, "h"), (minutes, "min"), (secs, "s")) if n]
    return " ".join(parts)
