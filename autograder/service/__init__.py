"""The warm grader behind ``check()``: started by a notebook's first check, alive as long as it.

A grading run costs a torch import and the grader's imports before any learner code runs;
``check()`` after each exercise would pay them every time. So the first ``check()`` in a
kernel starts this service (``python -m autograder.service``), which does exactly what
``mha-grade`` does once (the learner-side process first, then the grader's modules) and then
grades one exercise per request: the kernel sends the exercise id and the learner's module
files as they are *now*, the service grades them in a fresh confined child of its zygote
(``isolation/sandbox.py``), exactly as ``mha-grade`` would, and sends the report back. Nothing of
the grader runs in the kernel; nothing of the learner's state survives from one check to the
next (each is a new child, and the sources travel with each request).

* The channel is private: the service's standard input and output, pipes that only the
  kernel holds the other ends of (no port, no named socket); the service's own printing
  goes to its standard error.
* The service dies with the kernel: ``PR_SET_PDEATHSIG`` on Linux, and end-of-stream on
  its standard input everywhere.
* The kernel restarts it when it died, or when the grader's code changed since it started
  (``depends.fingerprint``: the one hash of what a grade depends on).
* Without the reference solutions (a learner release), it runs the self-check on the
  stored public cases (``selfcheck.py``). On macOS and Windows, or with
  ``MHA_CHECK_MODE=spawn``, the learner's code runs in spawned processes, not confined
  (``isolation/practice.py``), and the report says so.

This package is the kernel's half, :func:`grade` (standard library only, and light: no numpy,
no torch); the service's half is ``server.py`` (what ``__main__.py`` runs), and the messages
between them are ``channel.py``'s.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..depends import fingerprint
from ..isolation import frames
from ..isolation.practice import mode
from . import channel

REPLY_SECONDS = 300.0  # a check's report, start-up included (the runner's own budget)
GRADERS = ("grade", "selfcheck")
# The grading mode, loaded by name: public code imports nothing of grading/ (.importlinter).
GRADING = "autograder.grading.warm"


class ServiceError(Exception):
    """The service could not grade (the message says why, for the learner)."""


def grader_kind() -> str | None:
    """``"grade"`` with the reference solutions, ``"selfcheck"`` in a learner release, else None."""
    if importlib.util.find_spec("autograder.grading") and importlib.util.find_spec("solutions"):
        return "grade"
    if importlib.util.find_spec("autograder.selfcheck"):
        return "selfcheck"
    return None


class _Handle:
    """The kernel's end of one running service."""

    def __init__(self, kind: str, learner_side: str):
        self.kind, self.learner_side = kind, learner_side
        self.hash = fingerprint(kind)
        root = Path(__file__).resolve().parents[2]  # the folder holding autograder/
        paths = [str(root)]
        if kind == "grade":
            paths.append(str(Path(importlib.util.find_spec("solutions").origin).parent.parent))
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MHA_CHECK_MODE=learner_side,
                   PYTHONPATH=os.pathsep.join(dict.fromkeys(filter(None, [*paths, os.environ.get("PYTHONPATH")]))))
        env.pop("MHA_BACKEND", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "autograder.service", str(os.getpid()), kind],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(root), env=env,
        )

    def alive(self) -> bool:
        return self.process.poll() is None

    def request(self, message: dict) -> dict:
        channel.send(self.process.stdin.fileno(), message)
        return channel.receive(self.process.stdout.fileno(), time.monotonic() + REPLY_SECONDS)

    def close(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                pipe.close()  # the service sees end-of-stream and exits
            except OSError:
                pass
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_LOCK = threading.Lock()
_SERVICE: _Handle | None = None


def grade(exercise: str, sources: dict[str, str], path: str, time_limit: float | None = None) -> dict:
    """The report (as a dict) of ``exercise`` on ``sources``, from this kernel's service.

    Starts the service on first use, and again when it died or the grader's files changed.
    Raises ServiceError with a message for the learner.
    """
    global _SERVICE
    kind = grader_kind()
    if kind is None:
        raise ServiceError("the grader is not available in this installation; run your own tests, "
                           "or ask your instructor for a graded run")
    learner_side = mode()
    message = {"exercise": exercise, "sources": sources, "path": path, "time_limit": time_limit}
    with _LOCK:
        for attempt in (1, 2):
            service = _SERVICE
            if (service is None or not service.alive() or service.kind != kind
                    or service.learner_side != learner_side or service.hash != fingerprint(kind)):
                if service is not None:
                    service.close()
                _SERVICE = service = _Handle(kind, learner_side)
            try:
                reply = service.request(message)
            except frames.Oversize as err:  # a grader's bug; the rest of its reply is unread
                _drop(service)
                raise ServiceError(f"the grader's reply was refused: {err}") from None
            except (OSError, EOFError, ValueError) as err:  # it died meanwhile: once more, fresh
                service.close()
                _SERVICE = None
                if attempt == 2:
                    raise ServiceError(f"the grader stopped ({_ended(service, err)})") from None
                continue
            except TimeoutError:
                _drop(service)
                raise ServiceError(f"no report within {REPLY_SECONDS:g} s") from None
            except BaseException:  # KeyboardInterrupt: a half-read exchange is not reused
                _drop(service)
                raise
            if "error" in reply:
                raise ServiceError(reply["error"])
            return reply["report"]
    raise AssertionError("unreachable")


def start() -> None:
    """Start this kernel's service in the background, if it is not up yet, and return at once.

    A chapter's set-up cell calls it (through ``mha_exercises.check.warm_up``): the service
    then pays its imports while the learner reads, and the first ``check()`` finds it warm.
    A failure here is silent; ``grade`` starts the service again and says what went wrong.
    """
    threading.Thread(target=_start, name="mha-grader-start", daemon=True).start()


def _start() -> None:
    global _SERVICE
    try:
        kind = grader_kind()
        if kind is None:
            return
        learner_side = mode()
        with _LOCK:
            service = _SERVICE
            if (service is not None and service.alive() and service.kind == kind
                    and service.learner_side == learner_side):
                return
            if service is not None:
                service.close()
            _SERVICE = _Handle(kind, learner_side)
    except Exception:  # noqa: BLE001  the first check starts it and reports the cause
        return


def stop() -> None:
    """Stop this kernel's service (the next check starts a fresh one)."""
    global _SERVICE
    with _LOCK:
        if _SERVICE is not None:
            _SERVICE.close()
            _SERVICE = None


def _drop(service: _Handle) -> None:
    """Kill ``service``: its channel is mid-message and cannot be reused."""
    global _SERVICE
    service.process.kill()
    service.close()
    _SERVICE = None


def _ended(service: _Handle, err) -> str:
    code = service.process.poll()
    if code is None:
        return str(err)
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"
