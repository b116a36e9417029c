"""The learner's side: a zygote process that forks one confined child per exercise.

``python -m autograder.worker CONTROL_FD DRIVERS`` starts the zygote. It imports NumPy,
torch and the drivers once (the slow part, done while the grader imports its own modules in
parallel) and then waits. For each exercise the grader sends it a socket (SCM_RIGHTS); the
zygote forks a child that owns that socket, and the grader talks to the child directly:

    grader -> child   the job: module sources, proxied names, the cases (driver, inputs)
    child  -> grader  {"case": i, "ok": output} or {"case": i, "error": [kind, message]}
    child  -> grader  {"call": name, ...}: a proxied exercise, answered by the reference
    child  -> grader  {"done": true}

The child confines itself before running any learner code (own process group, memory, CPU
and file-size limits, stdout/stderr to /dev/null, a scratch working directory, no
``solutions`` and no judge on the import path), loads the submission as a synthetic package
``mha_exercises`` and runs the cases. Whatever happens in it (an exit, a crash, a hang that
the grader kills) costs only that exercise. This module imports nothing of the grader's
beyond the drivers, the protocol and the spec.
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import socket
import struct
import sys
import tempfile
import traceback
import types

# Modules a learner's process must never import: the references and the scoring.
REFERENCES = ("solutions", "autograder.judge", "autograder.exercises", "autograder.reference")
BLOCKED = REFERENCES + ("autograder.runner", "autograder.report", "autograder.cli", "autograder.sandbox",
                        "autograder.batch", "autograder.similarity", "autograder.summary")
PACKAGE = "mha_exercises"
_isinstance, _type, _str = isinstance, type, str  # learner code may patch builtins later


# ------------------------------------------------------------------------------ the zygote

def main(argv=None) -> None:
    """``python -m autograder.worker CONTROL_FD [DRIVERS]``: a zygote in a fresh interpreter."""
    argv = sys.argv[1:] if argv is None else argv
    control = socket.socket(fileno=int(argv[0]))
    serve(control, preload(argv[1] if len(argv) > 1 else "autograder.drivers"))


def preload(drivers_name: str = "autograder.drivers"):
    """What every child needs, imported once: NumPy, torch (one thread), the drivers.

    Returns the drivers module, or the exception that stopped its import (every case then
    fails as a crash with that message, and the grader's report says so).
    """
    os.environ["OMP_NUM_THREADS"] = "1"
    import importlib

    import numpy  # noqa: F401
    import torch

    torch.set_num_threads(1)
    from autograder import protocol

    protocol.capture_torch()
    try:
        return importlib.import_module(drivers_name)
    except Exception as err:
        return err


def serve(control: socket.socket, drivers) -> None:
    """The zygote's loop: fork a child per "F", reap and report per "W", until EOF."""
    _become_subreaper()
    control.sendall(b"R")  # ready
    active: set[int] = set()  # the exercise children alive now
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 16, 1)
        except OSError:
            return
        if not msg:
            return  # the grader is gone
        if msg[:1] == b"F" and fds:
            pid = os.fork()
            if pid == 0:
                control.close()
                _child(socket.socket(fileno=fds[0]), drivers)  # never returns
            os.close(fds[0])
            try:
                os.setpgid(pid, pid)  # also done in the child: whichever runs first
            except OSError:
                pass
            active.add(pid)
            control.sendall(struct.pack("<q", pid))
        elif msg[:1] == b"W":  # reap a finished child, report how it ended, kill leftovers
            (pid,) = struct.unpack("<q", msg[1:9])
            active.discard(pid)
            try:
                status = os.waitpid(pid, 0)[1]
            except ChildProcessError:
                status = -1
            _kill_orphans(active)
            control.sendall(struct.pack("<q", status))
        else:
            for fd in fds:
                os.close(fd)


def _become_subreaper() -> None:
    """Orphans of the learner's code (a double fork, setsid) get re-parented to the zygote,
    which kills them after each exercise, instead of escaping to init."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except Exception:
        pass


def _kill_orphans(active: set) -> None:
    """SIGKILL every child of the zygote that is not a live exercise child, and reap it.

    Each is waited for before looking again: its own children are re-parented to the
    zygote only once it has died, and they are killed in the next round.
    """
    for _ in range(100):
        orphans = [pid for pid in _children() if pid not in active]
        if not orphans:
            return
        for pid in orphans:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in orphans:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _children() -> list[int]:
    """The zygote's child pids, from /proc/self/task/*/children (one small file per thread)."""
    pids = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
    except OSError:  # no such file on this kernel: scan every process's parent
        pids, me = [], str(os.getpid())
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == me:
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


