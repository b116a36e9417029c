"""The learner's side: a zygote process that forks confined children to run exercises.

``python -m autograder.isolation.worker CONTROL_FD DRIVERS`` starts the zygote. It imports NumPy,
torch and the drivers once (the slow part, done while the grader imports its own modules in
parallel) and then waits. The grader sends it a socket (SCM_RIGHTS); the zygote forks a
child that owns that socket, and the grader talks to the child directly, one exercise at a
time (the next job is sent only once the child has answered "done" for the last one):

    grader -> child   the job: module sources, proxied names, the cases (driver, inputs)
    child  -> grader  {"case": i, "ok": output} or {"case": i, "error": [kind, message]}
    child  -> grader  {"call": name, ...}: a proxied exercise, answered by the reference
    child  -> grader  {"done": true, "reusable": bool}

The child confines itself before running any learner code (own process group, memory, CPU
and file-size limits, stdout/stderr to /dev/null, a scratch working directory, no
``solutions`` and no judge on the import path), then for each job loads the submission as a
fresh synthetic package ``mha_exercises``, with that exercise's limits, and runs the cases.
A fork costs ~20 ms of CPU (torch's pages), more than most exercises, so one child serves
a submission's exercises for as long as it stays *pristine*: after each exercise it compares
the process-wide state the learner's code could have changed (patched modules and classes,
threads, timers, signal handlers, child processes, ...) with a snapshot taken before any
learner code ran, and says ``"reusable": false`` (then exits) when anything differs. Whatever
happens in it (an exit, a crash, a hang that the grader kills) costs only the exercise it
was running: the grader forks a fresh child for the rest. This module imports nothing of the
grader's beyond the drivers, the protocol and the spec.
"""
from __future__ import annotations

import ctypes
import gc
import linecache
import os
import resource
import signal
import socket
import struct
import sys
import tempfile
import traceback
import types

from autograder import LEARNER_SIDE, within

PACKAGE = "mha_exercises"
_isinstance, _type, _str, _list, _len = isinstance, type, str, list, len  # learner code may patch builtins


# ------------------------------------------------------------------------------ the zygote

def main(argv=None) -> None:
    """``python -m autograder.isolation.worker CONTROL_FD [DRIVERS]``: a zygote in a fresh interpreter."""
    argv = sys.argv[1:] if argv is None else argv
    control = socket.socket(fileno=int(argv[0]))
    serve(control, preload(argv[1] if len(argv) > 1 else "autograder.isolation.drivers"))


def preload(drivers_name: str = "autograder.isolation.drivers"):
    """What every child needs, imported once: NumPy, torch (one thread), the drivers.

    Returns the drivers module, or the exception that stopped its import (every case then
    fails as a crash with that message, and the grader's report says so).
    """
    os.environ["OMP_NUM_THREADS"] = "1"
    import importlib

    import numpy  # noqa: F401
    import torch

    torch.set_num_threads(1)
    from autograder.isolation import protocol

    protocol.capture_torch()
    try:
        return importlib.import_module(drivers_name)
    except Exception as err:
        return err


def serve(control: socket.socket, drivers) -> None:
    """The zygote's loop: fork a child per "F", reap and report per "W", until EOF."""
    _become_subreaper()
    # Taken here, where no learner code ever runs, and inherited by every child: copying
    # thousands of attributes is then paid once, not per child.
    namespaces = _Pristine.namespaces()
    # Nothing of the zygote's is ever collected: no object inherited from a grader it was
    # forked from closes a descriptor number reused since, and the children's collections
    # do not walk (and copy) the inherited pages.
    gc.freeze()
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
                _child(socket.socket(fileno=fds[0]), drivers, namespaces)  # never returns
            os.close(fds[0])
            try:
                os.setpgid(pid, pid)  # also done in the child: whichever runs first
            except OSError:
                pass
            active.add(pid)
            control.sendall(struct.pack("<q", pid))
        elif msg[:1] == b"K":  # between two exercises of a reused child: kill leftovers
            _kill_orphans(active)
            control.sendall(b"k")
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

