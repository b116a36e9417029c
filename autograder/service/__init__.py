# Long on purpose: both ends of one private channel (the kernel's client, the service's loop) and the
# framing they share, read side by side.
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
  (``practice.py``), and the report says so.

The client half (:func:`grade`) is what the kernel imports: standard library only.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from .depends import fingerprint

MAX_MESSAGE = 64 * 2**20
REPLY_SECONDS = 300.0  # a check's report, start-up included (the runner's own budget)
GRADERS = ("grade", "selfcheck")
# The grading mode, loaded by name: public code imports nothing of grading/ (.importlinter).
GRADING = "autograder.grading.warm"


class ServiceError(Exception):
    """The service could not grade (the message says why, for the learner)."""


# ------------------------------------------------------------------------------ framing

def _send(fd: int, value) -> None:
    body = json.dumps(value, allow_nan=True).encode()
    data = memoryview(struct.pack(">Q", len(body)) + body)
    while data:
        data = data[os.write(fd, data):]


def _recv(fd: int, deadline: float | None = None):
    (n,) = struct.unpack(">Q", _exactly(fd, 8, deadline))
    if n > MAX_MESSAGE:
        raise ServiceError(f"a message of {n} bytes")
    return json.loads(_exactly(fd, n, deadline))


def _exactly(fd: int, n: int, deadline: float | None) -> bytes:
    data = b""
    while len(data) < n:
        if deadline is not None and not _readable(fd, max(deadline - time.monotonic(), 0.0)):
            raise TimeoutError
        chunk = os.read(fd, min(n - len(data), 1 << 20))
        if not chunk:
            raise EOFError("end of stream")
        data += chunk
    return data


def _readable(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has data (or end-of-stream) within ``seconds``; on Windows, where pipes
    cannot be polled, the read blocks (the grader enforces the time limits itself)."""
    if os.name == "nt":
        return True
    import select

    return bool(select.select([fd], [], [], seconds)[0])


# --------------------------------------------------------------------- the kernel's side

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
        root = Path(__file__).resolve().parent.parent
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
        _send(self.process.stdin.fileno(), message)
        return _recv(self.process.stdout.fileno(), time.monotonic() + REPLY_SECONDS)

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
    from .practice import mode

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
            except (OSError, EOFError, ValueError) as err:  # it died meanwhile: once more, fresh
                service.close()
                _SERVICE = None
                if attempt == 2:
                    raise ServiceError(f"the grader stopped ({_ended(service, err)})") from None
                continue
            except TimeoutError:
                service.process.kill()
                service.close()
                _SERVICE = None
                raise ServiceError(f"no report within {REPLY_SECONDS:g} s") from None
            except BaseException:  # KeyboardInterrupt: a half-read exchange is not reused
                service.process.kill()
                service.close()
                _SERVICE = None
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
        from .practice import mode

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


def _ended(service: _Handle, err) -> str:
    code = service.process.poll()
    if code is None:
        return str(err)
    return f"killed by signal {-code}" if code < 0 else f"exit status {code}"


# -------------------------------------------------------------------- the service's side

class _Grader:
    """What the service does per request, for the full grader or the public self-check."""

    def __init__(self, kind: str):
        from .practice import learner_side, mode

        self.kind, self.spawned = kind, mode() == "spawn"
        # The learner-side process first, before any reference code is imported here (as the CLI).
        self.zygote = learner_side()
        if kind == "grade":
            grading = importlib.import_module(GRADING)
            self.runner, self.exercises = grading, grading.EXERCISES
        else:
            from . import selfcheck

            self.selfcheck = selfcheck
        self.warm = iter(self.exercises.values()) if kind == "grade" else iter(())
        self.rehearsed = kind != "grade"

    def grade(self, request: dict) -> dict:
        from .submission import MAX_SOURCE, MODULES, Submission

        exercise, sources, path = request.get("exercise"), request.get("sources"), request.get("path")
        limit = request.get("time_limit")
        if (type(exercise) is not str or type(sources) is not dict or type(path) is not str
                or not all(type(k) is str and k in MODULES and type(v) is str and len(v) <= MAX_SOURCE
                           for k, v in sources.items())
                or not (limit is None or type(limit) in (int, float) and 0 < limit <= 3600)):
            return {"error": "a malformed request"}
        submission = Submission(path, sources)
        try:
            if self.kind == "grade":
                report = self.runner.grade_submission(submission, exercises=[exercise], time_limit=limit,
                                                      zygote=self.zygote)
            else:
                report = self.selfcheck.check_submission(submission, [exercise], zygote=self.zygote)
        except ValueError as err:  # an unknown exercise id
            return {"error": str(err)}
        report.confinement = getattr(self.zygote, "confinement", report.confinement)  # what ran it
        out = report.to_dict()
        out["practice"] = self.spawned
        return {"report": out}

    def idle(self) -> bool:
        """One exercise's cases and reference outputs, ahead of its first check; False when
        there is nothing left to warm."""
        if not self.rehearsed:  # once: a first check pays no lazy import, on either side of the box
            self.rehearsed = True
            self._rehearse()
            return True
        exercise = next(self.warm, None)
        if exercise is None:
            return False
        self.runner.warm(exercise)
        return True

    def _rehearse(self) -> None:
        """Grade the reference ``softmax`` once, as a check would, and drop the report: the
        grader's lazily imported modules and the confined child's path are then warm when the
        learner's first check arrives (the set-up cell starts the service ahead of it)."""
        import importlib.util

        from .submission import load

        try:
            folder = next(iter(importlib.util.find_spec("solutions").submodule_search_locations))
            self.runner.grade_submission(load(folder), exercises=["softmax"], zygote=self.zygote)
        except Exception:  # noqa: BLE001  a rehearsal only: the real check reports any problem
            pass

    def close(self) -> None:
        self.zygote.close()


def serve(requests: int, replies: int, kind: str) -> None:
    grader = None
    try:
        grader = _Grader(kind)
        failure = None
    except Exception as err:  # noqa: BLE001  told to the kernel in reply to its request
        failure = f"the grader could not start: {type(err).__name__}: {err}"
    try:
        while True:
            if grader is not None:  # between checks: warm the next exercise's references
                while os.name != "nt" and not _readable(requests, 0) and grader.idle():
                    pass
            try:
                request = _recv(requests)
            except (EOFError, OSError, ValueError):
                return  # the kernel is gone
            if failure:  # said once; the next check starts a fresh service
                _send(replies, {"error": failure})
                return
            else:
                try:
                    reply = grader.grade(request if type(request) is dict else {})
                except Exception as err:  # noqa: BLE001  a bug of the grader's: said, not fatal
                    reply = {"error": f"the grader failed: {type(err).__name__}: {err}"}
            _send(replies, reply)
    finally:
        if grader is not None:
            grader.close()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parent, kind = int(argv[0]), argv[1]
    if kind not in GRADERS:
        sys.exit(f"autograder.service: unknown grader {kind!r}")
    from .isolation.confine import die_with_parent

    die_with_parent(parent)  # Linux: the kernel's death kills this process, whatever it is doing
    # The kernel's interrupt (a learner stopping a cell) reaches its whole process group: it is
    # not meant for the service, which ends with its kernel (above) or its channel's end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The channel keeps descriptors of its own; 0 and 1 become harmless, so that nothing
    # printed here (a warning, a library's message) can corrupt it.
    requests, replies = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    serve(requests, replies, kind)
    from .quick_exit import exit_now

    exit_now(0)  # the kernel is gone or restarting it: no teardown to wait for


if __name__ == "__main__":
    main()
