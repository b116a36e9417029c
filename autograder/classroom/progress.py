"""``--progress-json``: a batch's progress as JSON lines, for dashboards and web front ends.

One JSON object per line, flushed as it happens, on stderr or appended to a file:

* ``{"event": "start", "submissions": 300, "to_grade": 12}``;
* ``{"event": "graded", "learner": "s001", "done": 1, "to_grade": 12, "score": 87.5,
  "max_score": 100.0, "seconds": 1.9, "error": false}`` as each submission is graded (the
  score as graded, before penalties and adjustments);
* ``{"event": "end", "submissions": 300, "graded": 12, "seconds": 41.2, "out": "..."}``;
* ``{"event": "refused", "message": "..."}`` when the command is refused (exit status 2).

Every line also has ``"time"`` (UTC, ISO 8601). Nothing of a learner's code or output is in
it: their id in the class files, numbers, and the instructor's own messages. A refusal may
name a learner's folder or id: its message is inert (escape sequences shown as ``\x1b``) and
HTML-escaped (``&lt;img&gt;``), so a dashboard that shows it as text or as HTML shows it as it is.
"""
from __future__ import annotations

import html
import json
import sys
from pathlib import Path
from datetime import datetime, timezone

from ..inert import inert
from ..scoring import round_points


class JsonLines:
    def __init__(self, stream, owned: bool):
        self.stream, self.owned, self.done, self.to_grade = stream, owned, 0, 0

    @classmethod
    def open(cls, target: str) -> "JsonLines":
        """``target``: ``-`` for stderr, else a file appended to."""
        if target == "-":
            return cls(sys.stderr, False)
        # its folder made here: on a cluster it is the output folder, which nothing has made yet
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        return cls(open(target, "a", encoding="utf-8"), True)  # noqa: SIM115  closed by close()

    def _say(self, event: str, **fields) -> None:
        line = {"event": event, "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **fields}
        self.stream.write(json.dumps(line, allow_nan=False) + "\n")
        self.stream.flush()

    def start(self, submissions: int, to_grade: int) -> None:
        self.to_grade = to_grade
        self._say("start", submissions=submissions, to_grade=to_grade)

    def graded(self, outcome) -> None:
        self.done += 1
        report = outcome.report or {}
        self._say("graded", learner=outcome.learner, done=self.done, to_grade=self.to_grade,
                  score=round_points(float(report.get("score", 0.0))),
                  max_score=round_points(float(report.get("max_score", 0.0))),
                  seconds=round(float(outcome.seconds), 3),
                  error=outcome.error is not None or bool(report.get("error")))

    def end(self, result, out) -> None:
        self._say("end", submissions=len(result.outcomes), graded=result.graded, seconds=round(result.wall, 3),
                  out=str(out))

    def refused(self, message: str) -> None:
        self._say("refused", message=html.escape(inert(message), quote=True))

    def close(self) -> None:
        if self.owned:
            self.stream.close()