def _child(sock: socket.socket, drivers, namespaces: list) -> None:
    """Run exercises, one job at a time, until the grader closes the socket or the learner's
    code has left the process changed; never returns (os._exit), whatever that code does."""
    from autograder.isolation import protocol

    code = 0
    try:
        os.setpgid(0, 0)
        job = protocol.recv(sock)
        _confine(job)
        pristine = _Pristine(namespaces)
        while True:
            _begin_exercise(job)
            if not _run(sock, job, drivers, protocol, pristine):
                break
            try:
                job = protocol.recv(sock)
            except protocol.Closed:
                break
    except BaseException:  # noqa: BLE001  the grader sees the missing results as a crash
        code = 70
    finally:
        os._exit(code)


def _confine(job: dict) -> None:
    """Limits, silence and a scratch directory before the learner's code exists in here."""
    os.chdir(job["workdir"])
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # anything the learner prints goes nowhere: results use the socket
        os.dup2(devnull, fd)
    os.close(devnull)
    _limit(resource.RLIMIT_FSIZE, 64 * 2**20)
    _limit(resource.RLIMIT_CORE, 0)
    # The import path: no repository root, no current directory, and a blocker in front of
    # every finder (the editable install's finder would otherwise find `solutions`).
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.abspath(p) != root]
    for name in list(sys.modules):
        if _blocked(name) or name == PACKAGE or name.startswith(PACKAGE + "."):
            del sys.modules[name]
    sys.meta_path.insert(0, _Blocker())
    _drop_privileges(job["workdir"])


def _begin_exercise(job: dict) -> None:
    """Each exercise its own scratch directory, memory and CPU limits, and a package
    ``mha_exercises`` that has not run yet (its modules run again, with this job's proxies)."""
    here = os.path.join(job["workdir"], _str(job["exercise"]).replace("/", "_"))
    os.makedirs(here, exist_ok=True)
    os.chdir(here)
    tempfile.tempdir = here
    _limit(resource.RLIMIT_AS, _address_space() + job["memory_mb"] * 2**20)
    usage = resource.getrusage(resource.RUSAGE_SELF)  # the CPU limit counts the whole process
    _limit(resource.RLIMIT_CPU, int(usage.ru_utime + usage.ru_stime + job["cpu_seconds"]) + 1)
    for name in list(sys.modules):
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            del sys.modules[name]


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
    """Modules a learner's process must never import: the references, and all of the grader's
    but the learner-side harness (``autograder.LEARNER_SIDE``)."""
    if within(name, ("solutions",)):
        return True
    return name.startswith("autograder.") and not within(name, LEARNER_SIDE)


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


# ----------------------------------------------------- the state one exercise may leave behind