# ------------------------------------------------------------------------------- a child

def _child(sock: socket.socket, drivers) -> None:
    """Run one exercise's cases; never returns (os._exit), whatever the learner's code does."""
    from autograder import protocol

    code = 0
    try:
        os.setpgid(0, 0)
        job = protocol.recv(sock)
        _confine(job)
        _run(sock, job, drivers, protocol)
    except BaseException:  # noqa: BLE001  the grader sees the missing results as a crash
        code = 70
    finally:
        os._exit(code)


def _confine(job: dict) -> None:
    """Limits, silence and a scratch directory before the learner's code exists in here."""
    os.chdir(job["workdir"])
    tempfile.tempdir = job["workdir"]
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # anything the learner prints goes nowhere: results use the socket
        os.dup2(devnull, fd)
    os.close(devnull)
    _limit(resource.RLIMIT_AS, _address_space() + job["memory_mb"] * 2**20)
    _limit(resource.RLIMIT_CPU, int(job["cpu_seconds"]) + 1)
    _limit(resource.RLIMIT_FSIZE, 64 * 2**20)
    _limit(resource.RLIMIT_CORE, 0)
    # The import path: no repository root, no current directory, and a blocker in front of
    # every finder (the editable install's finder would otherwise find `solutions`).
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != root]
    for name in list(sys.modules):
        if _blocked(name) or name == PACKAGE or name.startswith(PACKAGE + "."):
            del sys.modules[name]
    sys.meta_path.insert(0, _Blocker())
    _drop_privileges(job["workdir"])


def _drop_privileges(workdir: str) -> None:
    """As root (Gradescope), become the unprivileged learner user (``sandbox.learner_ids``):
    the learner's code then cannot read the solutions or the grader's files. Its scratch
    directory becomes its own; the directory above it only lets it through."""
    ids = os.environ.pop("MHA_GRADE_RUN_AS", None)
    if not ids or os.geteuid() != 0:
        return
    uid, gid = (int(x) for x in ids.split(":"))
    os.chown(workdir, uid, gid)
    os.chmod(os.path.dirname(workdir), 0o711)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:  # never run learner code still privileged
        raise PermissionError("could not drop to the learner user")
    # A user of its own: a process cap now counts only the learner's processes (a fork bomb).
    _limit(resource.RLIMIT_NPROC, 256)


def _limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(which, (value, hard))
    except (ValueError, OSError):
        pass


