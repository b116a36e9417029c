"""One exercise's cases in a child: the submission loaded, each case's driver run, the
outputs sent to the grader as plain data (``protocol.py``)."""
from __future__ import annotations

import sys

from . import protocol
from .package import Blocker, Namespace, Submission, describe

_isinstance, _type, _str, _dict, _int = isinstance, type, str, dict, int  # learner code may patch builtins


class _Failure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


def next_job(sock) -> dict:
    """A job and the frame of its cases that follows it (``exchange.Child.start``), from its ``first`` case on."""
    job = protocol.recv(sock, **protocol.JOB_LIMITS)
    job["cases"] = protocol.recv(sock, **protocol.JOB_LIMITS)["cases"][job.get("first", 0):]
    return job


def run(sock, job, drivers, pristine) -> bool:
    """One exercise's cases; whether this process may run the next exercise."""
    def call_grader(name, args, kwargs):
        protocol.send(sock, {"call": name, "args": args, "kwargs": kwargs})
        reply = protocol.recv(sock, torch_tensors=True)
        if "error" in reply:
            raise RuntimeError(f"the reference {name} raised {reply['error']}")
        return reply["result"]

    blocker = next(f for f in sys.meta_path if isinstance(f, Blocker))
    submission = Submission(job["sources"], job["proxies"], job["module"], call_grader)
    blocker.package = submission
    ns = Namespace(submission)
    setup_error = _prepare(ns, job, drivers)
    protocol.send(sock, {"imported": True})  # the grader times each case from here
    for i, (driver, inputs) in enumerate(job["cases"]):
        if setup_error is not None:
            protocol.send(sock, {"case": i, "error": [setup_error.kind, setup_error.message]})
            continue
        try:
            output = getattr(drivers, driver)(ns, **inputs)
            frame = protocol.encode({"case": i, "ok": output})
        except protocol.Garbage as err:
            frame = protocol.encode({"case": i, "error": ["garbage", str(err)]})
        except BaseException as err:  # noqa: BLE001  SystemExit and KeyboardInterrupt too
            kind, message = _classify(err)
            frame = protocol.encode({"case": i, "error": [kind, message]})
        protocol.send_frame(sock, frame)
    reusable = pristine.holds()
    # Last: a module the cases imported lazily (inside a function) is in the record too.
    protocol.send(sock, {"done": True, "reusable": reusable, "not_imported": _plain(submission.failed)})
    return reusable


def _prepare(ns, job, drivers) -> _Failure | None:
    """Import the exercise's module once: a failure there is the same for every case."""
    if isinstance(drivers, BaseException):
        return _Failure("crash", f"the grader's drivers failed to import: {drivers!r}")
    module, exercise = job["module"], job["exercise"]
    if module not in job["sources"]:
        return _Failure("missing", f"{module}.py is not in the submission")
    try:
        mod = ns.module(module)
    except BaseException as err:  # noqa: BLE001
        return _Failure("import", f"{module}.py: {describe(err)}")
    if exercise not in mod.__dict__:
        return _Failure("missing", f"{module}.py defines no `{exercise}`")
    return None


def _plain(failed) -> dict:
    """The record of failed imports as plain data, whatever the learner's code did to it."""
    try:
        return {_str(k)[:100]: {_str(f)[:20]: v[:300] if _type(v) is _str else v
                                for f, v in _dict(why).items() if _type(v) in (_str, _int)}
                for k, why in list(_dict(failed).items())[:64]}
    except BaseException:  # noqa: BLE001
        return {}


def _classify(err: BaseException) -> tuple[str, str]:
    """The learner's exception in its own words. What the grader says in its own (a timeout, a
    crash, memory, a missing function) it finds itself (``exchange.settle``): the learner's code
    runs in this process and may replace this function, or write to the socket itself."""
    if _isinstance(err, NotImplementedError):
        return "not_implemented", ""
    if _isinstance(err, (SystemExit, KeyboardInterrupt)):
        return "exception", f"{_type(err).__name__} (exiting is not a result)"
    return "exception", describe(err)

