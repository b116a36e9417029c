"""The private channel between a kernel and its service: one JSON value per frame
(``isolation/frames.py``), over the pipes of the service's standard input and output."""
from __future__ import annotations

import json

from ..isolation import frames

MAX_MESSAGE = 64 * 2**20  # bytes: a request carries the learner's modules, a reply one exercise's report


def send(fd: int, value) -> None:
    frames.write_pipe(fd, frames.frame(json.dumps(value, allow_nan=True).encode()))


def receive(fd: int, deadline: float | None = None):
    """The next value; frames.Closed at the end of the stream, frames.Oversize for one past
    MAX_MESSAGE, TimeoutError at ``deadline``, ValueError for a body that is not JSON."""
    return json.loads(frames.read(frames.of_pipe(fd), MAX_MESSAGE, deadline))