def _address_space() -> int:
    """Bytes of virtual memory in use now (torch alone maps a few GB it never touches)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _blocked(name: str) -> bool:
    return any(name == b or name.startswith(b + ".") for b in BLOCKED)


class _Blocker:
    """A meta-path finder that refuses the grader's modules and serves the submission."""

    def __init__(self):
        self.package: _Submission | None = None

    def find_spec(self, name, path=None, target=None):
        if _blocked(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        if self.package is not None and name.startswith(PACKAGE + "."):
            return self.package.find_spec(name)
        return None


# ------------------------------------------------------------ the submission as a package

class _Submission:
    """``mha_exercises`` made of the learner's sources, with some exercises proxied.

    ``proxies`` maps an exercise name to its module: those names are replaced by a function
    that asks the grader for the reference result (one mistake counts once). They are set
    on their own module right after it runs, and on every module that imported them by name
    (``from .heads import split_heads``) once the exercise's module has loaded.

    A *sibling* (a module other than the graded exercise's ``own``) that is missing or fails
    to import becomes a stand-in: its proxies, and for its other exercises placeholders that
    raise when called. So ``from .masking import masked_softmax`` in attention.py still
    works when masking.py is broken, and a mistake there costs only the exercises that call it.
    """

    def __init__(self, sources: dict, proxies: dict, own: str, call_grader):
        import importlib.util

        from autograder.spec import MODULE_OF

        self.sources, self.proxies, self.own, self.module_of = sources, proxies, own, MODULE_OF
        self.functions = {name: _proxy(name, call_grader) for name in proxies}
        self._util = importlib.util
        package = types.ModuleType(PACKAGE)
        package.__path__ = []  # a package with no directory: submodules come from find_spec
        package.__package__ = PACKAGE
        package.__file__ = f"<submission>/{PACKAGE}/__init__.py"
        sys.modules[PACKAGE] = package
        self.package = package

    def find_spec(self, fullname):
        name = fullname[len(PACKAGE) + 1 :]
        if name in self.sources or (name != self.own and name in self.module_of.values()):
            return self._util.spec_from_loader(fullname, _SourceLoader(self, name), origin=f"{name}.py")
        raise ModuleNotFoundError(f"No module named {fullname!r}: {name}.py is not in the submission",
                                  name=fullname)

    def run_module(self, module, name):
        # Siblings first, so their proxies are in place when this module imports them by name.
        for other in sorted(set(self.proxies.values()) - {name}):
            __import__(f"{PACKAGE}.{other}")
        source = self.sources.get(name)
        try:
            if source is None:
                raise ModuleNotFoundError(f"{name}.py is not in the submission")
            exec(compile(source, f"{PACKAGE}/{name}.py", "exec", dont_inherit=True), module.__dict__)
        except BaseException as err:  # noqa: BLE001  SystemExit at import too
            if name == self.own:
                raise
            self.stand_in(module, name, err)
        self.install_proxies()

    def stand_in(self, module, name, err):
        why = f"{name}.py could not be imported ({_describe(err)})"
        for exercise, home in self.module_of.items():
            if home == name:
                module.__dict__[exercise] = self.functions.get(exercise) or _placeholder(exercise, why)

    def install_proxies(self):
        """Each proxy on its home module (defined there or not) and wherever it was imported."""
        for full, module in list(sys.modules.items()):
            if full.startswith(PACKAGE + ".") and module is not None:
                for f, proxy in self.functions.items():
                    if f in module.__dict__ or self.proxies[f] == full[len(PACKAGE) + 1 :]:
                        module.__dict__[f] = proxy


class _SourceLoader:
    def __init__(self, submission: _Submission, name: str):
        self.submission, self.name = submission, name

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = f"<submission>/{PACKAGE}/{self.name}.py"
        self.submission.run_module(module, self.name)


def _placeholder(name: str, why: str):
    def placeholder(*args, **kwargs):
        raise ImportError(f"{name} is unavailable: {why}")

    placeholder.__name__ = placeholder.__qualname__ = name
    return placeholder


def _proxy(name: str, call_grader):
    """A stand-in for the exercise ``name``: its arguments go to the grader as plain data and
    the reference's result comes back (tensors as new tensors: no autograd graph crosses)."""

    def proxy(*args, **kwargs):
        return call_grader(name, list(args), kwargs)

    proxy.__name__ = proxy.__qualname__ = name
    proxy.__doc__ = f"The reference {name}, computed by the grader (your {name} is graded on its own)."
    return proxy


class _Namespace:
    """What a driver sees: ``ns.module("attention")`` is the learner's module."""

    def __init__(self, submission: _Submission):
        self.submission = submission

    def module(self, name: str):
        import importlib

        module = importlib.import_module(f"{PACKAGE}.{name}")
        self.submission.install_proxies()
        return module


# -------------------------------------------------------------------------- the case loop

class _Failure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


def _run(sock, job, drivers, protocol) -> None:
    def call_grader(name, args, kwargs):
        protocol.send(sock, {"call": name, "args": args, "kwargs": kwargs})
        reply = protocol.recv(sock, torch_tensors=True)
        if "error" in reply:
            raise RuntimeError(f"the reference {name} raised {reply['error']}")
        return reply["result"]

    blocker = next(f for f in sys.meta_path if isinstance(f, _Blocker))
    submission = _Submission(job["sources"], job["proxies"], job["module"], call_grader)
    blocker.package = submission
    ns = _Namespace(submission)
    setup_error = _prepare(ns, job, drivers)
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
    protocol.send(sock, {"done": True})


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
        return _Failure("import", f"{module}.py: {_describe(err)}")
    if exercise not in mod.__dict__:
        return _Failure("missing", f"{module}.py defines no `{exercise}`")
    return None


def _classify(err: BaseException) -> tuple[str, str]:
    if _isinstance(err, NotImplementedError):
        return "not_implemented", ""
    if _isinstance(err, MemoryError):
        return "memory", "MemoryError"
    if _isinstance(err, (SystemExit, KeyboardInterrupt)):
        return "exception", f"{_type(err).__name__} (exiting is not a result)"
    return "exception", _describe(err)


def _describe(err: BaseException) -> str:
    """``ValueError: message (attention.py, line 12)``: the learner's own frame if any."""
    try:
        text = f"{_type(err).__name__}: {err}"[:500]
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename.startswith(PACKAGE)]
        if _isinstance(err, SyntaxError) and err.filename and err.filename.startswith(PACKAGE):
            return f"{text}"
        if frames:
            f = frames[-1]
            text += f" ({f.filename.split('/')[-1]}, line {f.lineno})"
        return text
    except BaseException:  # noqa: BLE001  a hostile __str__
        return "an exception"


if __name__ == "__main__":
    main()
