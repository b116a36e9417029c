"""Whether a child may run another exercise: the process state learner code could change."""
from __future__ import annotations

import _signal
import gc
import os
import resource
import signal
import sys
import warnings

_isinstance, _str, _list, _len = isinstance, str, list, len  # learner code may patch builtins


class Pristine:
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
               "autograder.isolation.drivers.pruning", "autograder.isolation.protocol", "autograder.spec",
               "autograder.isolation.frames", "autograder.isolation.worker", "autograder.isolation.zygote",
               "autograder.isolation.child", "autograder.isolation.cases", "autograder.isolation.package",
               "autograder.isolation.confine", "autograder.isolation.seccomp", __name__)
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
        import numpy
        import torch

        skip = {signal.SIGKILL, signal.SIGSTOP}
        timers = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
        limits = (resource.RLIMIT_FSIZE, resource.RLIMIT_CORE, resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC,
                  resource.RLIMIT_STACK)
        return (
            tuple(id(sys.modules.get(name)) for name in Pristine.MODULES),
            tuple(sys.meta_path), tuple(sys.path), tuple(sys.path_hooks), sys.stdin, sys.stdout, sys.stderr,
            sys.displayhook, sys.excepthook, sys.gettrace(), sys.getprofile(), sys.getrecursionlimit(),
            sys.getswitchinterval(), tuple(warnings.filters), gc.isenabled(), gc.get_threshold(),
            tuple(_signal.getsignal(s) for s in _signal.valid_signals() if s not in skip),  # ints, no enums
            tuple(signal.getitimer(t) != (0.0, 0.0) for t in timers),
            len(os.listdir("/proc/self/task")), tuple(children()),
            tuple(sorted(os.listdir("/proc/self/fd"))),
            dict(os.environ), tuple(resource.getrlimit(r) for r in limits),
            torch.get_default_dtype(), torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            torch.are_deterministic_algorithms_enabled(), torch.get_num_threads(), torch.is_anomaly_enabled(),
            torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack(),
            tuple(sorted(numpy.geterr().items())), numpy.getbufsize(),
        )



def children() -> list[int]:
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