class _Pristine:
    """What the learner's code could change in this process for the *next* exercise, as it
    was before any learner code ran; :meth:`holds` says whether it is still so.

    Compared by identity: the attributes of the modules that drivers and learners use (and
    of the classes defined there: ``torch.Tensor.__eq__`` is as patchable as ``np.allclose``),
    and by value: import machinery, interpreter hooks, signal handlers and timers, threads,
    child processes, open descriptors, environment, limits, torch and NumPy global modes.
    Attributes added since (a lazily imported submodule) are not a change. Anything this
    misses can affect only the same learner's later exercises: every output is still
    compared with the reference in the grader.
    """

    # Not ``warnings`` (its filter version counts every catch_warnings) nor ``tempfile`` (whose
    # tempdir each exercise sets): their state that matters is in process_state.
    MODULES = ("builtins", "sys", "os", "gc", "signal", "resource", "math", "copy", "types", "importlib",
               "numpy", "numpy.linalg", "numpy.random", "numpy.testing", "torch", "torch.nn",
               "torch.nn.functional", "torch.nn.init", "torch.linalg", "torch.autograd", "torch.overrides",
               "autograder.isolation.drivers", "autograder.isolation.drivers.core", "autograder.isolation.drivers.layer",
               "autograder.isolation.drivers.pruning", "autograder.isolation.protocol", "autograder.spec", __name__)
    PACKAGES = ("numpy", "torch", "autograder", "__main__")

    def __init__(self, namespaces: list):
        """``namespaces``: from :meth:`namespaces`, taken before any learner code ran."""
        self.spaces = namespaces
        self.state = self.process_state()

    @classmethod
    def namespaces(cls) -> list:
        """``(namespace, its values, their ids)`` of each module watched and of its classes."""
        spaces, seen = [], set()
        for name in cls.MODULES:
            module = sys.modules.get(name)
            if module is None:
                continue
            spaces.append(module.__dict__)
            for value in list(module.__dict__.values()):
                if (_isinstance(value, type) and id(value) not in seen and value.__flags__ & (1 << 9)
                        and _str(getattr(value, "__module__", "")).split(".")[0] in cls.PACKAGES):
                    seen.add(id(value))  # a class of ours, NumPy's or torch's written in Python
                    spaces.append(value.__dict__)
        # The values are kept (not only their ids): an id is unique only while its object lives.
        return [(space, values, [id(v) for v in values])
                for space in spaces for values in [list(space.values())]]

    def holds(self) -> bool:
        try:
            for space, _, ids in self.spaces:
                # Values in insertion order, compared by identity at C speed: a replaced value
                # differs in place, a deleted key shifts the rest, an added one comes after.
                if _list(map(id, space.values()))[: _len(ids)] != ids:
                    return False
            return self.process_state() == self.state
        except BaseException:  # noqa: BLE001  a hostile __eq__ or a patched helper: not pristine
            return False

    @staticmethod
    def process_state() -> tuple:
        """The rest, compared by value (the modules above by identity)."""
        import _signal
        import warnings

        import numpy
        import torch

        skip = {signal.SIGKILL, signal.SIGSTOP}
        timers = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
        limits = (resource.RLIMIT_FSIZE, resource.RLIMIT_CORE, resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC,
                  resource.RLIMIT_STACK)
        return (
            tuple(id(sys.modules.get(name)) for name in _Pristine.MODULES),
            tuple(sys.meta_path), tuple(sys.path), tuple(sys.path_hooks), sys.stdin, sys.stdout, sys.stderr,
            sys.displayhook, sys.excepthook, sys.gettrace(), sys.getprofile(), sys.getrecursionlimit(),
            sys.getswitchinterval(), tuple(warnings.filters), gc.isenabled(), gc.get_threshold(),
            tuple(_signal.getsignal(s) for s in _signal.valid_signals() if s not in skip),  # ints, no enums
            tuple(signal.getitimer(t) != (0.0, 0.0) for t in timers),
            len(os.listdir("/proc/self/task")), tuple(_children()),
            tuple(sorted(os.listdir("/proc/self/fd"))),
            dict(os.environ), tuple(resource.getrlimit(r) for r in limits),
            torch.get_default_dtype(), torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            torch.are_deterministic_algorithms_enabled(), torch.get_num_threads(), torch.is_anomaly_enabled(),
            torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack(),
            tuple(sorted(numpy.geterr().items())), numpy.getbufsize(),
        )


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
        self.loaded: list[str] = []  # the package's modules, as named in sys.modules

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
            exec(_compiled(name, source), module.__dict__)
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
        for full in self.loaded:  # not all of sys.modules: this runs at every driver call
            module = sys.modules.get(full)
            if module is not None:
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
        self.submission.loaded.append(f"{PACKAGE}.{self.name}")
        self.submission.run_module(module, self.name)


def _compiled(name: str, source: str):
    """A module's code object, compiled once per child (each exercise runs it afresh)."""
    key = (name, source)
    if key not in _CODE:
        filename = f"{PACKAGE}/{name}.py"
        _CODE[key] = compile(source, filename, "exec", dont_inherit=True)
        # So that an exception's message can quote the learner's line (``_describe``).
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return _CODE[key]


_CODE: dict = {}


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


def _run(sock, job, drivers, protocol, pristine) -> bool:
    """One exercise's cases; whether this process may run the next exercise."""
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
    reusable = pristine.holds()
    protocol.send(sock, {"done": True, "reusable": reusable})
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
            code = (f.line or "").strip()[:120]  # the learner's own line, as its file reads
            text += f" ({f.filename.split('/')[-1]}, line {f.lineno}" + (f": {code})" if code else ")")
        elif err.__traceback__ is not None:  # no line of the learner's in it: the harness raised
            text += " (raised by the grader's harness around your code, not by a line of yours)"
        return text
    except BaseException:  # noqa: BLE001  a hostile __str__
        return "an exception"


if __name__ == "__main__":
    main()
